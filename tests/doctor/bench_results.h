#pragma once
// Bench results for the doctor checks' tests, built from the result structs (what doctor
// reads from its children): a test by its name at a thread count, with one repetition at
// the given rates and that repetition's telemetry.
#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "result/result.h"

namespace edgeprobe::doctor_test {

// "pp128" or "tg32" at `threads`; `telemetry` is the repetition's per-phase object
// ({"decode": {...}}), null for none. A rate of 0 leaves that phase unmeasured.
inline result::TestResult test_result(const std::string& test, int threads, double pp_tokens_per_s,
                                      double tg_tokens_per_s, nlohmann::json telemetry = nullptr) {
  result::TestResult r;
  const int n = std::stoi(test.substr(2));
  r.config.kind = test.starts_with("pp") ? workload::TestKind::kPrompt : workload::TestKind::kGenerate;
  (test.starts_with("pp") ? r.config.n_prompt : r.config.n_gen) = n;
  r.config.n_threads = threads;
  result::Repetition rep;
  if (pp_tokens_per_s > 0) {
    rep.prefill_tokens_per_s = pp_tokens_per_s;
    rep.prefill_ms = r.config.n_prompt * 1000.0 / pp_tokens_per_s;
  }
  if (tg_tokens_per_s > 0) {
    rep.decode_tokens_per_s = tg_tokens_per_s;
    rep.decode_ms = r.config.n_gen * 1000.0 / tg_tokens_per_s;
  }
  rep.telemetry = std::move(telemetry);
  r.repetitions.push_back(std::move(rep));
  return r;
}

// A report of `results` for one model.
inline result::BenchReport bench_report(std::vector<result::TestResult> results, result::ModelIdentity model = {}) {
  result::BenchReport report;
  report.provenance.models.push_back(std::move(model));
  report.results = std::move(results);
  return report;
}

}  // namespace edgeprobe::doctor_test
