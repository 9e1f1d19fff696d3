#pragma once
#include <cstdint>
#include <string>

namespace edgeprobe::runner {

// Resets this process's peak RSS (VmHWM) to its current RSS, so each repetition's peak
// is its own (Linux >= 4.0: "5" > /proc/self/clear_refs, see proc(5)). False when denied.
bool reset_peak_rss();
// VmHWM in bytes, or -1 when /proc is unavailable.
int64_t peak_rss_bytes();
int64_t current_rss_bytes();

}  // namespace edgeprobe::runner
