// The frontier's judgement by hand: paired ratios and which points are dominated.
#include "fidelity/frontier.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace edgeprobe::fidelity;

namespace {

FrontierPoint point(const std::string& quant, double kld, double kld_err, std::vector<double> decode_ratio,
                    uint64_t size) {
  FrontierPoint p;
  p.quant = quant;
  p.fidelity.kld = {kld, kld_err};
  p.decode_ratio = std::move(decode_ratio);
  p.prefill_ratio = p.decode_ratio;
  p.size_bytes = size;
  return p;
}

FrontierPoint reference() {
  auto p = point("reference", 0, 0, {1, 1, 1}, 100);
  p.is_reference = true;
  return p;
}

}  // namespace

TEST(FrontierRatio, MedianOfTheRoundsRatiosNotTheRatioOfMedians) {
  // Round by round a is twice b although the rounds' speeds swing tenfold.
  EXPECT_DOUBLE_EQ(median_paired_ratio({2, 20, 0.2}, {1, 10, 0.1}), 2);
  // Rounds missing on one side or unmeasured (0) are left out.
  EXPECT_DOUBLE_EQ(median_paired_ratio({3, 0, 6}, {1, 1}), 3);
  EXPECT_DOUBLE_EQ(median_paired_ratio({}, {1}), 0);
}

TEST(FrontierSpeed, ASignTestOverTheRounds) {
  // Faster in 5 of 5 rounds: an even chance gives that 1 time in 32.
  EXPECT_EQ(compare_speed({2, 3, 1, 5, 2}, {1, 2, 0.5, 4, 1}), SpeedOrder::kFaster);
  EXPECT_EQ(compare_speed({1, 2, 0.5, 4, 1}, {2, 3, 1, 5, 2}), SpeedOrder::kSlower);
  // 4 of 5 (p = 0.19), or 3 of 3 (p = 0.125): not resolved, however large the ratios.
  EXPECT_EQ(compare_speed({9, 9, 9, 9, 0.5}, {1, 1, 1, 1, 1}), SpeedOrder::kUnresolved);
  EXPECT_EQ(compare_speed({9, 9, 9}, {1, 1, 1}), SpeedOrder::kUnresolved);
  // 8 of 9 (p = 0.02) resolves; ties and unmeasured rounds carry no sign.
  EXPECT_EQ(compare_speed({2, 2, 2, 2, 2, 2, 2, 2, 0.5, 1, 0}, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}),
            SpeedOrder::kFaster);
}

TEST(FrontierDominance, CloserAndFasterDominates) {
  std::vector<FrontierPoint> pts{reference(), point("q4_0", 0.02, 0.001, {2.0, 2.2, 1.9, 2.0, 2.1}, 40),
                                 point("q4_k_m", 0.01, 0.001, {2.1, 2.3, 2.0, 2.2, 2.2}, 42)};
  mark_dominated(pts);
  EXPECT_EQ(pts[1].dominated_by, "q4_k_m");
  EXPECT_FALSE(pts[1].unresolved);
  EXPECT_NE(pts[1].dominated_why.find("5 % larger"), std::string::npos) << pts[1].dominated_why;
  EXPECT_TRUE(pts[2].dominated_by.empty());
  EXPECT_TRUE(pts[0].dominated_by.empty());  // the reference is the yardstick
}

TEST(FrontierDominance, FasterButFartherIsOnTheFront) {
  std::vector<FrontierPoint> pts{reference(), point("q8_0", 0.001, 0.0001, {1.5, 1.5, 1.5, 1.5, 1.5}, 60),
                                 point("q3_k_m", 0.05, 0.001, {2.5, 2.4, 2.6, 2.5, 2.5}, 30)};
  mark_dominated(pts);
  EXPECT_TRUE(pts[1].dominated_by.empty());
  EXPECT_TRUE(pts[2].dominated_by.empty());
}

TEST(FrontierDominance, CloserAtASpeedTheRoundsDidNotSeparateIsUnresolved) {
  std::vector<FrontierPoint> pts{reference(), point("q2_k", 0.03, 0.001, {1.5, 0.7, 2.0, 1.1, 0.9}, 25),
                                 point("q8_0", 0.0001, 0.00001, {1.4, 0.8, 1.9, 1.0, 1.0}, 57)};
  mark_dominated(pts);
  EXPECT_EQ(pts[1].dominated_by, "q8_0");
  EXPECT_TRUE(pts[1].unresolved);
  EXPECT_NE(pts[1].dominated_why.find("more --rounds"), std::string::npos) << pts[1].dominated_why;
}

TEST(FrontierDominance, AGapWithinTheUncertaintyIsNoDominance) {
  // 0.010 against 0.011 with errors of 0.001 each: the gap is under twice the combined error.
  std::vector<FrontierPoint> pts{reference(), point("a", 0.011, 0.001, {2, 2, 2, 2, 2}, 40),
                                 point("b", 0.010, 0.001, {2.2, 2.2, 2.2, 2.2, 2.2}, 40)};
  mark_dominated(pts);
  EXPECT_TRUE(pts[1].dominated_by.empty());
}

TEST(FrontierDominance, TheClosestProvenDominatorIsNamed) {
  std::vector<FrontierPoint> pts{reference(), point("q2_k", 0.1, 0.001, {1, 1, 1}, 20),
                                 point("q4_k_m", 0.01, 0.001, {1.2, 1.2, 1.2}, 40),
                                 point("q3_k_m", 0.04, 0.001, {1.1, 1.1, 1.1}, 30)};
  mark_dominated(pts);
  EXPECT_EQ(pts[1].dominated_by, "q4_k_m");
  EXPECT_EQ(pts[3].dominated_by, "q4_k_m");
}

TEST(FrontierReport, MdNamesTheDominatedAndJsonKeepsTheRounds) {
  Frontier f;
  f.base = "trained:main";
  f.rounds = 3;
  f.points = {reference(), point("q4_0", 0.02, 0.001, {2.0, 2.2, 1.9, 2.0, 2.0}, 40),
              point("q4_k_m", 0.01, 0.001, {2.1, 2.3, 2.0, 2.1, 2.1}, 42)};
  mark_dominated(f.points);
  std::ostringstream md;
  write_frontier(f, "md", md);
  EXPECT_NE(md.str().find("- q4_0 is dominated: q4_k_m is closer"), std::string::npos) << md.str();
  std::ostringstream js;
  write_frontier(f, "json", js);
  const auto j = nlohmann::json::parse(js.str());
  EXPECT_EQ(j["points"][1]["dominated_by"], "q4_0" == j["points"][1]["quant"] ? "q4_k_m" : "");
  EXPECT_EQ(j["points"][2]["decode_ratio_per_round"].size(), 5u);
  EXPECT_TRUE(j["points"][2]["dominated_by"].is_null());
}
