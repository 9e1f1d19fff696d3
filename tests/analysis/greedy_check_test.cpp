// --verify-against: continuations compared token by token with a reference's, on the same
// prompt only; the check round-trips through the result schema.
#include "analysis/greedy_check.h"

#include <gtest/gtest.h>

#include "analysis/compare.h"
#include "core/error.h"

using namespace edgeprobe;

namespace {

result::GreedyCheck continuation(std::vector<int32_t> prompt, std::vector<int32_t> tokens) {
  result::GreedyCheck c;
  c.prompt = std::move(prompt);
  c.tokens = std::move(tokens);
  return c;
}

}  // namespace

TEST(GreedyCheck, TheFirstDifferingTokenIsTheDivergenceAndIdenticalOnesAreVerified) {
  const std::vector<result::GreedyCheck> ref = {continuation({1, 2}, {5, 6, 7, 8})};
  auto same = continuation({1, 2}, {5, 6, 7, 8});
  EXPECT_EQ(analysis::compare_continuation(same, ref, "run 3"), "");
  EXPECT_TRUE(same.verified());
  EXPECT_EQ(same.compared, 4);
  EXPECT_EQ(analysis::continuation_line(same), "4/4 greedy tokens as the reference (run 3)");

  auto other = continuation({1, 2}, {5, 6, 9, 8});
  analysis::compare_continuation(other, ref, "run 3");
  EXPECT_FALSE(other.verified());
  EXPECT_EQ(other.first_divergence, 2);
  EXPECT_EQ(analysis::continuation_line(other), "diverges from the reference (run 3) at token 3 of 4");

  // One that ended early holds its end-of-generation token where the other went on.
  auto ended = continuation({1, 2}, {5, 6, 0});
  analysis::compare_continuation(ended, ref, "run 3");
  EXPECT_EQ(ended.compared, 3);
  EXPECT_EQ(ended.first_divergence, 2);
}

TEST(GreedyCheck, AnotherPromptIsNotComparedAndSaysWhy) {
  const std::vector<result::GreedyCheck> ref = {continuation({1, 2}, {5, 6})};
  auto c = continuation({1, 3}, {5, 6});
  const auto why = analysis::compare_continuation(c, ref, "ref.json");
  EXPECT_NE(why.find("another tokenizer"), std::string::npos) << why;
  EXPECT_TRUE(c.reference.empty());
  EXPECT_FALSE(c.verified());
  EXPECT_EQ(analysis::continuation_line(c), "greedy continuation recorded (2 tokens), not compared");
}

TEST(GreedyCheck, AReferenceWithoutContinuationsIsRefusedNamingIt) {
  result::BenchReport none;
  none.results.emplace_back();
  try {
    analysis::reference_continuations(none, "run 7");
    FAIL() << "accepted a reference without continuations";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("run 7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--verify"), std::string::npos) << e.what();
  }
}

TEST(GreedyCheck, RoundTripsThroughTheResultSchema) {
  auto c = continuation({1, 2, 3}, {4, 5});
  const std::vector<result::GreedyCheck> ref = {continuation({1, 2, 3}, {4, 6})};
  analysis::compare_continuation(c, ref, "run 1");
  result::TestResult r;
  r.config.n_prompt = 8;
  r.verify = c;
  const auto back = result::test_result_from_json(result::to_json(r));
  ASSERT_TRUE(back.verify);
  EXPECT_EQ(back.verify->prompt, c.prompt);
  EXPECT_EQ(back.verify->tokens, c.tokens);
  EXPECT_EQ(back.verify->reference, "run 1");
  EXPECT_EQ(back.verify->first_divergence, 1);
  EXPECT_EQ(back.verify->compared, 2);
  EXPECT_EQ(result::to_json(r)["verify"]["reference"]["verified"], false);
  // Without --verify the result has no such field (figures and schema as before).
  result::TestResult plain;
  plain.config.n_prompt = 8;
  EXPECT_FALSE(result::to_json(plain).contains("verify"));
}

// compare lists the tests both runs continued the --verify prompt in, and where they part.
TEST(GreedyCheck, CompareNamesWhereTwoRunsContinuationsPart) {
  auto doc = [](std::vector<int32_t> tokens) {
    result::TestResult r;
    r.config.n_gen = 4;
    r.verify = continuation({1, 2}, std::move(tokens));
    return nlohmann::json{{"results", nlohmann::json::array({result::to_json(r)})}};
  };
  auto parts = analysis::compare_continuations(doc({5, 6, 7}), doc({5, 9, 7}));
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].test, doc({5})["results"][0]["test"].get<std::string>());
  EXPECT_EQ(parts[0].compared, 3);
  EXPECT_EQ(parts[0].first_divergence, 1);
  const auto same = analysis::compare_continuations(doc({5, 6, 7}), doc({5, 6, 7}));
  ASSERT_EQ(same.size(), 1u);
  EXPECT_EQ(same[0].first_divergence, -1);
  // Without --verify on one side there is nothing to compare.
  EXPECT_TRUE(analysis::compare_continuations(doc({5}), nlohmann::json{{"results", nlohmann::json::array()}})
                  .empty());
}
