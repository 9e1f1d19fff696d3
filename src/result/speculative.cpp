// bench --draft's part of the result schema: the raw pairs and counts are stored; the
// rates, medians and shares are derived from them (summarize) and written beside them
// for readers of the JSON, never read back.
#include <algorithm>

#include "core/json_read.h"
#include "core/stats.h"
#include "result/result.h"

namespace edgeprobe::result {

using nlohmann::json;
using namespace json_read;

bool Speculative::identical() const {
  return std::all_of(pairs.begin(), pairs.end(), [](const SpeculativePair& p) { return p.identical; });
}

SpeculativeSummary summarize(const Speculative& spec) {
  SpeculativeSummary s;
  std::vector<double> plain, fast, ratio;
  double spec_ms = 0, draft_ms = 0, verify_ms = 0, overhead_ms = 0;
  for (const auto& p : spec.pairs) {
    // The first token comes from the prefill in both: the rates count the ones after it.
    const double counted = std::max(0, p.tokens - 1);
    if (p.plain_ms > 0) plain.push_back(counted / (p.plain_ms / 1e3));
    if (p.spec_ms > 0) fast.push_back(counted / (p.spec_ms / 1e3));
    if (p.plain_ms > 0 && p.spec_ms > 0) ratio.push_back(p.plain_ms / p.spec_ms);
    spec_ms += p.spec_ms;
    draft_ms += p.draft_ms;
    verify_ms += p.verify_ms;
    overhead_ms += p.overhead_ms;
  }
  s.plain_tokens_per_s = stats::summarize(plain).median;
  s.spec_tokens_per_s = stats::summarize(fast).median;
  s.speed_up = stats::summarize(ratio).median;
  if (!ratio.empty()) {
    s.speed_up_min = *std::min_element(ratio.begin(), ratio.end());
    s.speed_up_max = *std::max_element(ratio.begin(), ratio.end());
  }
  if (spec_ms > 0) {
    s.draft_share = draft_ms / spec_ms;
    s.verify_share = verify_ms / spec_ms;
    s.overhead_share = overhead_ms / spec_ms;
    s.unaccounted_share = (spec_ms - draft_ms - verify_ms - overhead_ms) / spec_ms;
  }
  return s;
}

namespace {

json to_json(const SpeculativePair& p) {
  return {{"index", p.index},
          {"tokens", p.tokens},
          {"plain_ms", p.plain_ms},
          {"spec_ms", p.spec_ms},
          {"draft_ms", p.draft_ms},
          {"verify_ms", p.verify_ms},
          {"overhead_ms", p.overhead_ms},
          {"target_prefill_ms", p.target_prefill_ms},
          {"draft_prefill_ms", p.draft_prefill_ms},
          {"identical", p.identical}};
}

SpeculativePair pair_from_json(const json& j) {
  SpeculativePair p;
  p.index = number<int>(j, "index");
  p.tokens = number<int>(j, "tokens");
  p.plain_ms = num(j, "plain_ms");
  p.spec_ms = num(j, "spec_ms");
  p.draft_ms = num(j, "draft_ms");
  p.verify_ms = num(j, "verify_ms");
  p.overhead_ms = num(j, "overhead_ms");
  p.target_prefill_ms = num(j, "target_prefill_ms");
  p.draft_prefill_ms = num(j, "draft_prefill_ms");
  const json& same = field(j, "identical");
  p.identical = !same.is_boolean() || same.get<bool>();
  return p;
}

json summary_json(const SpeculativeSummary& s) {
  return {{"plain_tokens_per_s", s.plain_tokens_per_s},
          {"spec_tokens_per_s", s.spec_tokens_per_s},
          {"speed_up", s.speed_up},
          {"speed_up_min", s.speed_up_min},
          {"speed_up_max", s.speed_up_max},
          {"draft_share", s.draft_share},
          {"verify_share", s.verify_share},
          {"overhead_share", s.overhead_share},
          {"unaccounted_share", s.unaccounted_share}};
}

}  // namespace

json to_json(const Speculative& s) {
  json positions = json::array();
  for (const auto& p : s.positions)
    positions.push_back(
        {{"drafted", p.drafted},
         {"accepted", p.accepted},
         {"rate", p.drafted > 0 ? json(static_cast<double>(p.accepted) / p.drafted) : json(nullptr)}});
  json pairs = json::array();
  for (const auto& p : s.pairs) pairs.push_back(to_json(p));
  return {{"draft", to_json(s.draft)},
          {"draft_max", s.draft_max},
          {"draft_min", s.draft_min},
          {"check", to_json(s.check)},
          {"identical", s.identical()},
          {"verify_steps", s.verify_steps},
          {"plain_steps", s.plain_steps},
          {"drafted", s.drafted},
          {"accepted", s.accepted},
          {"acceptance_rate", s.drafted > 0 ? json(s.acceptance_rate()) : json(nullptr)},
          {"mean_accepted", s.verify_steps > 0 ? json(s.mean_accepted()) : json(nullptr)},
          {"positions", positions},
          {"pairs", pairs},
          {"summary", summary_json(summarize(s))}};
}

std::optional<Speculative> speculative_from_json(const json& j) {
  if (!j.is_object()) return std::nullopt;
  Speculative s;
  if (const json& d = field(j, "draft"); d.is_object()) s.draft = model_identity_from_json(d);
  s.draft_max = number<int>(j, "draft_max");
  s.draft_min = number<int>(j, "draft_min");
  if (auto check = greedy_check_from_json(field(j, "check"))) s.check = std::move(*check);
  s.verify_steps = number<int64_t>(j, "verify_steps");
  s.plain_steps = number<int64_t>(j, "plain_steps");
  s.drafted = number<int64_t>(j, "drafted");
  s.accepted = number<int64_t>(j, "accepted");
  for (const auto& p : list(j, "positions"))
    s.positions.push_back({number<int64_t>(p, "drafted"), number<int64_t>(p, "accepted")});
  for (const auto& p : list(j, "pairs")) s.pairs.push_back(pair_from_json(p));
  return s;
}

}  // namespace edgeprobe::result
