// When speculative decoding pays: every figure here is computed by hand from the formula in
// docs/speculative.md ("When it pays"), so a change to the model shows up.
#include "predict/speculative.h"

#include <gtest/gtest.h>

using namespace edgeprobe::predict;

TEST(SpecPredict, ExpectedTokensFollowTheGeometricSeries) {
  EXPECT_DOUBLE_EQ(expected_tokens(0.0, 4), 1.0);        // every proposal rejected: the target's token alone
  EXPECT_DOUBLE_EQ(expected_tokens(1.0, 4), 5.0);        // every proposal accepted: k + 1
  EXPECT_DOUBLE_EQ(expected_tokens(0.5, 2), 1.75);       // 1 + 0.5 + 0.25
  EXPECT_DOUBLE_EQ(expected_tokens(0.3, 1), 1.3);        // k = 1: 1 + alpha
  EXPECT_NEAR(expected_tokens(0.999999, 3), 4.0, 1e-4);  // continuous up to alpha = 1
  EXPECT_DOUBLE_EQ(expected_tokens(0.7, 0), 1.0);        // no draft
}

TEST(SpecPredict, ExpectedTokensFromMeasuredPositionsAddTheirRates) {
  EXPECT_DOUBLE_EQ(expected_tokens(std::vector<double>{0.99, 0.17}), 2.16);
  EXPECT_DOUBLE_EQ(expected_tokens(std::vector<double>{}), 1.0);
}

TEST(SpecPredict, SpeedUpIsTokensPerStepOverTheStepsCost) {
  // 2 tokens per step, each plain token 10 ms; a step: 2 draft tokens of 2 ms, a batch of 15 ms.
  EXPECT_DOUBLE_EQ(speed_up(2.0, 2, {10, 2, 15}), 20.0 / 19.0);
  EXPECT_DOUBLE_EQ(speed_up(1.0, 1, {10, 5, 15}), 0.5);
  EXPECT_EQ(speed_up(2.0, 2, {0, 2, 15}), 0);  // costs unknown
}

TEST(SpecPredict, BreakEvenSolvesSpeedUpOne) {
  // k = 1: a step costs 2 + 13 = 15 ms = 1.5 target steps, so E = 1 + alpha = 1.5.
  EXPECT_NEAR(*break_even_acceptance(1, {10, 2, 13}), 0.5, 1e-12);
  // k = 2: 2 + 15.5 = 17.5 ms: 1 + alpha + alpha^2 = 1.75 at alpha = 0.5.
  EXPECT_NEAR(*break_even_acceptance(2, {10, 1, 15.5}), 0.5, 1e-12);
  for (int k : {1, 2, 4, 8})
    for (double td : {0.5, 1.0, 3.0}) {
      const SpecCosts c{10, td, 10 + 2.0 * k};
      const auto alpha = break_even_acceptance(k, c);
      ASSERT_TRUE(alpha) << k << " " << td;
      EXPECT_NEAR(speed_up(expected_tokens(*alpha, k), k, c), 1.0, 1e-9) << k << " " << td;
    }
}

TEST(SpecPredict, ADraftCostingMoreThanTheTargetNeverPays) {
  // Each proposal costs 12 ms against a 10 ms step: even all accepted, k + 1 tokens cost more.
  EXPECT_FALSE(break_even_acceptance(1, {10, 12, 10}));
  EXPECT_FALSE(break_even_acceptance(4, {10, 12, 10}));
  EXPECT_LT(speed_up(expected_tokens(1.0, 4), 4, {10, 12, 10}), 1.0);
}

TEST(SpecPredict, EdgeCasesOfTheBreakEven) {
  EXPECT_EQ(*break_even_acceptance(2, {10, 0, 5}), 0.0);   // cheaper than a step with nothing accepted
  EXPECT_EQ(*break_even_acceptance(2, {10, 0, 10}), 0.0);  // exactly a step: pays at alpha 0
  EXPECT_NEAR(*break_even_acceptance(2, {10, 5, 20}), 1.0, 1e-12);  // 3 steps' cost: only at alpha 1
  EXPECT_FALSE(break_even_acceptance(0, {10, 1, 10}));              // no draft
  EXPECT_FALSE(break_even_acceptance(2, {0, 1, 10}));               // no target cost
}

TEST(SpecPredict, AcceptanceForTokensInvertsTheSeries) {
  EXPECT_NEAR(acceptance_for_tokens(1.75, 2), 0.5, 1e-12);
  EXPECT_NEAR(acceptance_for_tokens(expected_tokens(0.24, 4), 4), 0.24, 1e-12);
  EXPECT_EQ(acceptance_for_tokens(1.0, 4), 0.0);  // nothing beyond the target's own token
  EXPECT_EQ(acceptance_for_tokens(0.5, 4), 0.0);  // below the floor: clamped
  EXPECT_EQ(acceptance_for_tokens(5.0, 4), 1.0);  // all accepted
  EXPECT_EQ(acceptance_for_tokens(9.0, 4), 1.0);  // above k + 1: clamped
}
