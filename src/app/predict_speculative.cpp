// predict --draft: when speculative decoding pays on a device (docs/speculative.md, "When it
// pays"). The costs are the row's own model (predict.h) applied to the draft and to the
// target's verify batch; the arithmetic that turns them into a speed-up is predict/speculative.h.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "app/predict_job.h"
#include "app/stored_run.h"
#include "core/error.h"
#include "result/result.h"

namespace edgeprobe::app {
namespace {

using nlohmann::json;

// One decode step of `info` at the configuration: the mean over its generation.
double decode_step_ms(const model::GgufInfo& info, const probe::DeviceCeilings& c, predict::Config cfg,
                      std::vector<std::string>& notes, const std::string& who) {
  cfg.n_prompt = 0;
  const auto p = predict::predict(info, c, cfg, {}, {}, 0);
  for (const auto& n : p.notes) notes.push_back(who + ": " + n);
  return p.decode_tokens_per_s.value > 0 ? 1e3 / p.decode_tokens_per_s.value : 0;
}

// The target's verify batch of k + 1 tokens with logits for each: a prefill of that size at
// the generation's middle, at the prefill kernel probe's rates for that batch.
double verify_batch_ms(const model::GgufInfo& target, const probe::DeviceCeilings& c, predict::Config cfg,
                       int k, std::vector<std::string>& notes) {
  cfg.depth += cfg.n_gen / 2;
  cfg.n_prompt = k + 1;
  cfg.n_gen = 0;
  cfg.logits_all = true;
  const auto p = predict::predict(target, c, cfg, {}, {}, 0);
  for (const auto& n : p.notes) notes.push_back(fmt::format("verify batch of {}: {}", k + 1, n));
  return p.prefill_tokens_per_s.value > 0 ? 1e3 * (k + 1) / p.prefill_tokens_per_s.value : 0;
}

// Where the acceptance of one length comes from: measured positions, else the given alpha.
void apply_acceptance(SpecRow& row, std::optional<double> alpha,
                      const std::map<int, std::vector<double>>& measured, const std::string& measured_basis) {
  const auto m = measured.find(row.draft_max);
  if (m != measured.end()) {
    row.position_rates = m->second;
    row.expected_tokens = predict::expected_tokens(m->second);
    row.alpha = predict::acceptance_for_tokens(row.expected_tokens, row.draft_max);
    row.acceptance_basis = measured_basis;
  } else if (alpha) {
    row.alpha = *alpha;
    row.expected_tokens = predict::expected_tokens(*alpha, row.draft_max);
    row.acceptance_basis = "given";
  } else
    return;
  row.speed_up = predict::speed_up(row.expected_tokens, row.draft_max, row.costs);
}

}  // namespace

std::map<int, std::vector<double>> measured_acceptance(const std::string& run_or_file,
                                                       const std::string& db) {
  const json doc = load_result_document(run_or_file, db);
  std::map<int, std::vector<double>> out;
  for (const auto& r : doc.value("results", json::array())) {
    const auto spec = result::speculative_from_json(r.value("speculative", json()));
    if (!spec || spec->verify_steps == 0 || out.count(spec->draft_max)) continue;
    std::vector<double>& rates = out[spec->draft_max];
    for (const auto& p : spec->positions)
      rates.push_back(p.drafted > 0 ? static_cast<double>(p.accepted) / static_cast<double>(p.drafted) : 0);
  }
  if (out.empty())
    throw_bad_input("{} measured no speculative decoding (a bench --draft run has results[].speculative)",
                    run_or_file);
  return out;
}

std::vector<SpecRow> predict_speculation(const model::GgufInfo& target, const model::GgufInfo& draft,
                                         const probe::DeviceCeilings& c, const predict::Config& config,
                                         const std::vector<int>& lengths, std::optional<double> alpha,
                                         const std::map<int, std::vector<double>>& measured,
                                         const std::string& measured_basis, std::vector<std::string>& notes) {
  std::vector<std::string> found, own;  // the target's decode notes are the row's own already
  const double target_ms = decode_step_ms(target, c, config, own, "target");
  const double draft_ms = decode_step_ms(draft, c, config, found, "draft");
  std::vector<SpecRow> rows;
  for (int k : lengths) {
    SpecRow row;
    row.draft_max = k;
    row.costs = {target_ms, draft_ms, verify_batch_ms(target, c, config, k, found)};
    if (row.costs.verify_ms > 0 && target_ms > 0 && draft_ms > 0) {
      row.break_even = predict::break_even_acceptance(k, row.costs);
      apply_acceptance(row, alpha, measured, measured_basis);
    }
    rows.push_back(std::move(row));
  }
  // The verify batches' notes repeat per length: each once. The draft's and the batches'
  // load times are no part of a decode step.
  for (auto& n : found)
    if (n.find("load time") == std::string::npos && std::find(notes.begin(), notes.end(), n) == notes.end())
      notes.push_back(std::move(n));
  return rows;
}

}  // namespace edgeprobe::app
