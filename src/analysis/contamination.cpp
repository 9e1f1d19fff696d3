#include "analysis/contamination.h"

#include <fmt/format.h>

#include <algorithm>

#include "analysis/cpu_time_cost.h"
#include "core/json_read.h"
#include "core/stats.h"

namespace edgeprobe::analysis {

std::vector<std::string> contamination(const result::TestResult& test, const nlohmann::json& provenance) {
  std::vector<std::string> out;
  if (test.error || test.repetitions.empty()) return out;
  const result::TestSummary s = result::summarize(test);
  for (const auto& [phase, summary] : {std::pair{"prefill", &s.prefill_tokens_per_s}, std::pair{"decode", &s.decode_tokens_per_s}})
    if (summary->n >= 3 && summary->median > 0 && summary->stddev / summary->median > kContaminatedSpread)
      out.push_back(fmt::format("{} spread: sd {:.4g} over median {:.4g} tok/s ({:.0f} %, bound {:.0f} %)", phase, summary->stddev,
                                summary->median, 100 * summary->stddev / summary->median, 100 * kContaminatedSpread));
  const auto& lat = s.token_latency_ms;
  if (s.token_latency_steps >= 20 && lat.p50 > 0 && lat.p99 / lat.p50 > kContaminatedTail)
    out.push_back(fmt::format("decode step tail: p99 {:.3g} ms over p50 {:.3g} ms (x{:.0f}, bound x{:.0f})", lat.p99, lat.p50,
                              lat.p99 / lat.p50, kContaminatedTail));
  // Other processes' share of all the machine's CPUs, duration-weighted over the phases.
  double weighted = 0, usable_weighted = 0, duration = 0;
  bool usable_known = true;
  for (const auto& rep : test.repetitions)
    for (const char* phase : {"prefill", "decode"}) {
      const auto& t = json_read::at(rep.telemetry, (std::string("/") + phase).c_str());
      const double ms = json_read::num(t, "duration_ms");
      if (json_read::field(t, "other_cpu_share").is_number() && ms > 0) {
        weighted += t["other_cpu_share"].get<double>() * ms;
        usable_weighted += json_read::num(t, "other_usable_cpu_share", -1) * ms;
        usable_known = usable_known && json_read::field(t, "other_usable_cpu_share").is_number();
        duration += ms;
      }
    }
  const double usable = json_read::num(provenance, "usable_cpus");
  // CPU time is counted in clock ticks (10 ms): over a test's phases shorter than a quarter
  // of a second a share is a handful of ticks, noise rather than evidence (a quiet machine
  // read as 30 % busy over a tiny model's pp64).
  if (duration >= kMinJudgedMs && usable > 0) {
    const double machine = std::max(usable, json_read::num(json_read::field(provenance, "cpu_limits"), "machine_cpus"));
    const double others = usable_known ? usable_weighted / duration * usable : weighted / duration * machine;
    const double threads = test.config.n_threads > 0 ? test.config.n_threads : usable;
    if (const double cost = contention_cost(threads, usable, others); cost > kContaminatedCpuCost)
      out.push_back(fmt::format("other processes: {:.0f} % of {} CPU(s) while it ran, up to x{:.2f} on its {} thread(s) "
                                "(bound x{:.2f})",
                                100 * weighted / duration, machine, cost, threads, kContaminatedCpuCost));
  }
  return out;
}

std::vector<std::string> contamination(const nlohmann::json& test, const nlohmann::json& provenance) {
  try {
    return contamination(result::test_result_from_json(test), provenance);
  } catch (const std::exception&) {
    return {};  // not a test result: nothing to judge (its reader names what is wrong)
  }
}

}  // namespace edgeprobe::analysis
