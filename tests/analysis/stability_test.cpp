#include "analysis/stability.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <numbers>
#include <random>

namespace edgeprobe::analysis {
namespace {

// Box-Muller over mt19937_64 (whose output the standard fixes), so the series is the
// same with every standard library, unlike std::normal_distribution.
std::vector<double> noisy_steps(const std::vector<std::pair<size_t, double>>& segments, double sd, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&] { return (static_cast<double>(rng() >> 11) + 0.5) / 9007199254740992.0; };
  std::vector<double> xs;
  for (const auto& [count, level] : segments)
    for (size_t i = 0; i < count; ++i) {
      const double z = std::sqrt(-2 * std::log(uniform())) * std::cos(2 * std::numbers::pi * uniform());
      xs.push_back(level + sd * z);
    }
  return xs;
}

TEST(Stability, ChangePointsFoundAtKnownBreaksWithinOne) {
  // MELT-like: throughput drops at turn 20 and recovers at turn 32.
  for (uint64_t seed : {1u, 2u, 3u, 4u, 5u}) {
    const std::vector<double> xs = noisy_steps({{20, 10.0}, {12, 7.0}, {18, 10.0}}, 0.3, seed);
    const std::vector<ChangePoint> cps = detect_change_points(xs);
    ASSERT_EQ(cps.size(), 2u) << "seed " << seed;
    EXPECT_LE(std::labs(static_cast<long>(cps[0].index) - 20), 1) << "seed " << seed;
    EXPECT_LE(std::labs(static_cast<long>(cps[1].index) - 32), 1) << "seed " << seed;
    EXPECT_NEAR(cps[0].mean_before, 10.0, 0.3);
    EXPECT_NEAR(cps[0].mean_after, 7.0, 0.3);
    EXPECT_NEAR(cps[1].mean_after, 10.0, 0.3);
    EXPECT_LT(cps[0].relative_change(), -0.25);
  }
}

TEST(Stability, FlatNoisySeriesHasNoChangePoints) {
  int false_alarms = 0;
  for (uint64_t seed = 10; seed < 30; ++seed)
    false_alarms += static_cast<int>(detect_change_points(noisy_steps({{50, 10.0}}, 0.3, seed)).size());
  // The 4 log n penalty keeps false alarms rare; allow one in twenty series.
  EXPECT_LE(false_alarms, 1);
}

TEST(Stability, SingleOutlierIsASpikeNotAChangePoint) {
  std::vector<double> xs = noisy_steps({{40, 10.0}}, 0.2, 7);
  xs[17] = 4.0;  // one turn stalled
  const std::vector<Spike> spikes = detect_spikes(xs);
  ASSERT_EQ(spikes.size(), 1u);
  EXPECT_EQ(spikes[0].index, 17u);
  EXPECT_LT(spikes[0].robust_z, -3.5);
  EXPECT_TRUE(detect_change_points(xs).empty());
}

TEST(Stability, LevelShiftIsNotMistakenForSpikes) {
  const std::vector<double> xs = noisy_steps({{25, 10.0}, {25, 6.0}}, 0.2, 9);
  EXPECT_TRUE(detect_spikes(xs).empty());
  const std::vector<ChangePoint> cps = detect_change_points(xs);
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps[0].index, 25u);
}

TEST(Stability, LongSeriesWithThreeBreaksIsSegmentedExactly) {
  const std::vector<double> xs = noisy_steps({{1500, 20.0}, {1000, 18.0}, {1500, 21.0}, {1000, 15.0}}, 0.5, 11);
  const std::vector<ChangePoint> cps = detect_change_points(xs);
  ASSERT_EQ(cps.size(), 3u);
  EXPECT_NEAR(static_cast<double>(cps[0].index), 1500, 3);
  EXPECT_NEAR(static_cast<double>(cps[1].index), 2500, 3);
  EXPECT_NEAR(static_cast<double>(cps[2].index), 4000, 3);
}

TEST(Stability, CoefficientOfVariationMatchesHandComputation) {
  const std::vector<double> xs{9, 10, 11};  // mean 10, sample sd 1
  ASSERT_TRUE(coefficient_of_variation(xs).has_value());
  EXPECT_DOUBLE_EQ(*coefficient_of_variation(xs), 0.1);
  EXPECT_FALSE(coefficient_of_variation(std::vector<double>{5}).has_value());
  EXPECT_FALSE(coefficient_of_variation(std::vector<double>{1, -1}).has_value());
}

TEST(Stability, DriftComparesFirstAndLastDecile) {
  std::vector<double> xs(20, 9.0);
  xs[0] = xs[1] = 10.0;    // first decile: 2 points
  xs[18] = xs[19] = 8.0;   // last decile
  const std::optional<Drift> d = drift(xs);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->window, 2u);
  EXPECT_DOUBLE_EQ(d->first_mean, 10.0);
  EXPECT_DOUBLE_EQ(d->last_mean, 8.0);
  EXPECT_DOUBLE_EQ(d->ratio, 0.8);
  EXPECT_FALSE(drift(std::vector<double>{3}).has_value());
}

TEST(Stability, NonFiniteSeriesGivesNoResultsRatherThanNonsense) {
  std::vector<double> xs = noisy_steps({{20, 10.0}, {20, 5.0}}, 0.2, 3);
  xs[7] = std::nan("");
  EXPECT_FALSE(coefficient_of_variation(xs).has_value());
  EXPECT_FALSE(drift(xs).has_value());
  EXPECT_TRUE(detect_change_points(xs).empty());
  EXPECT_TRUE(detect_spikes(xs).empty());
}

TEST(Stability, ConstantSeriesIsStableEverywhere) {
  const std::vector<double> xs(30, 12.5);
  const StabilityReport r = analyse_stability(xs);
  EXPECT_EQ(r.n, 30u);
  EXPECT_DOUBLE_EQ(*r.cv, 0.0);
  EXPECT_DOUBLE_EQ(r.drift->ratio, 1.0);
  EXPECT_TRUE(r.change_points.empty());
  EXPECT_TRUE(r.spikes.empty());
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["change_points"].size(), 0u);
  EXPECT_DOUBLE_EQ(j["drift"]["ratio"].get<double>(), 1.0);
}

}  // namespace
}  // namespace edgeprobe::analysis
