// A real run under a cgroup CPU quota must show throttled time. Needs root and a writable
// cpu controller (cgroup v1 cpu.cfs_quota_us, or v2 cpu.max); skipped otherwise.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <thread>

#include "core/clock.h"
#include "core/fs.h"
#include "telemetry/chrome_trace.h"
#include "telemetry/layout.h"
#include "telemetry/sampler.h"
#include "telemetry/summary.h"

using namespace edgeprobe;
using namespace edgeprobe::telemetry;

namespace {

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace

TEST(CgroupQuota, BusyChildUnderThirtyPercentQuotaShowsThrottledTime) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a cgroup with a CPU quota";
  const auto self = discover_cgroup(FsRoot("/"), 0);
  if (self.version == 0) GTEST_SKIP() << "no cgroup cpu controller: " << (self.unavailable.empty() ? "" : self.unavailable[0]);
  const std::string dir = self.cpu_dir + "/edgeprobe-test-" + std::to_string(::getpid());
  if (::mkdir(dir.c_str(), 0755) != 0) {
    GTEST_SKIP() << "cgroup " << self.cpu_dir << " is not writable: " << std::strerror(errno);
  }
  const bool quota_set = self.version == 1
                             ? write_file(dir + "/cpu.cfs_period_us", "100000") && write_file(dir + "/cpu.cfs_quota_us", "30000")
                             : write_file(dir + "/cpu.max", "30000 100000");
  if (!quota_set) {
    ::rmdir(dir.c_str());
    GTEST_SKIP() << "cannot set a CPU quota in " << dir;
  }

  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    volatile unsigned long spin = 0;
    for (;;) spin = spin + 1;  // killed by the parent
  }
  const bool moved = write_file(dir + "/cgroup.procs", std::to_string(child));

  RunClock clock;
  PhaseTelemetry phase;
  Timeline timeline;
  if (moved) {
    Sampler sampler({.hz = 20, .sysfs_root = "/", .pid = child}, clock);
    sampler.start();
    const int64_t start = clock.now_ns();
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    const int64_t end = clock.now_ns();
    sampler.stop();
    timeline = sampler.timeline();
    phase = summarize_phase(timeline, start, end, 0);
  }
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::rmdir(dir.c_str());
  ASSERT_TRUE(moved) << "could not move the child into " << dir;

  ASSERT_TRUE(phase.throttled_ms.has_value()) << "cgroup cpu.stat not sampled";
  RecordProperty("throttled_ms", std::to_string(*phase.throttled_ms));
  std::cout << "[   info   ] " << to_json(phase).dump() << "\n";
  // A spinning process gets 30 ms of every 100 ms period and waits out the other 70.
  EXPECT_GT(*phase.throttled_ms, 100.0);
  EXPECT_GT(phase.throttled_periods.value_or(0), 3.0);
  // The quota caps the child at 0.3 CPU whatever else runs.
  ASSERT_TRUE(phase.process_cpu_share.has_value());
  const double cpus = static_cast<double>(std::thread::hardware_concurrency());
  EXPECT_LT(*phase.process_cpu_share * cpus, 0.45);
  EXPECT_GT(to_json(phase)["throttled_ms"].get<double>(), 100.0);
}
