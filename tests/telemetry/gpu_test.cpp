// GPU sources on the three fixtures (tests/fixtures/sysfs/*/README.md name where every
// path and format comes from): Adreno through kgsl on the phone, a Mali through devfreq on
// RK3588, the Jetson Orin iGPU through devfreq; their series, phase figures, trace tracks
// and sysinfo lines, and what a bad GPU file does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/clock.h"
#include "core/events.h"
#include "fixture_util.h"
#include "telemetry/chrome_trace.h"
#include "telemetry/device_info.h"
#include "telemetry/sampler.h"
#include "telemetry/summary.h"
#include "report/device_reporters.h"

using namespace edgeprobe;
using namespace edgeprobe::telemetry;
using edgeprobe::telemetry::testing::fixture;
using edgeprobe::telemetry::testing::ScratchRoot;
using edgeprobe::telemetry::testing::contains;
using edgeprobe::telemetry::testing::sample_once;
using edgeprobe::telemetry::testing::value_of;

namespace {

constexpr int64_t kSecond = 1'000'000'000;

const SeriesInfo* series_named(const Timeline& tl, const std::string& name) {
  const auto s = tl.find(name);
  return s ? &tl.series[*s] : nullptr;
}




size_t gpu_series_count(const Timeline& tl) {
  return std::count_if(tl.series.begin(), tl.series.end(),
                       [](const SeriesInfo& s) { return s.name.rfind("gpu.", 0) == 0; });
}

}  // namespace

// ---- Adreno (kgsl) ------------------------------------------------------------------

TEST(GpuKgsl, PhoneFixtureFindsTheAdrenoWithItsFigures) {
  const auto layout = discover_gpus(FsRoot(fixture("android-phone-3cluster")));
  ASSERT_EQ(layout.gpus.size(), 1u);
  EXPECT_TRUE(layout.unavailable.empty()) << layout.unavailable.front();
  const Gpu& gpu = layout.gpus[0];
  EXPECT_EQ(gpu.kind, "kgsl");
  EXPECT_EQ(gpu.name, "kgsl-3d0");
  EXPECT_EQ(gpu.model, "Adreno740v2");
  EXPECT_EQ(gpu.governor, "msm-adreno-tz");
  EXPECT_EQ(gpu.max_hz, 680000000);  // the top of gpu_available_frequencies
  EXPECT_EQ(gpu.min_hz, 220000000);
  EXPECT_EQ(gpu.cur_hz, 615000000);
  EXPECT_DOUBLE_EQ(*gpu.busy_share, 0.37);  // "37 %"
  EXPECT_DOUBLE_EQ(*gpu.temp_c, 48.3);      // millidegrees
  EXPECT_TRUE(gpu.rail.empty());
}

TEST(GpuKgsl, SeriesCarryTheirUnitsAndTheTopClock) {
  const auto tl = sample_once(fixture("android-phone-3cluster"));
  EXPECT_DOUBLE_EQ(value_of(tl, "gpu.kgsl-3d0.freq_hz"), 615000000);
  EXPECT_DOUBLE_EQ(value_of(tl, "gpu.kgsl-3d0.busy_share"), 0.37);
  EXPECT_DOUBLE_EQ(value_of(tl, "gpu.kgsl-3d0.cap_hz"), 680000000);
  EXPECT_DOUBLE_EQ(value_of(tl, "gpu.kgsl-3d0.temp_c"), 48.3);
  const SeriesInfo* freq = series_named(tl, "gpu.kgsl-3d0.freq_hz");
  ASSERT_NE(freq, nullptr);
  EXPECT_EQ(freq->metric, Metric::kGpuFreqHz);
  EXPECT_STREQ(metric_unit(freq->metric), "Hz");
  EXPECT_DOUBLE_EQ(freq->reference, 680000000);
  EXPECT_EQ(freq->group, "kgsl-3d0");
  EXPECT_STREQ(metric_unit(Metric::kGpuBusyShare), "share");
  EXPECT_FALSE(metric_is_counter(Metric::kGpuBusyShare));
  ASSERT_EQ(tl.gpus.size(), 1u);
  EXPECT_EQ(tl.gpus[0].kind, "kgsl");
  EXPECT_EQ(gpu_series_count(tl), 4u);
}

