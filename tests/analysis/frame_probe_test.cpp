#include "analysis/frame_probe.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "core/error.h"

namespace edgeprobe::analysis {
namespace {

constexpr int64_t kMs = 1'000'000;

TEST(FrameProbe, ClassifiesFramesByStartLateness) {
  const int64_t period = 16'666'667;
  const std::vector<FrameRecord> frames{
      {0, 1 * kMs},            // on time
      {period, 4 * kMs},       // exactly 4 ms: still on time
      {2 * period, 5 * kMs},   // late
      {3 * period, period},    // exactly one period: late, not missed
      {4 * period, 40 * kMs},  // missed
      {5 * period, 0},         // outside the window below
  };
  const FrameWindowStats s = summarize_frames(frames, period, 4 * kMs, 0, 5 * period);
  EXPECT_EQ(s.frames, 5u);
  EXPECT_EQ(s.late, 2u);
  EXPECT_EQ(s.missed, 1u);
  EXPECT_EQ(s.max_lateness_ns, 40 * kMs);
  EXPECT_DOUBLE_EQ(*s.missed_share(), 0.2);
  EXPECT_DOUBLE_EQ(*s.late_share(), 0.4);
  EXPECT_FALSE(summarize_frames(frames, period, 4 * kMs, 100 * period, 200 * period).missed_share());
}

TEST(FrameProbe, TicksAtSixtyHertzOnTheRunClock) {
  const RunClock clock;
  FrameProbe probe(clock);
  const int64_t begin = clock.now_ns();
  probe.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  probe.stop();
  const int64_t end = clock.now_ns();
  const std::vector<FrameRecord> frames = probe.frames();
  // 30 deadlines in 500 ms. Overdue frames are caught up, so only a thread starved at
  // the very end (stop() wins the race) loses some; allow for that on a loaded machine.
  EXPECT_GE(frames.size(), 20u);
  // No frame before its deadline: at most one per period of the time it actually ran
  // (sleep_for may oversleep on a loaded machine, so bound by the measured span).
  EXPECT_LE(static_cast<int64_t>(frames.size()), (end - begin) / probe.period_ns() + 1);
  for (size_t i = 1; i < frames.size(); ++i)
    EXPECT_EQ(frames[i].deadline_ns - frames[i - 1].deadline_ns, probe.period_ns());
  EXPECT_GE(frames.front().deadline_ns, begin);
  EXPECT_LE(frames.back().deadline_ns, end);
  EXPECT_EQ(probe.window_stats(begin, end).frames, frames.size());
  EXPECT_FALSE(probe.running());
}

TEST(FrameProbe, StallOfAHundredMillisecondsCountsAsMissedFrames) {
  const RunClock clock;
  int frame = 0;
  FrameProbeOptions options;
  options.frame_work = [&frame] {
    if (++frame == 5) std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the UI thread blocks
  };
  FrameProbe probe(clock, options);
  probe.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  probe.stop();
  const FrameWindowStats s = probe.window_stats(0, clock.now_ns());
  // Deadlines 6..10 come due while frame 5 blocks: frames 6-9 start > 16.7 ms late.
  EXPECT_GE(s.missed, 4u);
  EXPECT_LT(s.missed, s.frames / 2);  // the rest of the 400 ms ran on schedule
  EXPECT_GE(s.max_lateness_ns, 70 * kMs);
  ASSERT_TRUE(probe.missed_share(0, clock.now_ns()).has_value());
  EXPECT_GT(*probe.missed_share(0, clock.now_ns()), 0.1);
}

TEST(FrameProbe, StopIsIdempotentAndProbeRestarts) {
  FrameProbe probe{RunClock()};
  probe.stop();
  probe.start();
  EXPECT_TRUE(probe.running());
  EXPECT_THROW(probe.start(), Error);
  probe.stop();
  probe.stop();
  EXPECT_FALSE(probe.running());
}

}  // namespace
}  // namespace edgeprobe::analysis
