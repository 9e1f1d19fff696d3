// The sampler on this machine's real /proc and /sys.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "telemetry/sampler.h"
#include "telemetry/summary.h"

using namespace edgeprobe;
using namespace edgeprobe::telemetry;

TEST(LiveSampler, SamplesAtTheRequestedRateOnOneClock) {
  RunClock clock;
  Sampler sampler({.hz = 50, .sysfs_root = "/", .pid = 0}, clock);
  const int64_t before = clock.now_ns();
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  int sampler_tid = 0;  // the thread named ep-sampler
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(entry.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name == "ep-sampler") sampler_tid = std::stoi(entry.path().filename().string());
  }
  sampler.stop();
  const int64_t after = clock.now_ns();
  ASSERT_NE(sampler_tid, 0);
  for (const auto& t : sampler.timeline().threads) EXPECT_NE(t.tid, sampler_tid) << "sampler counted as workload";
  const auto tl = sampler.timeline();
  // 50 Hz for 0.4 s = 20 ticks, plus the samples at start and stop; a loaded 2-core
  // machine may delay some ticks, never add any.
  EXPECT_GE(tl.size(), 10u);
  EXPECT_LE(tl.size(), 23u);
  for (size_t i = 1; i < tl.size(); ++i) EXPECT_GE(tl.t_ns[i], tl.t_ns[i - 1]);
  EXPECT_GE(tl.t_ns.front(), before);
  EXPECT_LE(tl.t_ns.back(), after);
  const auto rss = tl.find("process.rss_kb");
  ASSERT_TRUE(rss);
  EXPECT_GT(tl.values[*rss].back(), 1000);  // a gtest binary holds more than 1 MiB
  EXPECT_FALSE(tl.threads.empty());
}

namespace {
double process_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
}  // namespace

TEST(LiveSampler, ProcessCpuTimeMatchesTheKernelsOwnAccount) {
  RunClock clock;
  Sampler sampler({.hz = 20, .sysfs_root = "/", .pid = 0}, clock);
  sampler.start();
  sampler.sample_now();
  const int64_t start = clock.now_ns();
  const double cpu_before = process_cpu_s();
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    volatile double x = 0;
    while (!stop.load(std::memory_order_relaxed)) x = x + 1;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  stop = true;
  busy.join();
  const double cpu_after = process_cpu_s();
  const int64_t end = clock.now_ns();
  sampler.sample_now();
  sampler.stop();
  const auto tl = sampler.timeline();
  const auto series = tl.find("process.cpu_s");
  ASSERT_TRUE(series);
  const auto sampled = tl.counter_delta(*series, start, end);
  ASSERT_TRUE(sampled.has_value());
  // /proc/<pid>/stat counts 10 ms ticks, and a sample lands up to ~1 ms off the edges.
  EXPECT_NEAR(*sampled, cpu_after - cpu_before, 0.06);
  EXPECT_GT(cpu_after - cpu_before, 0.05);  // the spinning thread did run
  const auto phase = summarize_phase(tl, start, end, 0);
  ASSERT_TRUE(phase.process_cpu_share.has_value());
  ASSERT_TRUE(phase.other_cpu_share.has_value());
  EXPECT_GT(*phase.process_cpu_share, 0.0);
  EXPECT_LE(*phase.process_cpu_share + *phase.other_cpu_share, 1.0 + 1e-9);
  ASSERT_FALSE(phase.clusters.empty());
  double share_sum = 0;
  for (const auto& c : phase.clusters) share_sum += c.thread_time_share.value_or(0);
  EXPECT_NEAR(share_sum, 1.0, 1e-9);
}

TEST(LiveSampler, ZeroHzTurnsTelemetryOff) {
  Sampler sampler({.hz = 0, .sysfs_root = "/", .pid = 0}, RunClock());
  sampler.start();
  EXPECT_FALSE(sampler.running());
  sampler.stop();
  EXPECT_EQ(sampler.timeline().size(), 0u);
}

TEST(LiveSampler, RejectsAbsurdRate) {
  EXPECT_THROW(Sampler({.hz = 1e6, .sysfs_root = "/", .pid = 0}, RunClock()), Error);
  EXPECT_THROW(Sampler({.hz = std::nan(""), .sysfs_root = "/", .pid = 0}, RunClock()), Error);
}

TEST(LiveSampler, SampleNowFromAnotherThreadKeepsTimelineOrdered) {
  Sampler sampler({.hz = 200, .sysfs_root = "/", .pid = 0}, RunClock());
  sampler.start();
  for (int i = 0; i < 20; ++i) {
    sampler.sample_now();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  sampler.stop();
  const auto tl = sampler.timeline();
  EXPECT_GE(tl.size(), 22u);
  for (size_t i = 1; i < tl.size(); ++i) ASSERT_GE(tl.t_ns[i], tl.t_ns[i - 1]);
  for (const auto& column : tl.values) EXPECT_EQ(column.size(), tl.size());
}
