// The arithmetic of fidelity checked by hand: KL, top-1, losses, uncertainties, the
// compact reference's lower bound.
#include "fidelity/score.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

using namespace edgeprobe::fidelity;

namespace {

std::vector<double> softmax(const std::vector<float>& x) {
  double m = x[0];
  for (float v : x) m = std::max<double>(m, v);
  double s = 0;
  for (float v : x) s += std::exp(v - m);
  std::vector<double> p;
  for (float v : x) p.push_back(std::exp(v - m) / s);
  return p;
}

double kl(const std::vector<float>& ref, const std::vector<float>& model) {
  const auto p = softmax(ref), q = softmax(model);
  double k = 0;
  for (size_t i = 0; i < p.size(); ++i) k += p[i] * std::log(p[i] / q[i]);
  return k;
}

std::vector<float> random_row(std::mt19937& rng, int n, float spread) {
  std::normal_distribution<float> d(0, spread);
  std::vector<float> r(static_cast<size_t>(n));
  for (auto& v : r) v = d(rng);
  return r;
}

}  // namespace

TEST(FidelityScore, IdenticalRowsAgreeExactly) {
  const std::vector<float> r{1, 3, 2, -1};
  const auto s = score_full(r.data(), r.data(), 4, 2);
  EXPECT_NEAR(s.kld, 0, 1e-12);
  EXPECT_TRUE(s.same_top);
  EXPECT_DOUBLE_EQ(s.nll, s.nll_ref);
  EXPECT_NEAR(s.nll, -std::log(softmax(r)[2]), 1e-6);
}

TEST(FidelityScore, KlMatchesTheDefinitionAndShiftsDoNotMatter) {
  const std::vector<float> ref{0.f, std::log(2.f), std::log(5.f)};
  const std::vector<float> model{7.f, 7.f + std::log(3.f), 7.f + std::log(4.f)};  // shifted logits
  const auto s = score_full(ref.data(), model.data(), 3, 0);
  // P = (1,2,5)/8, Q = (1,3,4)/8
  const double want = 1. / 8 * std::log(1.0) + 2. / 8 * std::log(2. / 3) + 5. / 8 * std::log(5. / 4);
  EXPECT_NEAR(s.kld, want, 1e-6);
  EXPECT_TRUE(s.same_top);
  EXPECT_NEAR(s.nll_ref, std::log(8.0), 1e-6);
  EXPECT_NEAR(s.nll, std::log(8.0), 1e-6);
}

TEST(FidelityScore, TopOneTiesTakeTheFirstIndexAsLlamaPerplexity) {
  const std::vector<float> ref{1, 5, 5, 0};
  const std::vector<float> model{1, 4, 5, 0};
  EXPECT_FALSE(score_full(ref.data(), model.data(), 4, 0).same_top);  // ref's top is 1, model's 2
  const std::vector<float> model2{1, 5, 4, 0};
  EXPECT_TRUE(score_full(ref.data(), model2.data(), 4, 0).same_top);
}

TEST(FidelityScore, CompactIsExactWithTheWholeVocabularyAndALowerBoundBelowIt) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const int n = 300;
    const auto ref = random_row(rng, n, 3);
    auto model = ref;
    std::normal_distribution<float> noise(0, 0.3f);
    for (auto& v : model) v += noise(rng);
    const int next = trial * 7 % n;
    const auto full = score_full(ref.data(), model.data(), n, next);
    EXPECT_NEAR(full.kld, kl(ref, model), 1e-6);
    const auto all = score_compact(compact_row(ref.data(), n, n, next), model.data(), n, next);
    EXPECT_NEAR(all.kld, full.kld, 1e-5);
    for (int k : {1, 8, 32}) {
      const auto row = compact_row(ref.data(), n, k, next);
      ASSERT_EQ(row.ids.size(), static_cast<size_t>(k));
      const auto c = score_compact(row, model.data(), n, next);
      EXPECT_LE(c.kld, full.kld + 1e-6) << "k " << k;
      EXPECT_GE(c.kld, -1e-6);
      EXPECT_EQ(c.same_top, full.same_top);
      EXPECT_NEAR(c.nll, full.nll, 1e-5);
      EXPECT_NEAR(c.nll_ref, full.nll_ref, 1e-5);
      double mass = row.rest;
      for (float lp : row.logp) mass += std::exp(lp);
      EXPECT_NEAR(mass, 1.0, 1e-5);
    }
  }
}

