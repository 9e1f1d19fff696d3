// Parsed values and units from each fixture tree (tests/fixtures/sysfs/*/README.md says
// where each layout comes from).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "core/clock.h"
#include "telemetry/device_info.h"
#include "telemetry/file_reader.h"
#include "telemetry/sampler.h"
#include "telemetry/source.h"
#include "telemetry/summary.h"
#include "fixture_util.h"
#include "report/device_reporters.h"

using namespace edgeprobe;
using namespace edgeprobe::telemetry;
using edgeprobe::telemetry::testing::fixture;
using edgeprobe::telemetry::testing::ScratchRoot;
using edgeprobe::telemetry::testing::contains;
using edgeprobe::telemetry::testing::sample_once;
using edgeprobe::telemetry::testing::value_of;

namespace {




}  // namespace

// ---- Android phone ------------------------------------------------------------------

TEST(AndroidFixture, PoliciesBecomeLittleMidBigClusters) {
  const auto info = describe_device(FsRoot(fixture("android-phone-3cluster")));
  ASSERT_EQ(info.cpu.clusters.size(), 3u);
  EXPECT_EQ(info.cpu.clusters[0].name, "policy0");
  EXPECT_EQ(info.cpu.clusters[0].role, "little");
  EXPECT_EQ(info.cpu.clusters[0].cpus, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(info.cpu.clusters[1].role, "mid");
  EXPECT_EQ(info.cpu.clusters[1].cpus, (std::vector<int>{3, 4, 5, 6}));
  EXPECT_EQ(info.cpu.clusters[2].role, "big");
  EXPECT_EQ(info.cpu.clusters[2].cpus, (std::vector<int>{7}));
  EXPECT_EQ(info.cpu.clusters[2].max_khz, 3187200);
  EXPECT_EQ(info.cpu.clusters[2].min_khz, 595200);
  EXPECT_EQ(info.cpu.clusters[2].governor, "schedutil");
  EXPECT_EQ(info.cpu.clusters[2].capacity, 1024);
  EXPECT_EQ(info.cpu.online, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(AndroidFixture, SysinfoShowsThermalCapOnPrimeCore) {
  const auto info = describe_device(FsRoot(fixture("android-phone-3cluster")));
  const auto& prime = info.cpu.policies.at(2);
  EXPECT_EQ(prime.name, "policy7");
  EXPECT_EQ(prime.scaling_max_khz, 2515200);
  EXPECT_EQ(prime.cpuinfo_max_khz, 3187200);
  EXPECT_TRUE(prime.has_time_in_state);
  const std::string text = report::to_text(info);
  EXPECT_NE(text.find("policy7"), std::string::npos);
  EXPECT_NE(text.find("2515 MHz"), std::string::npos) << text;
}

TEST(AndroidFixture, ThermalZonesReadAsMillidegrees) {
  std::vector<std::string> unavailable;
  const auto zones = discover_thermal(FsRoot(fixture("android-phone-3cluster")), &unavailable);
  ASSERT_EQ(zones.size(), 13u);
  EXPECT_TRUE(unavailable.empty());
  EXPECT_EQ(zones[4].type, "cpu-1-1-usr");
  EXPECT_DOUBLE_EQ(*zones[4].temp_c, 53.4);
  EXPECT_DOUBLE_EQ(zones[4].divisor, 1000);
  // "socd" prints 12: read as whole degrees, not 0.012 C.
  EXPECT_EQ(zones[12].type, "socd");
  EXPECT_DOUBLE_EQ(zones[12].divisor, 1);
}

TEST(AndroidFixture, SamplerNormalisesMicroampsSign) {
  // This vendor reports +412000 µA while discharging, against the ABI's sign.
  const auto tl = sample_once(fixture("android-phone-3cluster"));
  EXPECT_DOUBLE_EQ(value_of(tl, "battery.discharge_current_ua"), 412000);
  EXPECT_DOUBLE_EQ(value_of(tl, "battery.voltage_uv"), 3965000);
  EXPECT_NEAR(value_of(tl, "battery.power_w"), 0.412 * 3.965, 1e-9);
  EXPECT_DOUBLE_EQ(value_of(tl, "battery.charge_counter_uah"), 3412000);
  EXPECT_DOUBLE_EQ(value_of(tl, "battery.temp_c"), 31.2);  // power_supply temp: tenths of a degree
  EXPECT_DOUBLE_EQ(value_of(tl, "thermal.battery.temp_c"), 31.2);  // the thermal zone: millidegrees
}

TEST(AndroidFixture, SeriesNamesAreUnique) {
  const auto tl = sample_once(fixture("android-phone-3cluster"));
  std::vector<std::string> names;
  for (const auto& s : tl.series) names.push_back(s.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  EXPECT_GT(names.size(), 30u);
}

TEST(BatteryNormalisation, AbiNegativeSignAndMilliampsGiveTheSameDischargeCurrent) {
  // ABI sign (negative = discharging) in µA, and a gauge that reports mA.
  for (const auto& [current, voltage] : {std::pair{"-412000", "3965000"}, std::pair{"-412", "3965"}, std::pair{"412", "3965"}}) {
    ScratchRoot root("battery");
    root.write("/sys/class/power_supply/battery/type", "Battery");
    root.write("/sys/class/power_supply/battery/status", "Discharging");
    root.write("/sys/class/power_supply/battery/current_now", current);
    root.write("/sys/class/power_supply/battery/voltage_now", voltage);
    const auto tl = sample_once(root.path());
    EXPECT_DOUBLE_EQ(value_of(tl, "battery.discharge_current_ua"), 412000) << current;
    EXPECT_DOUBLE_EQ(value_of(tl, "battery.voltage_uv"), 3965000) << voltage;
  }
}

TEST(BatteryNormalisation, LaptopPowerNowGivesEnergyWithoutCurrent) {
  // ACPI batteries without current_now report power_now in µW (drivers/acpi/battery.c).
  ScratchRoot root("power_now");
  root.write("/sys/class/power_supply/BAT0/type", "Battery");
  root.write("/sys/class/power_supply/BAT0/status", "Discharging");
  root.write("/sys/class/power_supply/BAT0/power_now", "9500000");
  root.write("/sys/class/power_supply/BAT0/voltage_now", "11800000");
  Sampler sampler({.hz = 10, .sysfs_root = root.path(), .pid = 0}, RunClock());
  sampler.sample_at(0);
  root.write("/sys/class/power_supply/BAT0/power_now", "10500000");
  sampler.sample_at(2'000'000'000);
  const auto tl = sampler.timeline();
  EXPECT_DOUBLE_EQ(value_of(tl, "BAT0.power_w"), 9.5);
  const auto phase = summarize_phase(tl, 0, 2'000'000'000, 20);
  EXPECT_EQ(phase.energy_source, "battery");
  EXPECT_NEAR(*phase.energy_j, 20.0, 1e-9);  // (9.5 + 10.5) / 2 W for 2 s
  EXPECT_NEAR(*phase.joules_per_token, 1.0, 1e-9);
  EXPECT_FALSE(phase.discharge_mah.has_value());  // no current: no charge figure
}

TEST(BatteryNormalisation, ChargingCurrentIsNegativeDischarge) {
  EXPECT_DOUBLE_EQ(discharge_current_ua(800000, 1, "Charging"), -800000);
  EXPECT_DOUBLE_EQ(discharge_current_ua(-800000, 1, "Charging"), -800000);
  EXPECT_DOUBLE_EQ(discharge_current_ua(-300, 1000, "Discharging"), 300000);
  EXPECT_DOUBLE_EQ(discharge_current_ua(-5000, 1, "Full"), 5000);  // ABI sign when unsure
}

TEST(AndroidFixture, CgroupV1CpuControllerFoundThroughMountinfo) {
  const auto cg = discover_cgroup(FsRoot(fixture("android-phone-3cluster")), 0);
  EXPECT_EQ(cg.version, 1);
  EXPECT_EQ(cg.cpu_dir, "/dev/cpuctl");
  EXPECT_FALSE(cg.quota_cpus.has_value());  // cfs_quota_us = -1: no limit
  EXPECT_EQ(cg.nr_throttled, 0);
  EXPECT_EQ(cg.allowed_cpus, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(AndroidFixture, ProcStatAndThreadPlacementParsed) {
  const auto tl = sample_once(fixture("android-phone-3cluster"));
  // cpu0: user 2100 + system 900 + irq 30 + softirq 10 ticks busy; + idle 8000 + iowait 20.
  EXPECT_DOUBLE_EQ(value_of(tl, "cpu0.busy_s"), 30.40);
  EXPECT_DOUBLE_EQ(value_of(tl, "cpu0.total_s"), 110.60);
  EXPECT_DOUBLE_EQ(value_of(tl, "process.cpu_s"), (5120 + 610) / 100.0);
  EXPECT_DOUBLE_EQ(value_of(tl, "process.threads"), 4);
  EXPECT_DOUBLE_EQ(value_of(tl, "process.rss_kb"), 812344);
  EXPECT_DOUBLE_EQ(value_of(tl, "process.peak_rss_kb"), 845120);
  EXPECT_DOUBLE_EQ(value_of(tl, "process.voluntary_ctx_switches"), 112);
  EXPECT_DOUBLE_EQ(value_of(tl, "process.involuntary_ctx_switches"), 37);
  ASSERT_EQ(tl.threads.size(), 4u);
  std::vector<std::pair<int, int>> placement;
  for (const auto& t : tl.threads) placement.emplace_back(t.tid, t.cpu);
  std::sort(placement.begin(), placement.end());
  EXPECT_EQ(placement, (std::vector<std::pair<int, int>>{{4321, 1}, {4330, 7}, {4331, 5}, {4332, 4}}));
}

TEST(AndroidFixture, ThermalCapOnPrimeClusterShowsInPhaseSummary) {
  Sampler sampler({.hz = 10, .sysfs_root = fixture("android-phone-3cluster"), .pid = 0}, RunClock());
  sampler.sample_at(0);
  sampler.sample_at(1'000'000'000);
  const auto tl = sampler.timeline();
  EXPECT_DOUBLE_EQ(value_of(tl, "cpufreq.policy7.cap_khz"), 2515200);
  const auto phase = summarize_phase(tl, 0, 1'000'000'000, 1);
  EXPECT_NEAR(*phase.clusters[2].min_cap_share, 2515200.0 / 3187200.0, 1e-12);  // capped
  EXPECT_DOUBLE_EQ(*phase.clusters[1].min_cap_share, 1.0);                     // not capped
}

TEST(AndroidFixture, TimeInStateTableParsedInKhzAndTicks) {
  const auto tl = sample_once(fixture("android-phone-3cluster"));
  ASSERT_EQ(tl.time_in_state.size(), 3u);
  EXPECT_EQ(tl.time_in_state[2].policy, "policy7");
  EXPECT_EQ(tl.time_in_state[2].khz_ticks.front(), (std::pair<int64_t, int64_t>{595200, 70100}));
  EXPECT_DOUBLE_EQ(value_of(tl, "cpufreq.policy7.freq_khz"), 2515200);
}

// ---- Jetson Orin --------------------------------------------------------------------

TEST(JetsonFixture, Ina3221RailsFoundWhateverTheHwmonIndex) {
  const auto power = discover_power(FsRoot(fixture("jetson-orin")));
  ASSERT_EQ(power.rails.size(), 3u);  // the summation channel is skipped
  EXPECT_EQ(power.rails[0].label, "VDD_IN");
  EXPECT_EQ(power.rails[0].device, "1-0040/hwmon3");
  EXPECT_TRUE(power.rails[0].counts_in_total);
  EXPECT_FALSE(power.rails[1].counts_in_total);
  EXPECT_TRUE(power.batteries.empty());
  EXPECT_TRUE(contains(power.unavailable, "battery: unavailable"));
}

TEST(JetsonFixture, RailPowerIsMillivoltsTimesMilliamps) {
  const auto tl = sample_once(fixture("jetson-orin"));
  EXPECT_NEAR(value_of(tl, "ina3221.VDD_IN.power_w"), 5.072 * 1.420, 1e-9);
  EXPECT_NEAR(value_of(tl, "ina3221.VDD_SOC.power_w"), 5.068 * 0.352, 1e-9);
}

TEST(JetsonFixture, EqualClustersGetNoBigLittleRoles) {
  const auto cpus = discover_cpus(FsRoot(fixture("jetson-orin")));
  ASSERT_EQ(cpus.clusters.size(), 2u);
  EXPECT_EQ(cpus.clusters[0].role, "");
  EXPECT_EQ(cpus.clusters[1].cpus, (std::vector<int>{4, 5}));
  EXPECT_EQ(cpus.clusters[1].max_khz, 1510400);
}

TEST(JetsonFixture, CgroupV2WithoutQuota) {
  const auto cg = discover_cgroup(FsRoot(fixture("jetson-orin")), 0);
  EXPECT_EQ(cg.version, 2);
  EXPECT_EQ(cg.path, "/user.slice/user-1000.slice/session-3.scope");
  EXPECT_FALSE(cg.quota_us.has_value());
  EXPECT_EQ(cg.period_us, 100000);
  EXPECT_EQ(cg.cpuset, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

// ---- x86 laptop ---------------------------------------------------------------------

TEST(X86Fixture, HybridClustersComeFromCoreTypesNotPolicies) {
  const auto cpus = discover_cpus(FsRoot(fixture("x86-laptop-hybrid-rapl")));
  EXPECT_EQ(cpus.policies.size(), 8u);
  ASSERT_EQ(cpus.clusters.size(), 2u);
  EXPECT_EQ(cpus.clusters[0].name, "cpu_core");
  EXPECT_EQ(cpus.clusters[0].role, "p-core");
  EXPECT_EQ(cpus.clusters[0].cpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(cpus.clusters[0].max_khz, 4400000);
  EXPECT_EQ(cpus.clusters[1].name, "cpu_atom");
  EXPECT_EQ(cpus.clusters[1].policies.size(), 4u);
  EXPECT_EQ(cpus.clusters[1].max_khz, 3300000);
  EXPECT_EQ(cpus.clusters[1].governor, "powersave");
  EXPECT_FALSE(cpus.policies[0].has_time_in_state);  // intel_pstate keeps no stats
}

TEST(X86Fixture, PsysIsTheRaplTotalWhenPresent) {
  const auto power = discover_power(FsRoot(fixture("x86-laptop-hybrid-rapl")));
  ASSERT_EQ(power.rapl.size(), 4u);
  for (const auto& z : power.rapl) EXPECT_EQ(z.counts_in_total, z.name == "psys") << z.name;
  EXPECT_EQ(power.rapl[0].max_energy_range_uj, 262143328850);
  ASSERT_EQ(power.batteries.size(), 1u);
  EXPECT_DOUBLE_EQ(*power.batteries[0].discharge_current_ua, 1850000);
}

TEST(X86Fixture, CgroupV2QuotaAndThrottlingParsed) {
  const auto cg = discover_cgroup(FsRoot(fixture("x86-laptop-hybrid-rapl")), 0);
  EXPECT_EQ(cg.version, 2);
  EXPECT_DOUBLE_EQ(*cg.quota_cpus, 4.0);
  EXPECT_EQ(cg.nr_periods, 120);
  EXPECT_EQ(cg.nr_throttled, 15);
  EXPECT_EQ(cg.throttled_us, 412000);  // throttled_usec is µs in v2
  const auto tl = sample_once(fixture("x86-laptop-hybrid-rapl"));
  EXPECT_DOUBLE_EQ(value_of(tl, "cgroup.throttled_s"), 0.412);
}

TEST(RaplEnergy, CounterSurvivesWrapAround) {
  ScratchRoot root("rapl");
  const std::string zone = "/sys/class/powercap/intel-rapl:0";
  root.write(zone + "/name", "package-0");
  root.write(zone + "/max_energy_range_uj", "1000000000");
  root.write(zone + "/energy_uj", "999000000");
  Sampler sampler({.hz = 10, .sysfs_root = root.path(), .pid = 0}, RunClock());
  sampler.sample_at(0);
  root.write(zone + "/energy_uj", "2000000");  // wrapped: 1 J to the top, +1 µJ, +2 J
  sampler.sample_at(1'000'000'000);
  const auto tl = sampler.timeline();
  const auto s = tl.find("rapl:package-0.energy_j");
  ASSERT_TRUE(s);
  EXPECT_NEAR(*tl.counter_delta(*s, 0, 1'000'000'000), 3.000001, 1e-9);
  const auto phase = summarize_phase(tl, 0, 1'000'000'000, 10);
  EXPECT_EQ(phase.energy_source, "rapl");
  EXPECT_NEAR(*phase.mean_power_w, 3.000001, 1e-9);
}

// ---- absent sources -----------------------------------------------------------------

TEST(Unavailable, AbsentSourcesAreReportedOnceWithReason) {
  ScratchRoot root("empty");
  root.write("/sys/devices/system/cpu/online", "0-1");
  Sampler sampler({.hz = 10, .sysfs_root = root.path(), .pid = 0}, RunClock());
  for (int i = 0; i < 3; ++i) sampler.sample_at(i * 100'000'000);
  const auto lines = sampler.unavailable();
  EXPECT_TRUE(contains(lines, "thermal: unavailable: no /sys/class/thermal/thermal_zone* (absent)"));
  EXPECT_TRUE(contains(lines, "cpufreq: unavailable:"));
  EXPECT_TRUE(contains(lines, "rapl: unavailable:"));
  EXPECT_TRUE(contains(lines, "procstat: unavailable:"));  // no /proc/stat in this root
  // Three ticks, still one line per missing thing.
  std::vector<std::string> sorted = lines;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end());
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(), [](const auto& l) { return l.rfind("procstat", 0) == 0; }), 1);
  // No numbers made up for what is missing.
  const auto phase = summarize_phase(sampler.timeline(), 0, 200'000'000, 5);
  EXPECT_FALSE(phase.energy_j.has_value());
  EXPECT_FALSE(phase.other_cpu_share.has_value());
  EXPECT_FALSE(phase.throttled_ms.has_value());
  EXPECT_TRUE(phase.thermal.empty());
}

TEST(Unavailable, SysinfoJsonListsWhatIsMissing) {
  const auto j = to_json(describe_device(FsRoot(fixture("jetson-orin"))));
  bool battery_missing = false;
  for (const auto& line : j["unavailable"]) battery_missing |= line.get<std::string>().rfind("battery: unavailable", 0) == 0;
  EXPECT_TRUE(battery_missing);
  EXPECT_EQ(j["power"]["ina3221_rails"].size(), 3u);
  EXPECT_EQ(j["clusters"][0]["max_freq_khz"], 1510400);
}

// ---- parsing helpers ----------------------------------------------------------------

TEST(Parsing, TaskStatSurvivesCommWithSpacesAndParens) {
  TaskStat ts;
  ASSERT_TRUE(parse_task_stat(
      "77 (ggml (worker) 2) S 1 77 77 0 -1 4194304 10 0 0 0 123 45 0 0 20 0 3 0 100 1000 50 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 5 0 0 0 0 0",
      &ts));
  EXPECT_EQ(ts.utime_ticks, 123);
  EXPECT_EQ(ts.stime_ticks, 45);
  EXPECT_EQ(ts.num_threads, 3);
  EXPECT_EQ(ts.processor, 5);
  EXPECT_FALSE(parse_task_stat("garbage without parens", &ts));
}

TEST(Parsing, CpuListsInBothKernelSpellings) {
  EXPECT_EQ(parse_cpu_list("0-3,6,8-9"), (std::vector<int>{0, 1, 2, 3, 6, 8, 9}));
  EXPECT_EQ(parse_cpu_list("4 5 6 7"), (std::vector<int>{4, 5, 6, 7}));
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 6, 8, 9}), "0-3,6,8-9");
}

TEST(Parsing, TemperatureUnitGuessedFromMagnitude) {
  EXPECT_DOUBLE_EQ(guess_temp_divisor(45000), 1000);
  EXPECT_DOUBLE_EQ(guess_temp_divisor(452), 10);
  EXPECT_DOUBLE_EQ(guess_temp_divisor(45), 1);
  EXPECT_DOUBLE_EQ(guess_temp_divisor(-5000), 1000);
}

// ---- timeline arithmetic ------------------------------------------------------------

TEST(TimelineMath, CountersInterpolateAcrossSkippedTicks) {
  Timeline tl;
  SeriesInfo info;
  info.name = "process.cpu_s";
  info.metric = Metric::kSelfCpuS;
  tl.series.push_back(info);
  const double nan = std::nan("");
  tl.t_ns = {0, 100, 200, 300, 400};
  tl.values = {{0.0, nan, nan, 3.0, 4.0}};  // a source read at a third of the rate
  EXPECT_DOUBLE_EQ(*tl.counter_at(0, 150), 1.5);
  EXPECT_DOUBLE_EQ(*tl.counter_delta(0, 100, 350), 3.5 - 1.0);
  EXPECT_FALSE(tl.counter_at(0, 500).has_value());  // past the last sample: unknown
  EXPECT_FALSE(tl.counter_at(0, -1).has_value());
  // Integral of the level 0..3 over [0, 300] through the skipped ticks: 0.5 * 3 * 300 ns.
  EXPECT_NEAR(*tl.integrate(0, 0, 300), 0.5 * 3.0 * 300e-9, 1e-18);
}

TEST(Unavailable, ManyUnreadableZonesAreOneLineNotOnePerZone) {
  // As an Android app sees them: the zones are listed, every temp read fails.
  ScratchRoot root("denied");
  for (int i = 0; i < 6; ++i) {
    root.write("/sys/class/thermal/thermal_zone" + std::to_string(i) + "/type", "cpu-" + std::to_string(i));
    std::filesystem::create_directories(root.path() + "/sys/class/thermal/thermal_zone" + std::to_string(i) + "/temp");
  }
  std::vector<std::string> unavailable;
  EXPECT_TRUE(discover_thermal(FsRoot(root.path()), &unavailable).empty());
  ASSERT_EQ(unavailable.size(), 1u);
  EXPECT_EQ(unavailable[0].rfind("thermal: unavailable: 6 of 6 zones unreadable (", 0), 0u) << unavailable[0];
}

TEST(Clusters, WithoutCpufreqCoreTypesStillFormClusters) {
  // The platform module's topology fixtures carry no cpufreq policies.
  const auto phone = discover_cpus(FsRoot(fixture("phone-1-3-4")));
  ASSERT_EQ(phone.clusters.size(), 3u);
  EXPECT_EQ(phone.clusters[0].role, "little");
  EXPECT_EQ(phone.clusters[0].cpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(phone.clusters[2].role, "big");
  EXPECT_EQ(phone.clusters[2].cpus, (std::vector<int>{7}));
  const auto laptop = discover_cpus(FsRoot(fixture("intel-hybrid-laptop")));
  ASSERT_EQ(laptop.clusters.size(), 2u);
  EXPECT_EQ(laptop.clusters[1].name, "cpu_atom");
  EXPECT_EQ(laptop.clusters[1].cpus.size(), 8u);
}
