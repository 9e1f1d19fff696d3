#pragma once
#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "doctor/config.h"
#include "doctor/evidence.h"
#include "doctor/finding.h"
#include "doctor/measure.h"
#include "model/gguf_info.h"

namespace edgeprobe::doctor {

struct DoctorOptions;
struct ChildTests;

// What one bench child gave back.
struct ChildOutput {
  std::string command;            // one a person can paste to rerun it (its plan piped in)
  std::optional<result::BenchReport> report;  // the child's bench result; none when it sent none
  int exit_code = -1;             // -1: it did not start
  bool timed_out = false;
  std::string error;              // one line: why it failed; "" when it worked
  double wall_s = 0, cpu_s = 0;   // the child's wall time and its own CPU time
};
// Starts one bench child for `config` and `tests` and waits for it. app/ provides it
// (app::run_bench_child: `edgeprobe run --plan -`, read back through the wire format):
// the plan types live in app/, which depends on doctor/, so doctor only names the call.
using BenchChildFn = std::function<ChildOutput(const DoctorOptions&, const RunConfig&, const ChildTests&)>;

// What to diagnose and how long to spend on it: the settings a doctor plan carries
// (app::DoctorPlan is these plus the model spec), so the plan and the options are one
// struct, not two copied field by field. The tests are short on purpose: doctor looks
// for factors of 1.2 to 100, not for 1 %.
struct DoctorSettings {
  RunConfig config;           // the configuration under diagnosis; threads resolved (0 in a plan: the device's default)
  int n_prompt = 128, n_gen = 32, repetitions = 3;
  std::string sysfs_root = "/";
  double sample_hz = 20;
  // Wall-time target of the whole run in seconds; comparisons stop (inconclusive) once it
  // is spent. 0 = twice llama-bench's default run (-p 512 -n 128 -r 5 and its warm-up)
  // as estimated from the first child's rates, and at least kMinAutoBudget.
  double budget_s = 0;
  bool experiments = true;    // run the fixed configurations to measure the gains
  // A bench or doctor -o json result from another run or device: `baseline` itself (a
  // stored run, a plan's copy) wins when set; else `baseline_name` is read as a file.
  std::string baseline_name;  // where it came from ("a.json", "run 12")
  nlohmann::json baseline;
  // A draft model (bench --draft; "" = none): the configuration as given runs its pairs of
  // plain and speculative decoding, so that a draft costing more than it saves is named
  // (speculative.draft_costs_more). The fixes' children run without it.
  std::string draft;
  int draft_max = 8;
};

// The settings, and how this process runs them.
struct DoctorOptions : DoctorSettings {
  std::string model_path;     // resolved (synth: specs are written before doctor starts)
  double child_timeout_s = 1800;
  std::string edgeprobe_exe;  // the binary whose `run --plan -` measures; "" = this one
  std::vector<std::pair<std::string, std::string>> child_env;
  StopRule stop_rule;
  BenchChildFn bench_child;   // runs each child; app::doctor_options sets it
};
constexpr double kMinAutoBudget = 45;  // room for a few pairs of each comparison on a small model

// Everything doctor measured and read; the checks are pure functions of it.
struct Evidence {
  DoctorOptions options;
  model::GgufInfo model;
  DeviceFacts device;
  BenchRun primary;                       // the configuration as given
  std::optional<BenchRun> best_variant;   // when the loaded CPU variant is not the best
  std::optional<BenchRun> thread_sweep;   // other thread counts, one child
  std::optional<BenchRun> with_mmap;      // when the configuration turns mmap off
  // Interleaved pairs: the configuration (A) against the fix (B).
  std::optional<Comparison> variant_pairs, thread_pairs, mmap_pairs;
  // The GPU against the CPU: the configuration against -ngl 0 -nopo 1 when it offloaded,
  // against -ngl 99 when it ran on the CPU with a GPU device present.
  std::optional<Comparison> gpu_pairs;
  double reference_best_ms = 0;  // the reference kernel's fastest time during the diagnosis
  double speed_variation = 0;    // (max - min) / max of its speed over all the children
  double budget_s = 0;           // the budget the comparisons ran under
  std::optional<result::BenchReport> baseline;  // none without --baseline
};

struct Diagnosis {
  Evidence evidence;
  std::vector<Finding> findings;  // ordered by impact
  double wall_s = 0;
};

using ProgressFn = std::function<void(const std::string&)>;

// The tests one bench child runs.
struct ChildTests {
  int n_prompt = 0, n_gen = 0, repetitions = 1;
  bool warmup = true;
  // Configurations that differ in one setting, which one child (one model load) runs in
  // turn, as a bench sweep; empty: the child runs its `config` alone.
  std::vector<RunConfig> sweep;
  bool draft = false;  // with the settings' draft (the configuration as given only)
};
ChildTests default_tests(const DoctorOptions& options);

// Runs one bench child (options.bench_child) for `config` and returns its result, with
// the machine's activity around it. Never throws for a failed run: BenchRun::error says why.
// With `probe`, the run keeps the reference kernel's samples taken while it ran.
BenchRun run_bench_child(const DoctorOptions& options, const std::string& label, const RunConfig& config,
                         const ChildTests& tests, const SpeedProbe* probe = nullptr);

// One comparison: which two configurations, the tests each child runs and the metric
// (smaller is better) read from its result.
struct ComparisonSpec {
  std::string what, a_label, b_label;
  RunConfig a, b;
  ChildTests tests;
  std::string metric_name = "seconds per reference turn";
  std::function<std::optional<double>(const BenchRun&)> metric;
  std::vector<std::string> after;  // the fixes both configurations already carry ("cpu variant")
};
// Runs pairs in ABBA order until the verdict is clear, `rule.max_pairs` ran, a child
// failed, or another pair would end after `deadline`.
Comparison compare_pairs(const DoctorOptions& options, const SpeedProbe& probe, const ComparisonSpec& spec,
                         SteadyTime deadline, const StopRule& rule, const ProgressFn& progress);

// Measures the configuration, then the fixes worth measuring, then diagnoses.
// Throws Error(kBadInput) for a bad model or baseline file, Error(kEnvironment) when the
// configuration cannot run at all.
Diagnosis run_doctor(const DoctorOptions& options, const ProgressFn& progress = {});

// Why the timings are an emulator's, not a device's (platform::emulation_sign as the bench
// child recorded it in provenance.cpu_features.emulated); "" on real hardware.
std::string emulated_run(const Evidence& evidence);

// The checks, in the seed's order: software first, then hardware.
std::vector<Finding> diagnose(const Evidence& evidence);

// A baseline file: a bench -o json report or a doctor -o json result (its primary run).
nlohmann::json load_baseline(const std::string& path);
// The same checks on a result already read (a stored run of another device); `name` is
// what the messages call it.
nlohmann::json baseline_from_json(nlohmann::json j, const std::string& name);

// The diagnosis as its document holds it: what `-o json` prints and the store keeps.
result::DoctorReport to_report(const Diagnosis& diagnosis);

}  // namespace edgeprobe::doctor
