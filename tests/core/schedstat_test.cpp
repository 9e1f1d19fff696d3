// schedstat: run-queue wait is what competing threads take; sleeping is not waiting.
// Live /proc, no fixtures: the kernel's own accounting is what is under test.
#include "core/schedstat.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace edgeprobe {
namespace {

void spin_for(std::chrono::milliseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  volatile unsigned long x = 0;
  while (std::chrono::steady_clock::now() < end) x = x + 1;
}

TEST(Schedstat, TwoThreadsSharingOneCpuEachWaitForTheOther) {
  if (!thread_sched_times()) GTEST_SKIP() << "this kernel has no /proc/thread-self/schedstat";
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(0, &one);
  std::vector<std::optional<double>> shares(2);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i)
    threads.emplace_back([&, i] {
      ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
      const auto before = thread_sched_times();
      spin_for(std::chrono::milliseconds(400));
      shares[static_cast<size_t>(i)] = cpu_share_between(*before, *thread_sched_times());
    });
  for (auto& t : threads) t.join();
  // Two spinning threads on one CPU each run about half the time and wait the rest; the
  // bound leaves room for the first thread's head start and the scheduler's slices.
  for (const auto& share : shares) {
    ASSERT_TRUE(share.has_value());
    EXPECT_LT(*share, 0.8);
    EXPECT_GT(*share, 0.05);
  }
}

TEST(Schedstat, ASleepingThreadIsNotCountedAsWaiting) {
  const auto before = thread_sched_times();
  if (!before) GTEST_SKIP() << "this kernel has no /proc/thread-self/schedstat";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto after = thread_sched_times();
  ASSERT_TRUE(after.has_value());
  // CPU time over wall time would call this thread 99 % disturbed; its run-queue wait is
  // only the moment between waking and running again.
  EXPECT_LT(after->wait_s - before->wait_s, 0.1);
}

TEST(Schedstat, ProcessSharesCountOnlyThreadsPresentInBothReadings) {
  std::map<int, SchedTimes> before{{1, {1.0, 0.0}}, {2, {5.0, 5.0}}};
  std::map<int, SchedTimes> after{{1, {2.0, 1.0}}, {3, {9.0, 9.0}}};  // 2 exited, 3 is new
  const auto share = cpu_share_between(before, after);
  ASSERT_TRUE(share.has_value());
  EXPECT_DOUBLE_EQ(*share, 0.5);
  EXPECT_FALSE(cpu_share_between(SchedTimes{1, 1}, SchedTimes{1, 1}).has_value());  // neither ran nor waited
  if (thread_sched_times()) {
    EXPECT_EQ(process_sched_times().count(static_cast<int>(gettid())), 1u);
  }
}

}  // namespace
}  // namespace edgeprobe
