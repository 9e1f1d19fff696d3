// A real bench run under a cgroup v1 CPU quota (30% of one CPU) must show throttled
// time in its results. Needs root and the cpu controller at /sys/fs/cgroup/cpu (as on
// this project's machines); skipped, saying why, elsewhere.
// Not stored: a test has no business in the user's own results store.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/run_process.h"

using namespace edgeprobe::test_support;

TEST(CgroupBench, AQuotaShowsUpAsThrottledTimeInTheResults) {
  const QuotaCgroup cgroup(30000);
  if (!cgroup.error().empty()) GTEST_SKIP() << cgroup.error();
  // The shell moves itself into the cgroup, then becomes edgeprobe.
  const std::string cmd = cgroup.enter_prefix() + EDGEPROBE_BINARY + " bench -m " + tiny_model() +
                          " -p 64 -n 32 -r 2 -t 2 -o json -q --ceilings off --no-store";
  const auto r = run_process({"/bin/sh", "-c", cmd}, 300,
                             {{"XDG_CACHE_HOME", std::string(EDGEPROBE_BUILD_DIR) + "/test-home/cache"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  double throttled_ms = 0;
  for (const auto& result : j["results"])
    for (const auto& rep : result["repetitions"])
      for (const auto& [phase, t] : rep["telemetry"].items()) throttled_ms += t.value("throttled_ms", 0.0);
  EXPECT_GT(throttled_ms, 0) << "no throttled time recorded under a 30% quota";
}
