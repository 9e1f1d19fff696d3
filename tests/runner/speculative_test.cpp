// bench --draft's bookkeeping and decoding loop, on scripted "models" whose next token is
// a function of what their cache holds: a cache that kept a rejected token, or lost an
// accepted one, continues differently, so the tokens catch every slip of the loop.
#include "runner/speculative.h"

#include <gtest/gtest.h>

#include <numeric>

#include "core/error.h"

namespace edgeprobe::runner {
namespace {

using engine::Token;

constexpr Token kVocab = 50;

// The target's rule: the next token from the last two in the cache.
Token target_next(const std::vector<Token>& cache) {
  const Token a = cache.empty() ? 0 : cache.back();
  const Token b = cache.size() < 2 ? 0 : cache[cache.size() - 2];
  return static_cast<Token>((a * 7 + b * 3 + 1) % kVocab);
}

// A context over a rule: the cache is the list of tokens decoded; `disagree_every` > 0
// makes the draft's rule differ from the target's at every position that is a multiple
// of it.
class RuleContext : public engine::Context {
 public:
  explicit RuleContext(int disagree_every = 0) : disagree_every_(disagree_every) {}
  void decode(const std::vector<Token>& tokens, bool) override {
    for (Token t : tokens) decode_one(t);
  }
  void decode_one(Token token) override {
    cache_.push_back(token);
    ++decodes;
  }
  void clear() override { cache_.clear(); }
  int32_t n_ctx() const override { return 1 << 20; }
  int32_t n_past() const override { return static_cast<int32_t>(cache_.size()); }
  Token argmax_last() const override { return next(cache_); }
  bool shift(int, int) override { return false; }
  std::vector<uint8_t> save_state() const override { return {}; }
  bool restore_state(const std::vector<uint8_t>&) override { return false; }
  std::vector<Token> decode_greedy_all(const std::vector<Token>& tokens) override {
    std::vector<Token> picks;
    for (Token t : tokens) {
      cache_.push_back(t);
      picks.push_back(next(cache_));
    }
    ++batches;
    return picks;
  }
  bool truncate(int32_t n_keep) override {
    if (n_keep < 0 || n_keep > n_past()) return false;
    cache_.resize(static_cast<size_t>(n_keep));
    return true;
  }
  int decodes = 0, batches = 0;