TEST(GpuKgsl, GpubusyWindowServesWhereThePercentageIsMissing) {
  // Older kgsl: only gpubusy, "%7d %7d\n" busy and total of the last window.
  ScratchRoot root("kgsl-gpubusy");
  root.write("/sys/class/kgsl/kgsl-3d0/gpuclk", "401000000");
  root.write("/sys/class/kgsl/kgsl-3d0/gpubusy", "  25000  100000");
  const auto tl = sample_once(root.path());
  EXPECT_DOUBLE_EQ(value_of(tl, "gpu.kgsl-3d0.busy_share"), 0.25);
  EXPECT_DOUBLE_EQ(value_of(tl, "gpu.kgsl-3d0.freq_hz"), 401000000);
}

// ---- Mali (Rockchip devfreq) ----------------------------------------------------------

TEST(GpuMali, Rk3588FixtureFindsTheGpuAndNotTheDmcOrNpu) {
  const auto layout = discover_gpus(FsRoot(fixture("rk3588-mali")));
  ASSERT_EQ(layout.gpus.size(), 1u);  // dmc and fdab0000.npu are devfreq devices too
  const Gpu& gpu = layout.gpus[0];
  EXPECT_EQ(gpu.kind, "mali");
  EXPECT_EQ(gpu.name, "fb000000.gpu");
  EXPECT_EQ(gpu.model, "Mali-G610");  // kbase gpuinfo
  EXPECT_EQ(gpu.governor, "simple_ondemand");
  EXPECT_EQ(gpu.max_hz, 1000000000);
  EXPECT_EQ(gpu.cur_hz, 300000000);
  EXPECT_DOUBLE_EQ(*gpu.busy_share, 0.37);  // "37@300000000Hz"
  EXPECT_NEAR(*gpu.temp_c, 44.307, 1e-9);   // the gpu-thermal zone
}

