// The sampler on this machine's real /proc and /sys.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <sstream>
#include <thread>

#include <sys/syscall.h>
#include <unistd.h>

#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "telemetry/sampler.h"
#include "telemetry/summary.h"
#include "fixture_util.h"

using namespace edgeprobe;
using namespace edgeprobe::telemetry;
using edgeprobe::telemetry::testing::fixture;
using edgeprobe::telemetry::testing::ScratchRoot;

TEST(LiveSampler, SamplesOnOneClockAtMostAtTheRequestedRate) {
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
  // At most 50 Hz for 0.4 s = 20 ticks, plus the samples at start and stop; fewer where
  // no source here is worth reading at 50 Hz (the process is read at 10 Hz: 3 ticks
  // before 400 ms, which a loaded machine may delay).
  EXPECT_GE(tl.size(), 3u);
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

namespace {
size_t valid_count(const Timeline& tl, const std::string& name) {
  const auto s = tl.find(name);
  if (!s) return 0;
  size_t n = 0;
  for (double v : tl.values[*s]) n += std::isnan(v) ? 0 : 1;
  return n;
}
}  // namespace

// A phone's tree: cpufreq is read on every tick, thermal and the cap at most 5 Hz,
// /proc/stat, the process and cgroup at most 10 Hz; no row is left empty.
TEST(LiveSampler, EachSourceAtItsOwnRate) {
  Sampler sampler({.hz = 50, .sysfs_root = fixture("android-phone-3cluster"), .pid = 0}, RunClock());
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  sampler.stop();
  const auto tl = sampler.timeline();
  const size_t freq = valid_count(tl, "cpufreq.policy0.freq_khz");
  ASSERT_NE(tl.find("cpufreq.policy0.freq_khz"), std::nullopt);
  std::string zone;
  for (const auto& s : tl.series) {
    if (s.metric == Metric::kTempC && s.name.rfind("thermal.", 0) == 0) zone = s.name;
  }
  ASSERT_FALSE(zone.empty());
  const size_t temp = valid_count(tl, zone);
  size_t cap = 0;
  for (const auto& s : tl.series) {
    if (s.metric == Metric::kFreqCapKhz) cap = std::max(cap, valid_count(tl, s.name));
  }
  const size_t procstat = valid_count(tl, "cpu0.busy_s");
  // 1 s: 50 ticks (a loaded machine may skip some: the thread runs at nice 19), 5 and 10
  // reads, plus the 2 forced samples.
  EXPECT_GE(freq, 15u);
  EXPECT_LE(freq, 53u);
  EXPECT_GE(temp, 3u);
  EXPECT_LE(temp, 8u);
  EXPECT_GE(cap, 3u);
  EXPECT_LE(cap, 8u);
  EXPECT_GE(procstat, 4u);
  EXPECT_LE(procstat, 13u);
  EXPECT_EQ(tl.size(), freq);  // every row has the fastest source
}

// Where every source is slow (here /proc/stat and the process, 10 Hz), the thread wakes
// only when one is due, not at the requested rate with empty rows.
TEST(LiveSampler, WakesOnlyWhenASourceIsDue) {
  ScratchRoot root("slow");
  root.write("/sys/devices/system/cpu/online", "0-1");
  root.write("/proc/stat", "cpu  10 0 10 100 0 0 0 0 0 0\ncpu0 5 0 5 50 0 0 0 0 0 0\ncpu1 5 0 5 50 0 0 0 0 0 0");
  Sampler sampler({.hz = 100, .sysfs_root = root.path(), .pid = 0}, RunClock());
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  sampler.stop();
  const auto tl = sampler.timeline();
  // 10 wake-ups and the 2 forced samples; 100 rows if it woke at 100 Hz.
  EXPECT_GE(tl.size(), 5u);
  EXPECT_LE(tl.size(), 14u);
  EXPECT_EQ(valid_count(tl, "cpu0.busy_s"), tl.size());
}

TEST(LiveSampler, RunsAtLowPriority) {
  Sampler sampler({.hz = 50, .sysfs_root = "/", .pid = 0}, RunClock());
  sampler.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int nice = 100;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(entry.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name != "ep-sampler") continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    std::istringstream rest(line.substr(line.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 19 && rest >> field; ++i) {
      if (i == 19) nice = std::stoi(field);  // proc(5): field 19 is nice
    }
  }
  sampler.stop();
  EXPECT_EQ(nice, 19);
}

// Threads are listed again only when their count changes or a known one is gone: one
// that exits and another born between two samples (the same count) is still seen.
TEST(LiveSampler, SeesAThreadReplacedByAnotherBetweenSamples) {
  Sampler sampler({.hz = 1, .sysfs_root = "/", .pid = 0}, RunClock());  // samples by hand below
  auto spawn = [](std::atomic<int>* tid, std::atomic<bool>* stop) {
    return std::thread([tid, stop] {
      tid->store(static_cast<int>(::syscall(SYS_gettid)));
      volatile double x = 0;
      while (!stop->load()) x = x + 1;  // accrues CPU time, so it shows in placement
    });
  };
  std::atomic<int> tid_a{0}, tid_b{0};
  std::atomic<bool> stop_a{false}, stop_b{false};
  std::thread a = spawn(&tid_a, &stop_a);
  while (tid_a.load() == 0) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  sampler.sample_now();
  sampler.sample_now();
  stop_a = true;
  a.join();
  std::thread b = spawn(&tid_b, &stop_b);
  while (tid_b.load() == 0) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  sampler.sample_now();
  stop_b = true;
  b.join();
  const auto tl = sampler.timeline();
  ASSERT_EQ(tl.size(), 3u);
  auto seen = [&](int64_t t, int tid) {
    return std::any_of(tl.threads.begin(), tl.threads.end(), [&](const auto& s) { return s.t_ns == t && s.tid == tid; });
  };
  EXPECT_TRUE(seen(tl.t_ns[1], tid_a.load()));
  EXPECT_FALSE(seen(tl.t_ns[2], tid_a.load()));
  EXPECT_TRUE(seen(tl.t_ns[2], tid_b.load()));
}
