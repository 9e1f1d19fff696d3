#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/events.h"
#include "telemetry/chrome_trace.h"
#include "telemetry/sampler.h"
#include "fixture_util.h"

using namespace edgeprobe;
using namespace edgeprobe::telemetry;
using edgeprobe::telemetry::testing::fixture;
using edgeprobe::telemetry::testing::ScratchRoot;

TEST(ChromeTrace, PhasesTokensAndCountersOnNamedTracks) {
  const std::string dir = fixture("replay-throttle");
  ScratchRoot root("trace");
  root.overlay(dir + "/base");
  root.overlay(dir + "/steps/t0");
  Sampler sampler({.hz = 20, .sysfs_root = root.path(), .pid = 0}, RunClock());
  int64_t t = 0;
  for (const char* step : {"t0", "t1", "t2", "t3"}) {
    root.overlay(dir + "/steps/" + step);
    sampler.sample_at(t);
    t += 1'000'000'000;
  }
  std::vector<PhaseEvent> events = {
      {"prefill", "phase", 0, 1'000'000'000, 256, 0, "pp256"},
      {"decode", "phase", 1'000'000'000, 3'000'000'000, 2, 0, "tg2"},
      {"token", "token", 1'000'000'000, 1'500'000'000, 1, 0, "tg2"},
      {"token", "token", 1'500'000'000, 2'000'000'000, 1, 0, "tg2"},
  };
  std::ostringstream out;
  write_chrome_trace(out, sampler.timeline(), events);
  const auto j = nlohmann::json::parse(out.str());  // throws if not JSON
  ASSERT_TRUE(j.contains("traceEvents"));
  std::set<std::string> thread_names, counters;
  int slices = 0, token_slices = 0;
  std::set<int> phase_tids, token_tids;
  double big_util = -1, freq_at_2s = -1;
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "M" && e["name"] == "thread_name") thread_names.insert(e["args"]["name"].get<std::string>());
    if (ph == "X") {
      ++slices;
      if (e["cat"] == "token") {
        ++token_slices;
        token_tids.insert(e["tid"].get<int>());
      } else {
        phase_tids.insert(e["tid"].get<int>());
      }
      if (e["name"] == "decode") {
        EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1e6);  // µs
        EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 2e6);
        EXPECT_EQ(e["args"]["tokens"], 2);
      }
    }
    if (ph == "C") {
      counters.insert(e["name"].get<std::string>());
      if (e["name"] == "cpu2.utilisation_share" && e["ts"].get<double>() == 0) big_util = e["args"]["value"];
      if (e["name"] == "cpufreq.policy2.freq_khz" && e["ts"].get<double>() == 2e6) freq_at_2s = e["args"]["value"];
    }
  }
  EXPECT_EQ(slices, 4);
  EXPECT_EQ(token_slices, 2);
  EXPECT_EQ(phase_tids.size(), 1u);
  EXPECT_EQ(token_tids.size(), 1u);
  EXPECT_NE(*phase_tids.begin(), *token_tids.begin());  // Perfetto needs non-overlapping slices per thread
  EXPECT_TRUE(thread_names.count("phases"));
  EXPECT_TRUE(thread_names.count("tokens"));
  for (const char* track : {"cpufreq.policy2.freq_khz", "thermal.cpu-big.temp_c", "battery.power_w",
                            "cgroup.throttled_share", "cpu0.utilisation_share", "process.cluster.policy2.cpu_cores",
                            "process.rss_kb", "thread.1003.last_cpu"}) {
    EXPECT_TRUE(counters.count(track)) << track;
  }
  EXPECT_DOUBLE_EQ(big_util, 1.0);  // cpu2: 100 of 100 ticks busy between t0 and t1
  EXPECT_DOUBLE_EQ(freq_at_2s, 1200000);
}
