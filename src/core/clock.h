#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace edgeprobe {

// The one clock of a run: token events and telemetry samples are both stamped with it,
// so they can be put on the same timeline. steady_clock is CLOCK_MONOTONIC on Linux.
int64_t monotonic_ns();

// Wall-clock now in UTC, "2026-12-05T06:30:00Z" (RFC 3339): when a result or a figure
// was measured.
std::string utc_now_rfc3339();

// Milliseconds between two stamps of that clock (ns) or two steady_clock instants, and
// since a steady_clock instant.
inline double ms_between(int64_t start_ns, int64_t end_ns) { return static_cast<double>(end_ns - start_ns) / 1e6; }
inline double ms_between(std::chrono::steady_clock::time_point start, std::chrono::steady_clock::time_point end) {
  return std::chrono::duration<double, std::milli>(end - start).count();
}
inline double ms_since(std::chrono::steady_clock::time_point start) { return ms_between(start, std::chrono::steady_clock::now()); }

// Stamps relative to the start of a run, so results do not depend on boot time.
class RunClock {
 public:
  RunClock() : origin_ns_(monotonic_ns()) {}
  explicit RunClock(int64_t origin_ns) : origin_ns_(origin_ns) {}
  int64_t origin_ns() const { return origin_ns_; }
  int64_t now_ns() const { return monotonic_ns() - origin_ns_; }
  int64_t to_run_ns(int64_t monotonic) const { return monotonic - origin_ns_; }

 private:
  int64_t origin_ns_;
};

}  // namespace edgeprobe