 private:
  Token next(const std::vector<Token>& cache) const {
    const Token t = target_next(cache);
    if (disagree_every_ <= 0 || cache.size() % static_cast<size_t>(disagree_every_) != 0) return t;
    return static_cast<Token>((t + 1) % kVocab);
  }
  std::vector<Token> cache_;
  int disagree_every_;
};

const std::vector<Token> kPrompt = {1, 5, 9, 13};

TEST(SpeculativeBookkeeping, AcceptedPrefixStopsAtTheFirstDisagreement) {
  EXPECT_EQ(accepted_prefix({4, 5, 6}, {4, 5, 6, 7}), 3);
  EXPECT_EQ(accepted_prefix({4, 5, 6}, {4, 9, 6, 7}), 1);  // a later agreement does not count
  EXPECT_EQ(accepted_prefix({4, 5, 6}, {8, 5, 6, 7}), 0);
  EXPECT_EQ(accepted_prefix({}, {3}), 0);
}

TEST(SpeculativeBookkeeping, TallyCountsEveryPositionADraftReached) {
  result::Speculative s;
  tally_step(s, 4, 2);
  tally_step(s, 4, 4);
  tally_step(s, 2, 0);
  EXPECT_EQ(s.verify_steps, 3);
  EXPECT_EQ(s.drafted, 10);
  EXPECT_EQ(s.accepted, 6);
  ASSERT_EQ(s.positions.size(), 4u);
  EXPECT_EQ(s.positions[0].drafted, 3);
  EXPECT_EQ(s.positions[0].accepted, 2);
  EXPECT_EQ(s.positions[1].accepted, 2);
  EXPECT_EQ(s.positions[2].drafted, 2);
  EXPECT_EQ(s.positions[2].accepted, 1);
  EXPECT_EQ(s.positions[3].accepted, 1);
  EXPECT_DOUBLE_EQ(s.acceptance_rate(), 0.6);
  EXPECT_DOUBLE_EQ(s.mean_accepted(), 2.0);
  EXPECT_THROW(tally_step(s, 2, 3), Error);
}

TEST(SpeculativeDecode, AnAgreeingDraftIsAcceptedWholeAndTheTokensArePlainDecodings) {
  const RunClock clock;
  RuleContext plain_ctx, target, draft;
  const auto plain = plain_decode(plain_ctx, kPrompt, 41, clock);
  ASSERT_EQ(plain.tokens.size(), 41u);
  result::Speculative s;
  SpecOptions o{"draft", 4, 0};
  const auto spec = speculative_decode(target, draft, kPrompt, 41, o, clock, &s);
  EXPECT_EQ(spec.tokens, plain.tokens);
  // 40 tokens after the first, 5 a step (4 accepted + the target's own): 8 verify passes.
  EXPECT_EQ(s.verify_steps, 8);
  EXPECT_EQ(s.accepted, s.drafted);
  EXPECT_EQ(target.batches, 8);
  EXPECT_EQ(s.plain_steps, 0);
}

TEST(SpeculativeDecode, ADisagreeingDraftLeavesTheTokensAsTheTargetsAndTheCachesExact) {
  const RunClock clock;
  for (int every : {3, 5, 7}) {
    for (int max : {1, 3, 8}) {
      RuleContext plain_ctx, target, draft(every);
      const auto plain = plain_decode(plain_ctx, kPrompt, 60, clock);
      result::Speculative s;
      const auto spec = speculative_decode(target, draft, kPrompt, 60, {"draft", max, 0}, clock, &s);
      ASSERT_EQ(spec.tokens, plain.tokens) << "disagree every " << every << ", draft-max " << max;
      EXPECT_LT(s.accepted, s.drafted);
      EXPECT_GT(s.verify_steps, 0);
      // Every step yields its accepted tokens and one of the target's.
      EXPECT_EQ(s.accepted + s.verify_steps + s.plain_steps, 59);
      // The target's cache holds all but the last token, as after plain decoding.
      EXPECT_EQ(target.n_past(), static_cast<int32_t>(kPrompt.size()) + 59);
      // Acceptance is a prefix: a later position is never accepted more often.
      for (size_t j = 1; j < s.positions.size(); ++j)
        EXPECT_LE(s.positions[j].accepted, s.positions[j - 1].accepted);
    }
  }
}

TEST(SpeculativeDecode, DraftMinLeavesTheLastStepsToTheTarget) {
  const RunClock clock;
  RuleContext target, draft;
  result::Speculative s;
  // 10 tokens after the first: two steps of 4 + 1, then none remain.
  auto spec = speculative_decode(target, draft, kPrompt, 11, {"draft", 4, 4}, clock, &s);
  EXPECT_EQ(spec.tokens.size(), 11u);
  EXPECT_EQ(s.verify_steps, 2);
  EXPECT_EQ(s.plain_steps, 0);
  // 12 after the first: two full steps, then 2 remain: a draft of 1 < 4 is not verified.
  RuleContext target2, draft2;
  result::Speculative s2;
  spec = speculative_decode(target2, draft2, kPrompt, 13, {"draft", 4, 4}, clock, &s2);
  EXPECT_EQ(spec.tokens.size(), 13u);
  EXPECT_EQ(s2.verify_steps, 2);
  EXPECT_EQ(s2.plain_steps, 2);
}

TEST(SpeculativeDecode, PairsCompareWithPlainDecodingAndAccountForTheTime) {
  RuleContext target, draft(3);
  const RunClock clock;
  const auto s =
      measure_speculative(target, draft, {kPrompt, {2, 4}}, 30, {"draft", 4, 0}, 3, true, clock, StopToken());
  ASSERT_EQ(s.pairs.size(), 3u);
  EXPECT_TRUE(s.identical());
  EXPECT_TRUE(s.check.verified());
  EXPECT_EQ(s.check.reference, "plain decoding");
  EXPECT_EQ(s.check.compared, 30);
  for (const auto& p : s.pairs) {
    EXPECT_EQ(p.tokens, 30);
    EXPECT_LE(p.draft_ms + p.verify_ms + p.overhead_ms, p.spec_ms * 1.0001 + 1e-6);
  }
  EXPECT_EQ(s.check.prompt, kPrompt);  // the first pair's
}

TEST(SpeculativeDecode, ACacheThatCannotDropTokensIsAnEnvironmentError) {
  class NoTruncate : public RuleContext {
   public:
    bool truncate(int32_t) override { return false; }
  };
  NoTruncate target;
  RuleContext draft;
  const RunClock clock;
  try {
    speculative_decode(target, draft, kPrompt, 20, {"draft", 4, 0}, clock, nullptr);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kEnvironment);
    EXPECT_NE(std::string(e.what()).find("target"), std::string::npos) << e.what();
  }
}

// The result schema keeps the raw counts and pairs and derives the rest; a test without
// a draft (or an older result) reads as none.
TEST(SpeculativeResult, RoundTripsThroughTheSchemaAndSummarizesThePairs) {
  result::TestResult r;
  r.config.n_gen = 16;
  r.speculative.emplace();
  auto& s = *r.speculative;
  s.draft.path = "/m/draft.gguf";
  s.draft.sha256 = "ab";
  s.draft_max = 4;
  tally_step(s, 4, 3);
  tally_step(s, 4, 1);
  s.check = {{1, 2}, {3, 4}, "plain decoding", 2, -1};
  // Pair speed-ups x2 and x4 (median x3); 15 tokens after the first.
  s.pairs.push_back({0, 16, 100, 50, 20, 25, 4, 1, 1, true});
  s.pairs.push_back({1, 16, 200, 50, 10, 35, 5, 1, 1, true});
  const auto sum = result::summarize(s);
  EXPECT_DOUBLE_EQ(sum.speed_up, 3);
  EXPECT_DOUBLE_EQ(sum.speed_up_min, 2);
  EXPECT_DOUBLE_EQ(sum.speed_up_max, 4);
  EXPECT_DOUBLE_EQ(sum.spec_tokens_per_s, 300);
  EXPECT_DOUBLE_EQ(sum.draft_share, 0.3);
  EXPECT_DOUBLE_EQ(sum.verify_share, 0.6);
  EXPECT_DOUBLE_EQ(sum.overhead_share, 0.09);
  EXPECT_NEAR(sum.unaccounted_share, 0.01, 1e-12);

  const auto j = result::to_json(r);
  EXPECT_EQ(j["speculative"]["acceptance_rate"], 0.5);
  EXPECT_EQ(j["speculative"]["positions"][3]["rate"], 0.0);
  const auto back = result::test_result_from_json(j);
  ASSERT_TRUE(back.speculative);
  EXPECT_EQ(back.speculative->draft.path, "/m/draft.gguf");
  EXPECT_EQ(back.speculative->accepted, 4);
  EXPECT_EQ(back.speculative->positions.size(), 4u);
  EXPECT_EQ(back.speculative->pairs.size(), 2u);
  EXPECT_TRUE(back.speculative->check.verified());
  EXPECT_EQ(result::to_json(back)["speculative"], j["speculative"]);

  result::TestResult plain;
  plain.config.n_gen = 16;
  EXPECT_FALSE(result::to_json(plain).contains("speculative"));
  EXPECT_FALSE(result::test_result_from_json(result::to_json(plain)).speculative);
}

}  // namespace
}  // namespace edgeprobe::runner
