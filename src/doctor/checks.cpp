// The checks doctor runs, in the order of the first seed's checklist: the file, its
// precision and the kernels first (software), then threads, contention, throttling, load
// and the ceiling (hardware). Each is a pure function of the Evidence, so a test can feed
// it a measured or a fixture run alike.
#include <fmt/format.h>

#include <algorithm>

#include "doctor/checks_internal.h"

namespace edgeprobe::doctor {
namespace checks {

const json& primary_extra(const Evidence& e, const char* key) {
  static const json kNull;
  return e.primary.report ? field(e.primary.report->provenance.extra, key) : kNull;
}

std::string mib(double bytes) { return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0)); }
std::string pct(double share) { return fmt::format("{:.0f} %", share * 100); }

std::string cpu_list_text(const std::vector<int>& cpus) {
  if (cpus.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + (j == i ? std::to_string(cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]));
    i = j + 1;
  }
  return out;
}

std::string no_speedup_reason(const std::string& id) {
  if (id.starts_with("identity.baseline")) return "none: the comparison with the baseline is void, not slow";
  if (id.starts_with("identity.")) return "none: another build's speed is not this one's to estimate";
  if (id == "precision.memory_excess") return "none: memory, not speed";
  if (id == "kernel.log_messages") return "none: llama.cpp's messages name no speed; read them";
  if (id == "load.no_mmap") return "none: no warm load to compare the first one with";
  if (id == "throttle.decode_step_down") return "none: the factor in the title is what the step cost while it lasted";
  return "none: doctor has no measurement or model of this gain";
}

void apply_measured(Finding& f, const std::optional<Comparison>& c, const Evidence& e) {
  if (!c) return;
  f.data["measured"] = to_json(*c);
  f.evidence.push_back(fmt::format("{} against {}, {}: {}", c->b_label, c->a_label, c->metric, c->text()));
  if (!c->estimate) {
    f.speedup_basis = c->error.empty() ? fmt::format("none: inconclusive: the budget ({:.0f} s) was spent before a pair could run", e.budget_s)
                                       : "none: the fix could not be measured (" + c->error + ")";
    return;
  }
  const auto& m = *c->estimate;
  const std::string figures = fmt::format("median of {} interleaved pairs x{:.2f}, {:.0f} % interval [{:.2f}, {:.2f}]", m.n, m.median,
                                          m.coverage * 100, m.low, m.high);
  switch (c->verdict) {
    case PairVerdict::kFaster:
      f.speedup = m.median;
      f.speedup_basis = fmt::format("measured: {} against {}, {}", c->b_label, c->a_label, figures);
      break;
    case PairVerdict::kSlower:
      f.speedup_basis = fmt::format("none: {} measured slower ({})", c->b_label, figures);
      break;
    case PairVerdict::kSame:
      f.speedup_basis = fmt::format("none: {} measured within 5 % of {} ({})", c->b_label, c->a_label, figures);
      break;
    default:
      f.speedup_basis = fmt::format("none: inconclusive: the machine's speed varied by {} during the diagnosis ({})",
                                    pct(std::max(c->speed_variation, e.speed_variation)), figures);
  }
}

}  // namespace checks

std::string emulated_run(const Evidence& e) {
  const auto& cpu = checks::primary_extra(e, "cpu_features");
  return cpu.is_object() && field(cpu, "emulated").is_string() ? field(cpu, "emulated").get<std::string>() : "";
}

std::vector<Finding> diagnose(const Evidence& e) {
  std::vector<Finding> out;
  checks::check_identity(e, out);
  checks::check_precision(e, out);
  checks::check_memory(e, out);
  checks::check_kernel(e, out);
  checks::check_gpu(e, out);
  checks::check_threads(e, out);
  checks::check_contention(e, out);
  checks::check_cgroup(e, out);
  checks::check_clock_and_heat(e, out);
  checks::check_big_cores(e, out);
  checks::check_decode_steps(e, out);
  checks::check_load(e, out);
  checks::check_ceiling(e, out);
  checks::check_speculation(e, out);
  // A thread count measured faster while something else held the CPUs is a symptom: the
  // other processes or the quota are the cause, and fixing them changes the best count.
  const bool cpu_taken = std::any_of(out.begin(), out.end(), [](const Finding& f) {
    return f.id == "contention.other_processes" || f.id == "throttle.cgroup_quota" || f.id == "contention.steal";
  });
  for (auto& f : out) {
    if (f.id != "threads.count" || !cpu_taken) continue;
    f.severity = Severity::kInfo;
    f.evidence.push_back("measured while other processes or a quota held the CPUs: fix that first, then measure again");
  }
  // A comparison that ended undecided is said once, with how much the machine moved.
  std::vector<std::string> undecided;
  for (const auto* c : {&e.variant_pairs, &e.thread_pairs, &e.mmap_pairs, &e.gpu_pairs})
    if (*c && (*c)->verdict == PairVerdict::kInconclusive)
      undecided.push_back(fmt::format("{}: {} against {}: {}", (*c)->what, (*c)->b_label, (*c)->a_label, (*c)->text()));
  if (!undecided.empty()) {
    undecided.push_back(fmt::format("the reference kernel's speed over the diagnosis ranged over {} of its best; budget {:.0f} s",
                                    checks::pct(e.speed_variation), e.budget_s));
    out.push_back({"measurement.inconclusive", Severity::kInfo,
                   fmt::format("inconclusive: the machine's speed varied by {} during the diagnosis", checks::pct(e.speed_variation)),
                   undecided, "results", std::nullopt, "", "run doctor again on a quieter machine, or give it more time (--budget)",
                   {{"speed_variation", e.speed_variation}, {"budget_s", e.budget_s}}});
  }
  // Every warning says what fixing it gains, or why doctor cannot say.
  for (auto& f : out)
    if (f.severity != Severity::kInfo && !f.speedup && f.speedup_basis.empty()) f.speedup_basis = checks::no_speedup_reason(f.id);
  // Under emulation a speed-up is the emulator's, never a device's: every one says so
  // (sort_by_impact then ranks by severity and check order alone).
  if (const std::string sign = emulated_run(e); !sign.empty())
    for (auto& f : out)
      if (f.speedup || f.data.contains("measured") || f.speedup_basis.starts_with("measured") || f.speedup_basis.starts_with("estimated")) {
        f.speedup_basis = fmt::format("{}: {}", kEmulatedSpeedup, f.speedup_basis);
        f.data["emulated"] = sign;
      }
  return out;
}

}  // namespace edgeprobe::doctor