TEST(GpuMali, Rk3588ClustersFollowItsThreePolicies) {
  const auto cpus = discover_cpus(FsRoot(fixture("rk3588-mali")));
  ASSERT_EQ(cpus.clusters.size(), 3u);
  EXPECT_EQ(cpus.clusters[0].cpus, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(cpus.clusters[1].cpus, (std::vector<int>{4, 5}));
  EXPECT_EQ(cpus.clusters[2].cpus, (std::vector<int>{6, 7}));
  EXPECT_EQ(cpus.clusters[2].max_khz, 2352000);
}

TEST(GpuMali, SeriesReadTheLoadFileAndTheClock) {
  const auto tl = sample_once(fixture("rk3588-mali"));
  EXPECT_DOUBLE_EQ(value_of(tl, "gpu.fb000000.gpu.freq_hz"), 300000000);
  EXPECT_DOUBLE_EQ(value_of(tl, "gpu.fb000000.gpu.busy_share"), 0.37);
  EXPECT_DOUBLE_EQ(value_of(tl, "gpu.fb000000.gpu.cap_hz"), 1000000000);
  EXPECT_NEAR(value_of(tl, "gpu.fb000000.gpu.temp_c"), 44.307, 1e-9);
  EXPECT_EQ(gpu_series_count(tl), 4u);
}

TEST(GpuMali, MainlinePanfrostHasNoLoadFileAndSaysSo) {
  ScratchRoot root("panfrost");
  const std::string dir = "/sys/class/devfreq/fb000000.gpu";
  root.write(dir + "/cur_freq", "500000000");
  root.write(dir + "/max_freq", "1000000000");
  root.write(dir + "/governor", "simple_ondemand");
  const auto layout = discover_gpus(FsRoot(root.path()));
  ASSERT_EQ(layout.gpus.size(), 1u);  // found by the name alone: "<addr>.gpu"
  EXPECT_EQ(layout.gpus[0].kind, "mali");
  EXPECT_TRUE(contains(layout.unavailable,
                       "gpu fb000000.gpu busy: unavailable: no /sys/class/devfreq/fb000000.gpu/load"));
  const auto tl = sample_once(root.path());
  EXPECT_FALSE(tl.find("gpu.fb000000.gpu.busy_share").has_value());
  EXPECT_DOUBLE_EQ(value_of(tl, "gpu.fb000000.gpu.freq_hz"), 500000000);
}

// ---- Jetson --------------------------------------------------------------------------

TEST(GpuJetson, OrinNanoFixtureReadsPerMilleLoadAndNamesItsSharedRail) {
  const auto power = discover_power(FsRoot(fixture("jetson-orin")));
  const auto layout = discover_gpus(FsRoot(fixture("jetson-orin")), power.rails);
  ASSERT_EQ(layout.gpus.size(), 1u);
  const Gpu& gpu = layout.gpus[0];
  EXPECT_EQ(gpu.kind, "jetson");  // node "gpu" (JetPack 6), compatible nvidia,ga10b: not a Mali
  EXPECT_EQ(gpu.name, "17000000.gpu");
  EXPECT_EQ(gpu.model, "ga10b");
  EXPECT_EQ(gpu.governor, "nvhost_podgov");
  EXPECT_EQ(gpu.max_hz, 625000000);
  EXPECT_DOUBLE_EQ(*gpu.busy_share, 0.372);  // 372 per mille
  EXPECT_NEAR(*gpu.temp_c, 47.687, 1e-9);    // gpu-thermal
  EXPECT_EQ(gpu.rail, "VDD_CPU_GPU_CV");
  EXPECT_EQ(gpu.rail_shared_with, "the CPU and the CV engines");
  const auto tl = sample_once(fixture("jetson-orin"));
  EXPECT_DOUBLE_EQ(value_of(tl, "gpu.17000000.gpu.busy_share"), 0.372);
  EXPECT_DOUBLE_EQ(value_of(tl, "gpu.17000000.gpu.freq_hz"), 612000000);
  ASSERT_EQ(tl.gpus.size(), 1u);
  EXPECT_EQ(tl.gpus[0].rail, "VDD_CPU_GPU_CV");
}

TEST(GpuJetson, JetPack5NodeNameAndAgxRail) {
  // JetPack 5: /sys/class/devfreq/17000000.ga10b, node "ga10b"; AGX Orin's rail VDD_GPU_SOC.
  ScratchRoot root("jp5");
  const std::string dir = "/sys/class/devfreq/17000000.ga10b";
  root.write(dir + "/cur_freq", "1300500000");
  root.write(dir + "/max_freq", "1300500000");
  root.write(dir + "/device/load", "999");
  root.write(dir + "/device/of_node/name", std::string("ga10b") + '\0');
  const std::string hwmon = "/sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon2";
  for (const auto& [n, label] : {std::pair{"1", "VDD_GPU_SOC"}, std::pair{"2", "VDD_CPU_CV"}}) {
    root.write(hwmon + "/in" + std::string(n) + "_label", label);
    root.write(hwmon + "/in" + std::string(n) + "_input", "5000");
    root.write(hwmon + "/curr" + std::string(n) + "_input", "1000");
  }
  const auto power = discover_power(FsRoot(root.path()));
  const auto layout = discover_gpus(FsRoot(root.path()), power.rails);
  ASSERT_EQ(layout.gpus.size(), 1u);
  EXPECT_EQ(layout.gpus[0].kind, "jetson");
  EXPECT_EQ(layout.gpus[0].model, "ga10b");
  EXPECT_DOUBLE_EQ(*layout.gpus[0].busy_share, 0.999);
  EXPECT_EQ(layout.gpus[0].rail, "VDD_GPU_SOC");
  EXPECT_EQ(layout.gpus[0].rail_shared_with, "the SoC");
}

// ---- parsing --------------------------------------------------------------------------

TEST(GpuParsing, BusyFormatsToShares) {
  EXPECT_DOUBLE_EQ(*parse_gpu_busy("37 %", GpuBusyFormat::kPercent), 0.37);
  EXPECT_DOUBLE_EQ(*parse_gpu_busy("  37012  100031", GpuBusyFormat::kBusyTotal), 37012.0 / 100031.0);
  EXPECT_DOUBLE_EQ(*parse_gpu_busy("      0       0", GpuBusyFormat::kBusyTotal), 0.0);  // idle: no window
  EXPECT_DOUBLE_EQ(*parse_gpu_busy("37@300000000Hz", GpuBusyFormat::kLoadAtFreq), 0.37);
  EXPECT_DOUBLE_EQ(*parse_gpu_busy("372", GpuBusyFormat::kPerMille), 0.372);
  EXPECT_FALSE(parse_gpu_busy("n/a", GpuBusyFormat::kPercent));
  EXPECT_FALSE(parse_gpu_busy("370 %", GpuBusyFormat::kPercent));    // over 100
  EXPECT_FALSE(parse_gpu_busy("37 10", GpuBusyFormat::kBusyTotal));  // busy over total
  EXPECT_FALSE(parse_gpu_busy("300000000Hz", GpuBusyFormat::kLoadAtFreq));
  EXPECT_FALSE(parse_gpu_busy("1372", GpuBusyFormat::kPerMille));
  EXPECT_FALSE(parse_gpu_busy("", GpuBusyFormat::kPerMille));
}

// ---- bad files -------------------------------------------------------------------------

TEST(GpuUnavailable, MalformedBusyAtDiscoveryIsALineAndNoSeries) {
  ScratchRoot root("kgsl-malformed");
  root.write("/sys/class/kgsl/kgsl-3d0/gpuclk", "615000000");
  root.write("/sys/class/kgsl/kgsl-3d0/gpu_busy_percentage", "busy");
  Sampler sampler({.hz = 10, .sysfs_root = root.path(), .pid = 0}, RunClock());
  sampler.sample_at(0);
  const auto lines = sampler.unavailable();
  EXPECT_TRUE(contains(lines, "gpu kgsl-3d0 busy: unavailable: ")) << ::testing::PrintToString(lines);
  EXPECT_TRUE(contains(lines, "malformed: 'busy'"));
  const auto tl = sampler.timeline();
  EXPECT_FALSE(tl.find("gpu.kgsl-3d0.busy_share").has_value());
  EXPECT_DOUBLE_EQ(value_of(tl, "gpu.kgsl-3d0.freq_hz"), 615000000);  // the rest still read
}

TEST(GpuUnavailable, UnreadableClockIsALineNotACrash) {
  // As denied or broken nodes look: the name is there, the read fails (a directory).
  ScratchRoot root("kgsl-unreadable");
  std::filesystem::create_directories(root.path() + "/sys/class/kgsl/kgsl-3d0/gpuclk");
  root.write("/sys/class/kgsl/kgsl-3d0/gpu_busy_percentage", "12 %");
  Sampler sampler({.hz = 10, .sysfs_root = root.path(), .pid = 0}, RunClock());
  sampler.sample_at(0);
  EXPECT_TRUE(contains(sampler.unavailable(), "gpu kgsl-3d0 clock: unavailable: "));
  const auto tl = sampler.timeline();
  EXPECT_FALSE(tl.find("gpu.kgsl-3d0.freq_hz").has_value());
  EXPECT_DOUBLE_EQ(value_of(tl, "gpu.kgsl-3d0.busy_share"), 0.12);
}

TEST(GpuUnavailable, AFileThatTurnsMalformedMidRunIsNaNAndOneLine) {
  ScratchRoot root("mali-turns-bad");
  root.overlay(fixture("rk3588-mali"));
  Sampler sampler({.hz = 10, .sysfs_root = root.path(), .pid = 0}, RunClock());
  sampler.sample_at(0);
  root.write("/sys/class/devfreq/fb000000.gpu/load", "garbage");
  sampler.sample_at(100'000'000);
  sampler.sample_at(200'000'000);
  const auto tl = sampler.timeline();
  EXPECT_DOUBLE_EQ(value_of(tl, "gpu.fb000000.gpu.busy_share", 0), 0.37);
  EXPECT_TRUE(std::isnan(value_of(tl, "gpu.fb000000.gpu.busy_share", 1)));
  EXPECT_DOUBLE_EQ(value_of(tl, "gpu.fb000000.gpu.freq_hz", 1), 300000000);
  const auto lines = sampler.unavailable();
  EXPECT_EQ(
      std::count_if(lines.begin(), lines.end(),
                    [](const std::string& l) { return l.find("malformed: 'garbage'") != std::string::npos; }),
      1);
}

TEST(GpuUnavailable, NoGpuNodesIsQuiet) {
  const auto tl = sample_once(fixture("x86-laptop-hybrid-rapl"));
  EXPECT_TRUE(tl.gpus.empty());
  EXPECT_EQ(gpu_series_count(tl), 0u);
  Sampler sampler({.hz = 10, .sysfs_root = fixture("x86-laptop-hybrid-rapl"), .pid = 0}, RunClock());
  EXPECT_FALSE(contains(sampler.unavailable(), "gpu"));
  sampler.sample_at(0);
  sampler.sample_at(kSecond);
  const auto j = to_json(summarize_phase(sampler.timeline(), 0, kSecond, 1));
  EXPECT_FALSE(j.contains("gpus"));
}

// ---- phase figures ----------------------------------------------------------------------

TEST(GpuSummary, PhaseFiguresOfAClockThatRises) {
  ScratchRoot root("mali-rises");
  root.overlay(fixture("rk3588-mali"));
  Sampler sampler({.hz = 10, .sysfs_root = root.path(), .pid = 0}, RunClock());
  sampler.sample_at(0);
  root.write("/sys/class/devfreq/fb000000.gpu/cur_freq", "600000000");
  root.write("/sys/class/devfreq/fb000000.gpu/load", "77@600000000Hz");
  root.write("/sys/class/devfreq/fb000000.gpu/max_freq", "800000000");  // a thermal cap
  root.write("/sys/class/thermal/thermal_zone5/temp", "61000");
  sampler.sample_at(kSecond);
  const auto phase = summarize_phase(sampler.timeline(), 0, kSecond, 10);
  ASSERT_EQ(phase.gpus.size(), 1u);
  const GpuPhase& g = phase.gpus[0];
  EXPECT_EQ(g.name, "fb000000.gpu");
  EXPECT_EQ(g.kind, "mali");
  EXPECT_EQ(g.governor, "simple_ondemand");
  EXPECT_DOUBLE_EQ(*g.max_freq_hz, 1e9);
  EXPECT_NEAR(*g.mean_freq_hz, 450e6, 1);  // linear from 300 to 600 MHz over the phase
  EXPECT_DOUBLE_EQ(*g.min_freq_hz, 300e6);
  EXPECT_NEAR(*g.mean_freq_share, 0.45, 1e-9);
  EXPECT_NEAR(*g.min_freq_share, 0.30, 1e-9);
  EXPECT_NEAR(*g.min_cap_share, 0.8, 1e-9);
  EXPECT_NEAR(*g.mean_busy_share, 0.57, 1e-9);
  EXPECT_DOUBLE_EQ(*g.max_temp_c, 61.0);
  EXPECT_TRUE(g.rail.empty());
  const auto j = to_json(phase);
  ASSERT_TRUE(j.contains("gpus"));
  ASSERT_EQ(j["gpus"].size(), 1u);
  const auto& jg = j["gpus"][0];
  EXPECT_EQ(jg["name"], "fb000000.gpu");
  EXPECT_EQ(jg["kind"], "mali");
  EXPECT_EQ(jg["model"], "Mali-G610");
  EXPECT_EQ(jg["governor"], "simple_ondemand");
  for (const char* key : {"mean_freq_hz", "min_freq_hz", "mean_freq_share", "min_freq_share", "min_cap_share",
                          "mean_busy_share", "max_temp_c", "max_freq_hz"}) {
    EXPECT_TRUE(jg.contains(key)) << key;
  }
  EXPECT_FALSE(jg.contains("rail"));
  // The GPU's temperature stays a GPU figure; the zone it came from is still a zone.
  EXPECT_TRUE(j["thermal"].contains("gpu-thermal"));
}

TEST(GpuSummary, JetsonPhaseNamesTheRailAndItsPower) {
  Sampler sampler({.hz = 10, .sysfs_root = fixture("jetson-orin"), .pid = 0}, RunClock());
  sampler.sample_at(0);
  sampler.sample_at(kSecond);
  const auto j = to_json(summarize_phase(sampler.timeline(), 0, kSecond, 10));
  ASSERT_EQ(j["gpus"].size(), 1u);
  const auto& g = j["gpus"][0];
  EXPECT_EQ(g["kind"], "jetson");
  EXPECT_EQ(g["rail"], "VDD_CPU_GPU_CV");
  EXPECT_EQ(g["rail_shared_with"], "the CPU and the CV engines");
  EXPECT_NEAR(g["rail_mean_power_w"].get<double>(),
              j["power_sources"]["VDD_CPU_GPU_CV"]["mean_power_w"].get<double>(), 1e-12);
  EXPECT_NEAR(g["mean_busy_share"].get<double>(), 0.372, 1e-12);
  EXPECT_NEAR(g["mean_freq_share"].get<double>(), 612.0 / 625.0, 1e-12);
}

// ---- trace ----------------------------------------------------------------------------

TEST(GpuTrace, ClockAndBusyTracksBesideTheCpuClocks) {
  ScratchRoot root("mali-trace");
  root.overlay(fixture("rk3588-mali"));
  Sampler sampler({.hz = 10, .sysfs_root = root.path(), .pid = 0}, RunClock());
  sampler.sample_at(0);
  root.write("/sys/class/devfreq/fb000000.gpu/cur_freq", "900000000");
  sampler.sample_at(kSecond);
  std::ostringstream out;
  write_chrome_trace(out, sampler.timeline(), {{"decode", "phase", 0, kSecond, 4, 0, "tg4"}});
  const auto j = nlohmann::json::parse(out.str());
  std::set<std::string> counters;
  double freq_at_1s = -1, busy_at_0 = -1;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "C") continue;
    counters.insert(e["name"].get<std::string>());
    if (e["name"] == "gpu.fb000000.gpu.freq_hz" && e["ts"].get<double>() == 1e6)
      freq_at_1s = e["args"]["value"];
    if (e["name"] == "gpu.fb000000.gpu.busy_share" && e["ts"].get<double>() == 0)
      busy_at_0 = e["args"]["value"];
  }
  for (const char* track :
       {"gpu.fb000000.gpu.freq_hz", "gpu.fb000000.gpu.busy_share", "gpu.fb000000.gpu.cap_hz",
        "gpu.fb000000.gpu.temp_c", "cpufreq.policy6.freq_khz"}) {
    EXPECT_TRUE(counters.count(track)) << track;
  }
  EXPECT_DOUBLE_EQ(freq_at_1s, 900000000);
  EXPECT_DOUBLE_EQ(busy_at_0, 0.37);
  // The GPU's series follow the CPU clocks in the timeline, so the tracks are written next to them.
  const auto tl = sampler.timeline();
  EXPECT_EQ(*tl.find("gpu.fb000000.gpu.freq_hz"), *tl.find("cpufreq.policy6.cap_khz") + 1);
}

