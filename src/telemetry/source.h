#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/fs.h"
#include "telemetry/layout.h"
#include "telemetry/timeline.h"

namespace edgeprobe::telemetry {

// Called with "<what>: unavailable: <why>" the first time something cannot be read.
using ReportFn = std::function<void(const std::string&)>;

// One family of readings (cpufreq, thermal, power, /proc/stat, the process, cgroup).
// declare() runs once; sample() runs on every tick on the sampler thread and must not
// allocate in the steady state: files are opened once and read with pread.
class Source {
 public:
  virtual ~Source() = default;
  virtual const char* family() const = 0;
  // Appends this source's series; their order is the order of values in sample().
  virtual void declare(std::vector<SeriesInfo>* series) = 0;
  // Writes one value per declared series (NaN when a read fails).
  virtual void sample(double* row, const ReportFn& report) = 0;
  // Highest useful rate; the sampler reads this source on every k-th tick to stay under
  // it (NaN in the ticks between) and on every forced sample. 0 = every tick.
  virtual double max_hz() const { return 0; }
  // Slower readings taken a few times a second (cpufreq time_in_state tables).
  virtual void sample_slow(int64_t /*t_ns*/, Timeline* /*timeline*/, const ReportFn& /*report*/) {}
  // Per-thread placement (the process source).
  virtual void sample_threads(int64_t /*t_ns*/, Timeline* /*timeline*/) {}
};

std::unique_ptr<Source> make_cpufreq_source(const FsRoot& fs, const CpuLayout& cpus);
// scaling_max_freq of each cluster, read at most 5 Hz.
std::unique_ptr<Source> make_cpufreq_cap_source(const FsRoot& fs, const CpuLayout& cpus);
std::unique_ptr<Source> make_thermal_source(const FsRoot& fs, const std::vector<ThermalZone>& zones,
                                            const std::vector<Battery>& batteries);
// GPU clock and busy share at most 10 Hz; its cap and temperature at most 5 Hz.
std::unique_ptr<Source> make_gpu_source(const FsRoot& fs, const GpuLayout& gpus);
std::unique_ptr<Source> make_gpu_slow_source(const FsRoot& fs, const GpuLayout& gpus);
std::unique_ptr<Source> make_power_source(const FsRoot& fs, const PowerLayout& power);
std::unique_ptr<Source> make_procstat_source(const FsRoot& fs, const std::vector<int>& cpus);
// live_self: the sampler measures its own process on the real root, so getrusage() can
// count context switches of every thread (procfs status only counts the main thread's).
// exclude_tid: a thread left out of the placement figures (the sampler's own thread).
std::unique_ptr<Source> make_process_source(const FsRoot& fs, int pid, const CpuLayout& cpus, bool live_self,
                                            const std::atomic<int>* exclude_tid = nullptr);
std::unique_ptr<Source> make_cgroup_source(const FsRoot& fs, const CgroupInfo& cgroup);

// Parses one /proc/<pid>/task/<tid>/stat line (proc(5)): utime+stime in clock ticks and
// field 39, the CPU the thread last ran on. The comm field may hold spaces and ')'.
struct TaskStat {
  long long utime_ticks = 0, stime_ticks = 0, num_threads = 0;
  int processor = -1;
};
bool parse_task_stat(std::string_view line, TaskStat* out);

}  // namespace edgeprobe::telemetry
