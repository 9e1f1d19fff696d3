#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace edgeprobe::telemetry {

// What a series measures; the phase summary picks series by metric, the trace names
// tracks by series name. Units are fixed per metric (the suffix of every series name).
enum class Metric {
  kFreqKhz,            // level: a cpufreq policy's scaling_cur_freq; group = cluster
  kFreqCapKhz,         // level: scaling_max_freq of a cluster's first policy (thermal/policy cap)
  kTempC,              // level: thermal zone or battery temperature in degrees C; group = zone
  kPowerW,             // level: instantaneous power (battery V*I, INA3221 rail V*I); group = source
  kDischargeCurrentUa, // level: battery current, positive while discharging
  kVoltageUv,          // level: battery voltage
  kChargeCounterUah,   // level: battery charge_counter (falls while discharging)
  kEnergyJ,            // counter: accumulated energy (RAPL, wrap-around removed); group = source
  kCpuBusyS,           // counter: one CPU's non-idle time from /proc/stat; index = cpu
  kCpuTotalS,          // counter: one CPU's total time from /proc/stat; index = cpu
  kSelfCpuS,           // counter: the measured process's user+system time
  kSelfClusterCpuS,    // counter: its threads' CPU time, by the cluster of their last CPU
  kThreads,            // level: number of threads of the measured process
  kRssKb,              // level: VmRSS
  kPeakRssKb,          // level: VmHWM
  kVoluntaryCtxSwitches,    // counter
  kInvoluntaryCtxSwitches,  // counter
  kThrottledS,         // counter: cgroup throttled time
  kThrottledPeriods,   // counter: cgroup nr_throttled
  kPeriods,            // counter: cgroup nr_periods
  kGpuFreqHz,          // level: a GPU's current clock; group = GPU name, index = Timeline::gpus
  kGpuCapHz,           // level: the highest clock the GPU may take now (thermal/QoS cap)
  kGpuBusyShare,       // level: 0..1, how busy the GPU was over its driver's last window
  kGpuTempC,           // level: the GPU's own temperature in degrees C
};

const char* metric_unit(Metric metric);
bool metric_is_counter(Metric metric);

struct SeriesInfo {
  std::string name;   // "cpufreq.policy4.freq_khz": unique, unit last
  Metric metric = Metric::kFreqKhz;
  std::string group;  // cluster name, zone label, power source ("battery", "rapl:package-0", "VDD_IN")
  int index = -1;     // cpu number for per-CPU series, cluster index for cluster series
  double reference = std::numeric_limits<double>::quiet_NaN();  // e.g. cpuinfo_max_freq for freq
  bool in_total = false;  // power/energy that makes up the device total (no double counting)
};

struct ClusterSummaryInfo {
  std::string name, role;
  std::vector<int> cpus;
  std::optional<int64_t> max_khz;
};

struct GpuSummaryInfo {
  std::string name, kind, model, governor;
  std::optional<int64_t> max_hz;       // the top clock: what shares are of
  std::string rail, rail_shared_with;  // the INA3221 rail feeding it, "" unknown
};

// One cpufreq stats/time_in_state reading (Documentation/cpu-freq/cpufreq-stats.rst:
// "<freq kHz> <time in 10 ms units>"), taken at a lower rate than the other series.
struct TimeInStateSnapshot {
  int64_t t_ns = 0;
  size_t cluster = 0;
  std::string policy;
  std::vector<std::pair<int64_t, int64_t>> khz_ticks;  // (freq kHz, cumulative 10 ms units)
};

// Where one thread of the measured process last ran (proc(5) stat field 39) and how
// much CPU time it has used.
struct ThreadSample {
  int64_t t_ns = 0;
  int tid = 0;
  int cpu = -1;
  double cpu_s = 0;
};

// All samples of a run, column-wise: values[s][i] is series s at time t_ns[i] (run clock),
// NaN where that read failed.
struct Timeline {
  std::vector<SeriesInfo> series;
  std::vector<int64_t> t_ns;
  std::vector<std::vector<double>> values;
  std::vector<ClusterSummaryInfo> clusters;
  std::vector<GpuSummaryInfo> gpus;
  std::vector<TimeInStateSnapshot> time_in_state;
  std::vector<ThreadSample> threads;
  double sample_hz = 0;

  size_t size() const { return t_ns.size(); }
  // Series indexes with this metric (in declaration order).
  std::vector<size_t> find(Metric metric) const;
  std::optional<size_t> find(const std::string& name) const;
  // A series' value at time t, linearly interpolated between the nearest valid samples
  // on either side (NaN entries are skipped); nullopt outside the sampled span.
  std::optional<double> counter_at(size_t series_index, int64_t t_ns) const;
  // Counter increase over [start, end]; nullopt unless samples bracket both ends.
  std::optional<double> counter_delta(size_t series_index, int64_t start_ns, int64_t end_ns) const;
  // Integral of a level series over [start, end] (trapezoids, value units x seconds);
  // nullopt unless samples bracket both ends.
  std::optional<double> integrate(size_t series_index, int64_t start_ns, int64_t end_ns) const;
  // The samples of [start, end] plus the nearest valid one outside each edge for every
  // series (so counters stay bracketed), with the matching time_in_state snapshots and
  // thread samples: what summarize_phase needs, without copying a whole long run.
  Timeline slice(int64_t start_ns, int64_t end_ns) const;
  // Indexes of samples with start <= t <= end.
  std::pair<size_t, size_t> window(int64_t start_ns, int64_t end_ns) const;
};

}  // namespace edgeprobe::telemetry
