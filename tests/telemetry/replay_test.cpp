// Replays tests/fixtures/sysfs/replay-throttle: a big-cluster clock that halves, a
// temperature that rises, battery drain that grows and a cgroup that starts throttling,
// and checks the per-phase figures worked out by hand below.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "core/clock.h"
#include "core/events.h"
#include "telemetry/chrome_trace.h"
#include "telemetry/sampler.h"
#include "telemetry/summary.h"
#include "fixture_util.h"

using namespace edgeprobe;
using namespace edgeprobe::telemetry;
using edgeprobe::telemetry::testing::fixture;
using edgeprobe::telemetry::testing::ScratchRoot;

namespace {

constexpr int64_t kMs = 1'000'000;

struct Replay {
  Timeline timeline;
  std::vector<std::string> unavailable;
};

Replay replay() {
  const std::string dir = fixture("replay-throttle");
  ScratchRoot root("replay");
  root.overlay(dir + "/base");
  root.overlay(dir + "/steps/t0");
  Sampler sampler({.hz = 20, .sysfs_root = root.path(), .pid = 0}, RunClock());
  std::ifstream schedule(dir + "/schedule.txt");
  std::string step;
  int64_t ms = 0;
  int steps = 0;
  for (std::string line; std::getline(schedule, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream(line) >> step >> ms;
    root.overlay(dir + "/steps/" + step);
    sampler.sample_at(ms * kMs);
    ++steps;
  }
  EXPECT_EQ(steps, 4);
  return {sampler.timeline(), sampler.unavailable()};
}

const ClusterPhase& cluster(const PhaseTelemetry& p, const std::string& name) {
  for (const auto& c : p.clusters) {
    if (c.name == name) return c;
  }
  throw std::runtime_error("no cluster " + name);
}

}  // namespace

TEST(Replay, ClockDropShowsInDecodeNotPrefill) {
  const auto r = replay();
  ASSERT_EQ(r.timeline.size(), 4u);
  const auto prefill = summarize_phase(r.timeline, 0, 1000 * kMs, 256);
  const auto decode = summarize_phase(r.timeline, 1000 * kMs, 3000 * kMs, 40);
  EXPECT_DOUBLE_EQ(*cluster(prefill, "policy2").mean_freq_share, 1.0);
  EXPECT_DOUBLE_EQ(*cluster(prefill, "policy2").min_freq_share, 1.0);
  // 2.4 -> 1.2 GHz at 2 s, 1.2 to the end: trapezoids give (1.8 + 1.2) / 2 = 1.5 GHz.
  EXPECT_DOUBLE_EQ(*cluster(decode, "policy2").mean_freq_khz, 1'500'000);
  EXPECT_DOUBLE_EQ(*cluster(decode, "policy2").mean_freq_share, 0.625);
  EXPECT_DOUBLE_EQ(*cluster(decode, "policy2").min_freq_share, 0.5);
  EXPECT_EQ(cluster(decode, "policy2").role, "big");
  EXPECT_DOUBLE_EQ(*cluster(decode, "policy0").mean_freq_share, 1.0);
  // The clock fell without a scaling_max_freq cap: the governor chose it.
  EXPECT_DOUBLE_EQ(*cluster(decode, "policy2").min_cap_share, 1.0);
}

TEST(Replay, TimeInStateResidencyAgreesWithSampledClock) {
  const auto r = replay();
  const auto decode = summarize_phase(r.timeline, 1000 * kMs, 3000 * kMs, 40);
  const auto& big = cluster(decode, "policy2");
  // 50 ticks at 2.4 GHz and 150 at 1.2 GHz (10 ms each) between t1 and t3.
  ASSERT_EQ(big.time_in_state_ms.size(), 2u);
  EXPECT_EQ(big.time_in_state_ms[0], (std::pair<int64_t, double>{1200000, 1500}));
  EXPECT_EQ(big.time_in_state_ms[1], (std::pair<int64_t, double>{2400000, 500}));
  EXPECT_DOUBLE_EQ(*big.residency_mean_freq_share, 0.625);
}

TEST(Replay, RisingTemperatureGivesPerPhaseMaximum) {
  const auto r = replay();
  const auto prefill = summarize_phase(r.timeline, 0, 1000 * kMs, 256);
  const auto decode = summarize_phase(r.timeline, 1000 * kMs, 3000 * kMs, 40);
  ASSERT_EQ(prefill.thermal.size(), 1u);
  EXPECT_EQ(prefill.thermal[0].zone, "cpu-big");
  EXPECT_DOUBLE_EQ(prefill.thermal[0].max_temp_c, 55);
  EXPECT_DOUBLE_EQ(decode.thermal[0].max_temp_c, 70);
  EXPECT_DOUBLE_EQ(decode.thermal[0].mean_temp_c, (60 + 67.5) / 2);
}

TEST(Replay, EnergyFromBatteryDischargeIntegratesPower) {
  const auto r = replay();
  const auto prefill = summarize_phase(r.timeline, 0, 1000 * kMs, 256);
  const auto decode = summarize_phase(r.timeline, 1000 * kMs, 3000 * kMs, 40);
  // 4.0 V x 0.5 A = 2 W in prefill; decode 2 -> 3 W then 3 W: 2.5 J + 3 J.
  EXPECT_EQ(prefill.energy_source, "battery");
  EXPECT_NEAR(*prefill.energy_j, 2.0, 1e-9);
  EXPECT_NEAR(*decode.energy_j, 5.5, 1e-9);
  EXPECT_NEAR(*decode.mean_power_w, 2.75, 1e-9);
  EXPECT_NEAR(*decode.joules_per_token, 5.5 / 40, 1e-12);
  // 0.625 A·s + 0.75 A·s = 1.375 A·s = 0.3819 mAh; charge_counter fell 400 µAh.
  EXPECT_NEAR(*decode.discharge_mah, 1.375 / 3.6, 1e-9);
  EXPECT_NEAR(*decode.charge_counter_drop_mah, 0.4, 1e-9);
}

TEST(Replay, ThrottlingAndCompetingLoadPerPhase) {
  const auto r = replay();
  const auto prefill = summarize_phase(r.timeline, 0, 1000 * kMs, 256);
  const auto decode = summarize_phase(r.timeline, 1000 * kMs, 3000 * kMs, 40);
  EXPECT_DOUBLE_EQ(*prefill.throttled_ms, 0);
  EXPECT_NEAR(*decode.throttled_ms, 400, 1e-6);
  EXPECT_DOUBLE_EQ(*decode.throttled_periods, 7);
  // Other processes: 50 of 400 ticks in prefill, 250 of 800 in decode.
  EXPECT_NEAR(*prefill.other_cpu_share, 0.125, 1e-12);
  EXPECT_NEAR(*decode.other_cpu_share, 0.3125, 1e-12);
  EXPECT_NEAR(*decode.process_cpu_share, 0.5, 1e-12);
}

TEST(Replay, ThreadTimeFollowsMigrationToLittleCores) {
  const auto r = replay();
  const auto prefill = summarize_phase(r.timeline, 0, 1000 * kMs, 256);
  const auto decode = summarize_phase(r.timeline, 1000 * kMs, 3000 * kMs, 40);
  EXPECT_NEAR(*cluster(prefill, "policy2").thread_time_share, 0.8, 1e-12);
  EXPECT_NEAR(*cluster(prefill, "policy0").thread_time_share, 0.2, 1e-12);
  EXPECT_NEAR(*cluster(decode, "policy2").thread_time_share, 0.5, 1e-12);
  EXPECT_NEAR(*cluster(decode, "policy0").thread_time_share, 0.5, 1e-12);
}

TEST(Replay, MemoryAndContextSwitchesPerPhase) {
  const auto r = replay();
  const auto decode = summarize_phase(r.timeline, 1000 * kMs, 3000 * kMs, 40);
  EXPECT_DOUBLE_EQ(*decode.max_rss_kb, 610000);
  EXPECT_DOUBLE_EQ(*decode.peak_rss_kb, 615000);
  EXPECT_DOUBLE_EQ(*decode.voluntary_ctx_switches, 50);
  EXPECT_DOUBLE_EQ(*decode.involuntary_ctx_switches, 7);
}

TEST(Replay, JsonCarriesUnitsInFieldNames) {
  const auto r = replay();
  const auto j = to_json(summarize_phase(r.timeline, 1000 * kMs, 3000 * kMs, 40));
  EXPECT_NEAR(j["energy_j"].get<double>(), 5.5, 1e-9);
  EXPECT_NEAR(j["joules_per_token"].get<double>(), 0.1375, 1e-9);
  EXPECT_NEAR(j["mean_power_w"].get<double>(), 2.75, 1e-9);
  EXPECT_NEAR(j["throttled_ms"].get<double>(), 400, 1e-6);
  EXPECT_NEAR(j["other_cpu_share"].get<double>(), 0.3125, 1e-9);
  EXPECT_DOUBLE_EQ(j["thermal"]["cpu-big"]["max_temp_c"].get<double>(), 70);
  EXPECT_DOUBLE_EQ(j["clusters"][1]["mean_freq_share"].get<double>(), 0.625);
  EXPECT_DOUBLE_EQ(j["clusters"][1]["min_freq_share"].get<double>(), 0.5);
  EXPECT_EQ(j["energy_source"], "battery");
}

TEST(Replay, NoFigureForAPhaseOutsideTheSampledSpan) {
  const auto r = replay();
  const auto later = summarize_phase(r.timeline, 4000 * kMs, 5000 * kMs, 10);
  EXPECT_FALSE(later.energy_j.has_value());
  EXPECT_FALSE(later.throttled_ms.has_value());
  EXPECT_FALSE(later.other_cpu_share.has_value());
  EXPECT_FALSE(later.clusters[1].mean_freq_share.has_value());
  EXPECT_TRUE(later.thermal.empty());
}

TEST(Replay, ChargingBatteryIsNotUsedAsEnergyTotal) {
  const std::string dir = fixture("replay-throttle");
  ScratchRoot root("charging");
  root.overlay(dir + "/base");
  root.overlay(dir + "/steps/t0");
  root.write("/sys/class/power_supply/battery/status", "Charging");
  Sampler sampler({.hz = 20, .sysfs_root = root.path(), .pid = 0}, RunClock());
  sampler.sample_at(0);
  root.overlay(dir + "/steps/t1");
  sampler.sample_at(1000 * kMs);
  const auto p = summarize_phase(sampler.timeline(), 0, 1000 * kMs, 10);
  EXPECT_FALSE(p.energy_j.has_value());
  ASSERT_FALSE(p.notes.empty());
  EXPECT_NE(p.notes[0].find("not discharging"), std::string::npos);
  EXPECT_LT(*p.discharge_mah, 0);  // charge flowed in
}

TEST(Replay, SliceGivesTheSameFiguresAsTheWholeTimeline) {
  const auto r = replay();
  for (const auto& [start, end] : {std::pair<int64_t, int64_t>{0, 1000 * kMs}, {1000 * kMs, 3000 * kMs}, {1500 * kMs, 2500 * kMs}}) {
    const auto slice = r.timeline.slice(start, end);
    EXPECT_LE(slice.size(), r.timeline.size());
    const auto a = to_json(summarize_phase(r.timeline, start, end, 40));
    auto b = to_json(summarize_phase(slice, start, end, 40));
    EXPECT_EQ(a, b) << a.dump() << "\n" << b.dump();
  }
  EXPECT_EQ(r.timeline.slice(1500 * kMs, 1600 * kMs).size(), 2u);  // only the bracketing samples
}