// ---- sysinfo ----------------------------------------------------------------------------

TEST(GpuSysinfo, ListsEachGpuOrSaysNone) {
  const std::string phone = report::to_text(describe_device(FsRoot(fixture("android-phone-3cluster"))));
  EXPECT_NE(phone.find("GPUs: 1\n  kgsl kgsl-3d0 model Adreno740v2 governor msm-adreno-tz now 615 MHz max "
                       "680 MHz busy 37 % 48.3 °C"),
            std::string::npos)
      << phone;
  const std::string rk = report::to_text(describe_device(FsRoot(fixture("rk3588-mali"))));
  EXPECT_NE(rk.find("mali fb000000.gpu model Mali-G610 governor simple_ondemand now 300 MHz max 1000 MHz"),
            std::string::npos)
      << rk;
  const std::string jetson = report::to_text(describe_device(FsRoot(fixture("jetson-orin"))));
  EXPECT_NE(jetson.find("jetson 17000000.gpu model ga10b governor nvhost_podgov now 612 MHz max 625 MHz"),
            std::string::npos)
      << jetson;
  EXPECT_NE(jetson.find("    power rail VDD_CPU_GPU_CV (shared with the CPU and the CV engines)"),
            std::string::npos)
      << jetson;
  const std::string laptop = report::to_text(describe_device(FsRoot(fixture("x86-laptop-hybrid-rapl"))));
  EXPECT_NE(laptop.find("GPU: none found in sysfs"), std::string::npos) << laptop;
  const auto j = to_json(describe_device(FsRoot(fixture("jetson-orin"))));
  ASSERT_EQ(j["gpus"].size(), 1u);
  EXPECT_EQ(j["gpus"][0]["kind"], "jetson");
  EXPECT_EQ(j["gpus"][0]["max_freq_hz"], 625000000);
  EXPECT_EQ(j["gpus"][0]["rail"], "VDD_CPU_GPU_CV");
  EXPECT_TRUE(to_json(describe_device(FsRoot(fixture("x86-laptop-hybrid-rapl"))))["gpus"].empty());
}