// The samples of the rest make the KL estimable without bias: averaged over many rows (as a
// text's mean is), the estimate meets the full KL where the bucketed bound stays below it.
TEST(FidelityScore, SampledRestEstimatesTheFullKlWithoutBias) {
  std::mt19937 rng(11);
  const int n = 2000;
  double full = 0, bound = 0, sampled = 0;
  const int rows = 400;
  for (int r = 0; r < rows; ++r) {
    const auto ref = random_row(rng, n, 2);
    auto model = ref;
    std::normal_distribution<float> noise(0, 0.3f);
    for (auto& v : model) v += noise(rng);
    const auto f = score_full(ref.data(), model.data(), n, 0);
    const auto row = compact_row(ref.data(), n, 32, 0, 16, static_cast<uint64_t>(r));
    ASSERT_EQ(row.sample_ids.size(), 16u);
    for (size_t j = 0; j < row.sample_ids.size(); ++j) {
      EXPECT_EQ(std::find(row.ids.begin(), row.ids.end(), row.sample_ids[j]), row.ids.end())
          << "a sample from the top k";
      EXPECT_NEAR(row.sample_logp[j], std::log(softmax(ref)[static_cast<size_t>(row.sample_ids[j])]), 1e-5);
    }
    const auto c = score_compact(row, model.data(), n, 0);
    full += f.kld;
    bound += c.kld;
    sampled += c.kld_sampled;
  }
  EXPECT_LT(bound, 0.9 * full);
  EXPECT_NEAR(sampled / full, 1.0, 0.03) << "full " << full / rows << ", sampled " << sampled / rows;
  // The same seed draws the same samples.
  const auto ref = random_row(rng, n, 2);
  EXPECT_EQ(compact_row(ref.data(), n, 8, 0, 4, 9).sample_ids,
            compact_row(ref.data(), n, 8, 0, 4, 9).sample_ids);
}

TEST(FidelityScore, CompactRowIsSortedHighestFirstTiesByLowerId) {
  const std::vector<float> ref{2, 9, 9, 1, 5};
  const auto row = compact_row(ref.data(), 5, 3, 4);
  EXPECT_EQ(row.ids, (std::vector<int32_t>{1, 2, 4}));
  EXPECT_NEAR(row.next_logp, row.logp[2], 1e-7);
}

TEST(FidelitySummary, UncertaintiesAsLlamaPerplexityStatesThem) {
  std::vector<PositionScore> s;
  for (int i = 0; i < 20; ++i)
    s.push_back({0.01 * (i + 1), i % 4 != 0, 1.0 + 0.1 * (i % 3), 1.0 + 0.05 * (i % 2)});
  const auto m = summarize(s);
  EXPECT_EQ(m.positions, 20);
  EXPECT_NEAR(m.kld.value, 0.105, 1e-12);
  // var = E[x^2] - E[x]^2 over 0.01..0.20; err = sqrt(var/(n-1))
  double sum2 = 0;
  for (int i = 1; i <= 20; ++i) sum2 += 1e-4 * i * i;
  EXPECT_NEAR(m.kld.err, std::sqrt((sum2 / 20 - 0.105 * 0.105) / 19), 1e-12);
  EXPECT_NEAR(m.same_top.value, 0.75, 1e-12);
  EXPECT_NEAR(m.same_top.err, std::sqrt(0.75 * 0.25 / 19), 1e-12);
  EXPECT_NEAR(m.kld_max, 0.20, 1e-12);
  EXPECT_NEAR(m.kld_median, 0.105, 1e-12);
  EXPECT_NEAR(m.kld_p99, 0.19 + 0.81 * 0.01, 1e-9);  // 0.99 * 19 = 18.81 -> between the 19th and 20th
  EXPECT_NEAR(m.ppl.value, std::exp(m.ln_ppl_ratio.value + std::log(m.ppl_ref.value)), 1e-9);
}

TEST(FidelitySummary, FewPositionsHaveNoUncertainty) {
  std::vector<PositionScore> s(5, PositionScore{0.1, true, 1, 1});
  s[0].kld = 0.5;
  const auto m = summarize(s);
  EXPECT_EQ(m.kld.err, 0);
  EXPECT_EQ(summarize({}).positions, 0);
}
