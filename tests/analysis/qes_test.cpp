#include "analysis/qes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace edgeprobe::analysis {
namespace {

const QesComponent& component(const QesResult& r, const std::string& name) {
  auto it = std::find_if(r.components.begin(), r.components.end(), [&](const auto& c) { return c.name == name; });
  EXPECT_NE(it, r.components.end());
  return *it;
}

QesInputs full_inputs() {
  QesInputs in;
  in.ttft_ms = 2000;            // log-scale: 100 * (1 - ln 2 / ln 10) = 69.897
  in.missed_frame_share = 0.05; // 100 * (1 - 0.05 / 0.5) = 90
  in.throughput_cv = 0.05;      // 100 * (1 - 0.05 / 0.2) = 75
  in.drift_ratio = 0.91;        // 100 * (1 - 0.09 / 0.3) = 70
  in.peak_temp_c = 45;          // 100 * (48 - 45) / (48 - 43) = 60
  in.temp_sensor = "skin";
  return in;
}

TEST(Qes, AllComponentsMatchTheWorkedExample) {
  // The worked example of docs/qes.md.
  const QesResult r = compute_qes(full_inputs());
  const double ttft = 100 * (1 - std::log(2.0) / std::log(10.0));
  EXPECT_NEAR(ttft, 69.897, 1e-3);
  EXPECT_NEAR(*component(r, "responsiveness").score, (ttft + 90) / 2, 1e-9);
  EXPECT_NEAR(*component(r, "stability").score, 72.5, 1e-9);
  EXPECT_NEAR(*component(r, "temperature").score, 60.0, 1e-9);
  ASSERT_TRUE(r.total.has_value());
  EXPECT_NEAR(*r.total, 0.5 * (ttft + 90) / 2 + 0.3 * 72.5 + 0.2 * 60, 1e-9);
  EXPECT_NEAR(*r.total, 73.724, 1e-3);
  EXPECT_EQ(r.rests_on, (std::vector<std::string>{"responsiveness", "stability", "temperature"}));
  EXPECT_TRUE(r.unavailable.empty());
}

TEST(Qes, MissingTemperatureIsUnavailableAndTotalRestsOnTheRest) {
  QesInputs in = full_inputs();
  in.peak_temp_c.reset();
  in.temp_missing_reason = "no thermal zones readable";
  const QesResult r = compute_qes(in);
  const double ttft = 100 * (1 - std::log(2.0) / std::log(10.0));
  ASSERT_TRUE(r.total.has_value());
  EXPECT_NEAR(*r.total, (0.5 * (ttft + 90) / 2 + 0.3 * 72.5) / 0.8, 1e-9);  // 77.155
  EXPECT_EQ(r.rests_on, (std::vector<std::string>{"responsiveness", "stability"}));
  EXPECT_EQ(r.unavailable, (std::vector<std::string>{"temperature"}));
  const QesComponent& temp = component(r, "temperature");
  EXPECT_FALSE(temp.score.has_value());
  EXPECT_EQ(temp.parts.at(0).missing_reason, "no thermal zones readable");
  const nlohmann::json j = to_json(r);
  EXPECT_TRUE(j["components"][2]["score"].is_null());
  EXPECT_EQ(j["components"][2]["parts"][0]["unavailable"], "no thermal zones readable");
}

TEST(Qes, ComponentRestsOnItsAvailablePartOnly) {
  QesInputs in;
  in.ttft_ms = 500;  // at or under the 1 s target: 100
  const QesResult r = compute_qes(in);
  EXPECT_DOUBLE_EQ(*component(r, "responsiveness").score, 100.0);  // frames part unavailable
  EXPECT_DOUBLE_EQ(*r.total, 100.0);
  EXPECT_EQ(r.rests_on, (std::vector<std::string>{"responsiveness"}));
}

TEST(Qes, NothingMeasuredGivesNoScore) {
  const QesResult r = compute_qes(QesInputs{});
  EXPECT_FALSE(r.total.has_value());
  EXPECT_TRUE(r.rests_on.empty());
  EXPECT_EQ(r.unavailable.size(), 3u);
  EXPECT_TRUE(to_json(r)["total"].is_null());
}

TEST(Qes, SubScoresClampAtTheirThresholds) {
  const QesTargets t;
  EXPECT_DOUBLE_EQ(score_ttft(1000, t), 100);
  EXPECT_DOUBLE_EQ(score_ttft(10000, t), 0);
  EXPECT_DOUBLE_EQ(score_ttft(60000, t), 0);
  EXPECT_NEAR(score_ttft(std::sqrt(10.0) * 1000, t), 50, 1e-9);  // half-way on the log scale
  EXPECT_DOUBLE_EQ(score_missed_frames(0.0, t), 100);
  EXPECT_DOUBLE_EQ(score_missed_frames(0.8, t), 0);
  EXPECT_NEAR(score_cv(0.1, t), 50, 1e-9);
  EXPECT_NEAR(score_drift(1.15, t), 50, 1e-9);  // speeding up counts as drift too
  EXPECT_DOUBLE_EQ(score_temperature(30, t), 100);
  EXPECT_DOUBLE_EQ(score_temperature(50, t), 0);
}

TEST(Qes, NonFiniteInputIsTreatedAsUnavailable) {
  QesInputs in;
  in.ttft_ms = std::nan("");
  in.throughput_cv = 0.1;
  const QesResult r = compute_qes(in);
  EXPECT_EQ(r.rests_on, (std::vector<std::string>{"stability"}));
  EXPECT_DOUBLE_EQ(*r.total, 50.0);
}

TEST(Qes, InputsFromRawSeriesSkipFailedTurns) {
  const std::vector<double> ttft{300, std::nan(""), 500, 400};
  std::vector<double> decode(20, 10.0);
  decode[18] = decode[19] = 8.0;  // last decile slower
  decode[5] = std::nan("");       // a failed turn
  const QesInputs in = make_qes_inputs(ttft, decode, 0.02, std::nullopt);
  EXPECT_DOUBLE_EQ(*in.ttft_ms, 400);
  EXPECT_DOUBLE_EQ(*in.drift_ratio, 0.8);
  EXPECT_GT(*in.throughput_cv, 0);
  EXPECT_DOUBLE_EQ(*in.missed_frame_share, 0.02);
  EXPECT_FALSE(in.peak_temp_c.has_value());
  EXPECT_EQ(in.temp_missing_reason, "no temperature sensor readable");
  const QesResult r = compute_qes(in);
  EXPECT_EQ(r.unavailable, (std::vector<std::string>{"temperature"}));
}

TEST(Qes, OneTurnIsTooFewForStability) {
  const QesInputs in = make_qes_inputs(std::vector<double>{250}, std::vector<double>{12}, std::nullopt, 40.0, "skin");
  EXPECT_FALSE(in.throughput_cv.has_value());
  EXPECT_EQ(in.stability_missing_reason, "1 turns with a decode rate; need at least 2");
  const QesResult r = compute_qes(in);
  EXPECT_EQ(r.rests_on, (std::vector<std::string>{"responsiveness", "temperature"}));
  EXPECT_DOUBLE_EQ(*r.total, 100.0);
}

}  // namespace
}  // namespace edgeprobe::analysis
