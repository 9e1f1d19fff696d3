#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/fs.h"
#include "core/json_read.h"
#include "doctor/config.h"
#include "result/doctor.h"
#include "result/result.h"
#include "telemetry/layout.h"

namespace edgeprobe::doctor {

// What happened on the whole machine while one child bench ran, read by doctor itself
// from the live /proc (never a fixture: processes are real) around the child.
struct ProcessUse {
  int pid = 0;
  std::string name;
  double cpus = 0;  // CPUs it kept busy on average over the window (1 = one full CPU)
};
struct RunWindow {
  double wall_s = 0;
  double child_cpu_s = 0;  // the bench child's user + system time
  std::optional<double> other_cpu_share;  // other processes' share of all CPUs' time
  std::optional<double> steal_share;      // time the hypervisor gave to other guests
  // /proc/pressure/cpu "some": the share of the window in which a runnable task waited for
  // a CPU (run-queue wait, the run's own threads included).
  std::optional<double> cpu_pressure_share;
  std::vector<ProcessUse> top_others;     // busiest other processes, busiest first
  std::optional<double> throttled_ms;     // cgroup cpu.stat throttled time over the window
  std::optional<double> nr_throttled;
};

// Snapshots the live /proc before a child runs and works out the RunWindow after it.
class ProcessWatch {
 public:
  ProcessWatch();  // takes the "before" snapshot
  // `cpus`: the CPUs the child could use; other processes count only there (a process
  // on a CPU the run may not use takes nothing from it). Empty = all.
  RunWindow finish(double wall_s, double child_cpu_s, const std::vector<int>& cpus = {}) const;

 private:
  struct Snapshot {
    // /proc/stat "cpuN" lines: user nice system idle iowait irq softirq steal
    std::map<int, std::vector<int64_t>> cpu;
    std::map<int, std::pair<std::string, int64_t>> processes;  // pid -> (comm, utime + stime ticks)
    std::optional<int64_t> throttled_us, nr_throttled;
    std::optional<int64_t> pressure_us;  // /proc/pressure/cpu some total
  };
  static Snapshot take();
  Snapshot before_;
};

// One `edgeprobe bench` child: what it ran and its result.
struct BenchRun {
  std::string label;              // "as configured", "best CPU variant", "-t 1,2"
  RunConfig config;
  std::string command;            // the whole command with its plan piped in, reproducible
  std::optional<result::BenchReport> report;  // the child's bench result; none when it failed
  std::string error;              // why it failed (one line), "" when fine
  int exit_code = 0;              // the child's: 2 = bad input, as everywhere in edgeprobe
  RunWindow window;
  std::vector<double> reference_ms;  // the reference kernel timed while it ran (measure.h)
  bool ok() const { return error.empty() && report.has_value(); }
};

// The device as doctor sees it: topology and limits under --sysfs-root, affinity live.
struct DeviceFacts {
  telemetry::CpuLayout cpus;
  telemetry::CgroupInfo cgroup;
  std::vector<int> affinity;  // sched_getaffinity of this process (children inherit it)
  int physical_cores = 0;     // among the allowed CPUs
  std::vector<telemetry::Gpu> gpus;  // GPUs in sysfs (kgsl, Mali, Jetson devfreq), backend or not
};
DeviceFacts collect_device_facts(const FsRoot& fs);

// CPUs a run with this config may use: affinity, the cgroup cpuset and the -C mask.
std::vector<int> usable_cpus(const DeviceFacts& device, const RunConfig& config);

// Reports can come from files (--baseline): read them with the lenient readers every
// module shares.
using json_read::field;
using json_read::num;
using json_read::text;

// Reading a bench result.
namespace report_view {
// The result of a test ("pp128", "tg32") that ran, at a thread count (0 = any); null when
// absent or when there is no report.
const result::TestResult* find_result(const std::optional<result::BenchReport>& report, const std::string& test,
                                      int threads = 0);
// Median prefill or decode tokens/s of a result; none when that phase was not measured.
enum class Phase { kPrefill, kDecode };
std::optional<double> median(const result::TestResult* result, Phase phase);
// The result's repetitions' telemetry of one phase ("prefill", "decode"), for those that
// recorded it (objects).
std::vector<const nlohmann::json*> phase_telemetry(const result::TestResult& result, const char* phase);
}  // namespace report_view

struct DoctorOptions;

// Median prefill and decode rates of one configuration in a report. Every measured
// alternative is compared on the seconds of doctor's reference turn (the prompt, then
// the generation), since a change can help one phase and cost the other.
using result::Rates;  // median prefill and decode tokens/s (result/doctor.h)
// The pp/tg results whose config has `key` == `value` ("n_threads": 2); any when key is "".
Rates rates(const std::optional<result::BenchReport>& report, int n_prompt, int n_gen, const std::string& key = "",
            const nlohmann::json& value = nullptr);
std::optional<double> turn_s(const Rates& rates, int n_prompt, int n_gen);
using result::rates_text;

// What llama.cpp says it allocated, from its log lines "<buffer type> <kind> buffer size =
// N MiB" (kind: model, KV, compute, output), in bytes by "<buffer type> <kind>". A run
// loads the model and creates contexts more than once; one of each is alive at a time, so
// each key keeps its largest figure.
struct DeclaredMemory {
  std::map<std::string, double> bytes;  // "CPU_Mapped model", "CPU_REPACK model", "CPU KV", ...
  double total() const;
  // Model buffers that are copies (not a mapping of the file): repacked or loaded weights.
  double model_copies() const;
  std::string text() const;  // "CPU_Mapped model 607.0 MiB, CPU KV 22.0 MiB, ..."
};
DeclaredMemory declared_memory(const nlohmann::json& llama_log);

}  // namespace edgeprobe::doctor
