// What CPU time taken from a run can cost it: each estimate within what its cause can
// physically cost.
#include "analysis/cpu_time_cost.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace edgeprobe::analysis;

TEST(CpuTimeCost, OthersOnTheCpusOneThreadLeftIdleCostItNothing) {
  EXPECT_DOUBLE_EQ(contention_cost(1, 2, 0.9), 1.0);
  EXPECT_DOUBLE_EQ(lockstep_contention_cost(1, 2, 0.9), 1.0);
  EXPECT_DOUBLE_EQ(contention_cost(1, 2, 1.6), 1.3);  // the thread keeps 2 / 2.6 of a CPU
  EXPECT_DOUBLE_EQ(lockstep_contention_cost(1, 2, 1.6), 1.3) << "one thread waits at no barrier";
}

// Threads at barriers advance while all of them run: between the fair share (descheduling
// that always overlaps) and 1 / (1 - t (1 - 1 / fair)) (descheduling that never does).
TEST(CpuTimeCost, ThreadsAtBarriersLieBetweenOverlappingAndDisjointDescheduling) {
  for (const double threads : {2.0, 4.0, 8.0})
    for (const double others : {0.1, 0.3, 0.6, 1.0}) {
      const double fair = contention_cost(threads, threads, others);
      const double lockstep = lockstep_contention_cost(threads, threads, others);
      const double disjoint_progress = 1 - threads * (1 - 1 / fair);
      EXPECT_GT(lockstep, fair) << threads << " threads, " << others << " CPUs of others";
      if (disjoint_progress > 0)
        EXPECT_LE(lockstep, 1 / disjoint_progress) << threads << " threads, " << others;
    }
  EXPECT_NEAR(lockstep_contention_cost(2, 2, 0.6), 1.3 * 1.3, 1e-12);
  // Oversubscribed threads need no more than the usable CPUs.
  EXPECT_DOUBLE_EQ(lockstep_contention_cost(8, 2, 0.6), lockstep_contention_cost(2, 2, 0.6));
}

TEST(CpuTimeCost, InputsThatAreNotPositiveCostNothing) {
  for (const double bad : {0.0, -1.0, std::nan("")}) {
    EXPECT_DOUBLE_EQ(lockstep_contention_cost(bad, 2, 1), 1.0);
    EXPECT_DOUBLE_EQ(lockstep_contention_cost(2, bad, 1), 1.0);
    EXPECT_DOUBLE_EQ(lockstep_contention_cost(2, 2, bad), 1.0);
  }
}
