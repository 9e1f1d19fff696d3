#pragma once
// Private to the telemetry sources: what every source family shares. The families live
// one per file: sources_cpufreq.cpp (clock, cap, thermal), sources_power.cpp (battery,
// RAPL, rails), sources_cpu_time.cpp (/proc/stat, cgroup cpu.stat) and
// sources_process.cpp (the measured process and where its threads ran). Every file is
// opened once (CachedFile) under the root prefix and re-read with pread; raw values are
// normalised to the units in the series names.
#include <unistd.h>

#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "telemetry/file_reader.h"
#include "telemetry/source.h"

namespace edgeprobe::telemetry::sources {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// USER_HZ: /proc/stat and task stat count in these ticks (proc(5)); 100 on every Linux ABI.
inline double ticks_per_s() {
  static const double hz = [] {
    const long value = ::sysconf(_SC_CLK_TCK);
    return value > 0 ? static_cast<double>(value) : 100.0;
  }();
  return hz;
}

// Reports a failed read once per series, not on every tick.
struct OnceFlags {
  std::vector<bool> reported;
  // what is a string_view so that the steady state (nothing to report) allocates nothing.
  void report_once(size_t i, std::string_view what, const CachedFile& file, const ReportFn& report) {
    if (i >= reported.size()) reported.resize(i + 1, false);
    if (reported[i]) return;
    reported[i] = true;
    report(std::string(what) + ": unavailable: " + file.path() + " " + file.error());
  }
};

inline double read_or_nan(CachedFile& file, size_t i, std::string_view what, OnceFlags& once, const ReportFn& report) {
  long long value = 0;
  if (file.read_int(&value)) return static_cast<double>(value);
  once.report_once(i, what, file, report);
  return kNaN;
}

}  // namespace edgeprobe::telemetry::sources
