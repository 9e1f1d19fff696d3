// Doctor's result as JSON, with every finding, its evidence and the runs behind it: the
// document every format is made from (the human report is report::to_text).
#include "doctor/doctor.h"
#include "result/result.h"

namespace edgeprobe::doctor {
namespace {

nlohmann::json run_json(const BenchRun& run) {
  return {{"label", run.label},
          {"config", run.config.bench_args()},
          {"command", run.command},
          {"error", run.error},
          {"window",
           {{"wall_s", run.window.wall_s},
            {"child_cpu_s", run.window.child_cpu_s},
            {"other_cpu_share", run.window.other_cpu_share ? nlohmann::json(*run.window.other_cpu_share) : nlohmann::json(nullptr)},
            {"throttled_ms", run.window.throttled_ms ? nlohmann::json(*run.window.throttled_ms) : nlohmann::json(nullptr)},
            {"cpu_pressure_share",
             run.window.cpu_pressure_share ? nlohmann::json(*run.window.cpu_pressure_share) : nlohmann::json(nullptr)},
            {"reference_kernel_ms", run.reference_ms}}}};
}

}  // namespace

nlohmann::json to_json(const Diagnosis& d) {
  const auto& e = d.evidence;
  const std::string emulated = emulated_run(e);
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : d.findings) findings.push_back(to_json(f));
  nlohmann::json runs = nlohmann::json::array({run_json(e.primary)});
  for (const auto* r : {&e.best_variant, &e.thread_sweep, &e.with_mmap})
    if (*r) runs.push_back(run_json(**r));
  nlohmann::json comparisons = nlohmann::json::array();
  for (const auto* c : {&e.variant_pairs, &e.thread_pairs, &e.mmap_pairs, &e.gpu_pairs})
    if (*c) comparisons.push_back(to_json(**c));
  int warnings = 0;
  for (const auto& f : d.findings) warnings += f.severity != Severity::kInfo;
  return {{"schema_version", result::kSchemaVersion},
          {"kind", "doctor"},
          {"doctor",
           {{"model", e.options.model_path},
            {"config", e.options.config.bench_args()},
            {"tests", {{"n_prompt", e.options.n_prompt}, {"n_gen", e.options.n_gen}, {"repetitions", e.options.repetitions}}},
            {"healthy", warnings == 0},
            {"findings", findings},
            {"runs", runs},
            {"comparisons", comparisons},
            {"machine", {{"reference_kernel_best_ms", e.reference_best_ms}, {"speed_variation", e.speed_variation}}},
            {"budget_s", e.budget_s},
            {"emulated", emulated.empty() ? nlohmann::json(nullptr) : nlohmann::json(emulated)},
            {"wall_s", d.wall_s},
            // The primary run in full, so that this file can be a --baseline itself.
            {"primary", e.primary.report ? result::to_json(*e.primary.report) : nlohmann::json(nullptr)}}}};
}

}  // namespace edgeprobe::doctor
