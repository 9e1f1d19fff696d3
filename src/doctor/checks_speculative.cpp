// A draft model that costs more than it saves (bench --draft, docs/speculative.md): the run's
// own interleaved pairs of plain and speculative decoding say whether it is slower, and its
// measured costs say at what acceptance the draft would pay (predict/speculative.h).
#include <fmt/format.h>

#include <algorithm>

#include "doctor/checks_internal.h"
#include "doctor/paired.h"
#include "predict/speculative.h"

namespace edgeprobe::doctor::checks {
namespace {

// What one verify step cost in this run, from the pairs' summed times: a plain token, a
// proposal, and the target's batch (its verify time less the single steps it also took).
predict::SpecCosts measured_costs(const result::Speculative& s) {
  double plain_ms = 0, plain_tokens = 0, draft_ms = 0, verify_ms = 0;
  for (const auto& p : s.pairs) {
    plain_ms += p.plain_ms;
    plain_tokens += std::max(0, p.tokens - 1);  // the first token is the prefill's
    draft_ms += p.draft_ms;
    verify_ms += p.verify_ms;
  }
  predict::SpecCosts c;
  if (plain_tokens > 0) c.target_token_ms = plain_ms / plain_tokens;
  if (s.drafted > 0) c.draft_token_ms = draft_ms / static_cast<double>(s.drafted);
  if (s.verify_steps > 0)
    c.verify_ms = std::max(0.0, verify_ms - static_cast<double>(s.plain_steps) * c.target_token_ms) /
                  static_cast<double>(s.verify_steps);
  return c;
}

std::optional<Finding> draft_costs_more(const result::TestResult& r) {
  const auto& s = *r.speculative;
  // Dropping the draft is the fix: A = speculative, B = plain, so a ratio > 1 is B faster.
  std::vector<double> ratios;
  int slower = 0;
  for (const auto& p : s.pairs)
    if (p.plain_ms > 0 && p.spec_ms > 0) {
      ratios.push_back(p.spec_ms / p.plain_ms);
      slower += p.spec_ms > p.plain_ms;
    }
  const auto estimate = estimate_pairs(ratios);
  if (decide(estimate, StopRule{}, true) != PairVerdict::kFaster) return std::nullopt;
  const predict::SpecCosts costs = measured_costs(s);
  const int k = s.draft_max;
  const double expected = 1 + s.mean_accepted();
  const double alpha = predict::acceptance_for_tokens(expected, k);
  const auto break_even = predict::break_even_acceptance(k, costs);
  const std::string test = r.config.name();
  const std::string pays =
      break_even ? fmt::format("it would pay above alpha {:.2f}", *break_even)
                 : fmt::format("it cannot pay at draft length {} even with every proposal accepted", k);
  const auto& m = *estimate;
  Finding f{
      "speculative.draft_costs_more",
      Severity::kWarning,
      fmt::format(
          "{}: the draft costs more than it saves: speculative decoding at x{:.2f} of plain decoding's speed",
          test, 1 / m.median),
      {fmt::format(
           "{}: plain against speculative decoding (draft up to {} tokens): {} of {} interleaved pairs "
           "slower, median x{:.2f}, {:.0f} % interval [{:.2f}, {:.2f}]",
           test, k, slower, ratios.size(), 1 / m.median, m.coverage * 100, 1 / m.high, 1 / m.low),
       fmt::format("acceptance {} of proposals, {:.2f} accepted per verify step: alpha {:.2f} per proposal",
                   pct(s.acceptance_rate()), s.mean_accepted(), alpha),
       fmt::format(
           "per verify step: {} proposals at {:.3g} ms and the target's batch of {} at {:.3g} ms, against "
           "{:.3g} ms a plain token: {}",
           k, costs.draft_token_ms, k + 1, costs.verify_ms, costs.target_token_ms, pays)},
      "decode",
      m.median,
      fmt::format(
          "measured: plain against speculative decoding, the run's median of {} interleaved pairs x{:.2f}, "
          "{:.0f} % interval [{:.2f}, {:.2f}]",
          m.n, m.median, m.coverage * 100, m.low, m.high),
      "run without --draft; or a draft whose acceptance is above the break-even (a smaller or better-matched "
      "draft, or another --draft-max: edgeprobe predict --draft prints the break-even of each length)",
      {{"test", test},
       {"draft", s.draft.path},
       {"draft_max", k},
       {"speed_up", 1 / m.median},
       {"pairs", ratios.size()},
       {"slower_pairs", slower},
       {"acceptance_rate", s.acceptance_rate()},
       {"mean_accepted", s.mean_accepted()},
       {"alpha", alpha},
       {"break_even_alpha", break_even ? json(*break_even) : json()},
       {"target_token_ms", costs.target_token_ms},
       {"draft_token_ms", costs.draft_token_ms},
       {"verify_ms", costs.verify_ms}}};
  return f;
}

}  // namespace

void check_speculation(const Evidence& e, std::vector<Finding>& out) {
  if (!e.primary.report) return;
  for (const auto& r : e.primary.report->results)
    if (r.speculative && !r.speculative->pairs.empty())
      if (auto f = draft_costs_more(r)) out.push_back(std::move(*f));
}

}  // namespace edgeprobe::doctor::checks
