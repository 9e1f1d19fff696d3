#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/stats.h"

using namespace edgeprobe;

TEST(Stats, MedianOfOddAndEvenSamples) {
  std::vector<double> odd{5, 1, 3};
  std::vector<double> even{4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(stats::summarize(odd).median, 3);
  EXPECT_DOUBLE_EQ(stats::summarize(even).median, 2.5);
}

TEST(Stats, QuantilesInterpolateBetweenClosestRanks) {
  std::vector<double> v{10, 20, 30, 40, 50};
  EXPECT_DOUBLE_EQ(stats::quantile(v, 0.25), 20);
  EXPECT_DOUBLE_EQ(stats::quantile(v, 0.9), 46);
  EXPECT_DOUBLE_EQ(stats::quantile(v, 1.0), 50);
  EXPECT_DOUBLE_EQ(stats::summarize(v).iqr(), 20);
}

TEST(Stats, SampleStddevUsesNMinusOne) {
  std::vector<double> v{2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_NEAR(stats::stddev(v), 2.138089935, 1e-9);
}

// llama-bench's stddev_ns wraps around in uint64 for samples of ~12 s (issues #22300,
// #24951); these are the samples from that report, whose true sd is 148894758 ns.
TEST(Stats, StddevOfLongSamplesDoesNotOverflow) {
  std::vector<double> ns{12140144300, 12308847400, 12225136900, 12154929400, 11909783400};
  EXPECT_NEAR(stats::stddev(ns), 148894758, 1.0);
}

TEST(Stats, EmptyAndSingleSamplesAreDefined) {
  std::vector<double> none, one{7};
  EXPECT_EQ(stats::summarize(none).n, 0u);
  EXPECT_DOUBLE_EQ(stats::summarize(one).median, 7);
  EXPECT_DOUBLE_EQ(stats::summarize(one).stddev, 0);
}

TEST(Stats, LatencyPercentilesReportTheTail) {
  std::vector<double> v(100);
  for (int i = 0; i < 100; ++i) v[static_cast<size_t>(i)] = i + 1;
  const auto p = stats::percentiles(v);
  EXPECT_NEAR(p.p50, 50.5, 1e-9);
  EXPECT_NEAR(p.p90, 90.1, 1e-9);
  EXPECT_NEAR(p.p99, 99.01, 1e-9);
  EXPECT_DOUBLE_EQ(p.max, 100);
}
