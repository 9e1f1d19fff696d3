// Doctor's two outputs, both from the Diagnosis: a short human report ordered by impact
// and the JSON with every finding, its evidence and the runs behind it.
#include <fmt/format.h>

#include <filesystem>

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
            {"primary", e.primary.report}}}};
}

std::string to_text(const Diagnosis& d) {
  const auto& e = d.evidence;
  const auto& o = e.options;
  std::string out;
  const auto& models = field(field(e.primary.report, "provenance"), "models");
  const nlohmann::json m = models.is_array() && !models.empty() ? models[0] : nlohmann::json::object();
  const std::string sha = m.value("sha256", "");
  out += fmt::format("edgeprobe doctor: {} ({:.1f} MiB, {}, {:.2f} bits/weight{})\n",
                     std::filesystem::path(o.model_path).filename().string(), m.value("size_bytes", 0.0) / (1024.0 * 1024.0),
                     m.value("quant", "?"), m.value("bits_per_weight", 0.0), sha.empty() ? "" : ", sha256 " + sha.substr(0, 16) + "…");
  out += fmt::format("configuration: {} · ggml CPU variant {} · tests pp{} + tg{}, median of {} · {:.0f} s\n\n",
                     o.config.flags_text(), field(field(e.primary.report, "provenance"), "engine").value("cpu_variant", "?"), o.n_prompt, o.n_gen,
                     o.repetitions, d.wall_s);
  if (const std::string sign = emulated_run(e); !sign.empty())
    out += fmt::format("timings are emulated ({}): they are not the performance of any device, and every speed-up below is "
                       "marked as coming from this emulated run\n\n", sign);
  int n = 0, warnings = 0;
  for (const auto& f : d.findings) {
    warnings += f.severity != Severity::kInfo;
    std::string gain;
    if (f.speedup)
      gain = fmt::format(" · x{:.2f} {} if fixed ({}{})", *f.speedup, f.affects, speedup_basis_word(f),
                         f.data.contains("emulated") ? std::string(", ") + kEmulatedSpeedup : "");
    out += fmt::format("{}. [{}] {}: {}{}\n", ++n, severity_name(f.severity), f.id, f.title, gain);
    for (const auto& line : f.evidence) out += "     " + line + "\n";
    if (f.severity != Severity::kInfo && !f.speedup && !f.speedup_basis.empty()) out += "   speed-up: " + f.speedup_basis + "\n";
    if (!f.fix.empty()) out += "   fix: " + f.fix + "\n";
    out += "\n";
  }
  out += warnings == 0 ? "No warnings: nothing in this configuration slows the model down that doctor can see.\n"
                       : fmt::format("{} finding(s) to act on, largest measured or estimated gain first.\n", warnings);
  return out;
}

}  // namespace edgeprobe::doctor
