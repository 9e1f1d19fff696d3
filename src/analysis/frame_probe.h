#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "core/clock.h"

namespace edgeprobe::analysis {

// A stand-in for an app's UI thread: it wakes at 60 Hz on a fixed steady_clock deadline
// schedule (deadline k = origin + k * period, never re-based on when it actually woke)
// and records how late each frame started while the model runs on the other cores.
//
// Classification of one frame by its start lateness L (documented in docs/qes.md):
//   on time  L <= 4 ms
//   late     4 ms < L <= one period (16.7 ms at 60 Hz): the frame still made its vsync
//            only if its work fits in what is left, so it is at risk
//   missed   L > one period: the frame's vsync had passed before it could even start
// After a stall the schedule does not slip: overdue frames run back to back, each scored
// by its own lateness, so a 100 ms stall at 60 Hz counts about 5 missed frames, as a
// compositor would drop them.
struct FrameRecord {
  int64_t deadline_ns = 0;  // RunClock
  int64_t lateness_ns = 0;  // start - deadline, >= 0 in practice
};

struct FrameWindowStats {
  size_t frames = 0;  // frames whose deadline lies in the window
  size_t late = 0;    // late but not missed
  size_t missed = 0;
  int64_t max_lateness_ns = 0;
  double p99_lateness_ms = 0;
  std::optional<double> late_share() const;
  std::optional<double> missed_share() const;  // nullopt when no frame fell in the window
};

struct FrameProbeOptions {
  double hz = 60.0;
  int64_t late_threshold_ns = 4'000'000;
  // Work done in each frame, as a UI would lay out and draw; none by default so that the
  // probe measures only whether the thread gets a core in time.
  std::function<void()> frame_work;
};

// Counts frames with deadlines in [start_ns, end_ns) (RunClock).
FrameWindowStats summarize_frames(std::span<const FrameRecord> frames, int64_t period_ns,
                                  int64_t late_threshold_ns, int64_t start_ns, int64_t end_ns);

class FrameProbe {
 public:
  explicit FrameProbe(RunClock clock, FrameProbeOptions options = {});
  ~FrameProbe();  // stops the thread
  FrameProbe(const FrameProbe&) = delete;
  FrameProbe& operator=(const FrameProbe&) = delete;

  void start();  // the first deadline is one period after start; throws if already running
  void stop();   // idempotent; frames recorded so far are kept
  bool running() const { return running_.load(); }

  int64_t period_ns() const { return period_ns_; }
  std::vector<FrameRecord> frames() const;  // a snapshot, safe while running
  FrameWindowStats window_stats(int64_t start_ns, int64_t end_ns) const;
  // Share of the frames due in [start_ns, end_ns) that were missed; nullopt if none were due.
  std::optional<double> missed_share(int64_t start_ns, int64_t end_ns) const;

 private:
  void loop(int64_t first_deadline_mono_ns);

  RunClock clock_;
  FrameProbeOptions options_;
  int64_t period_ns_;
  std::atomic<bool> running_{false};
  bool stop_requested_ = false;  // guarded by mutex_
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<FrameRecord> frames_;  // guarded by mutex_
  std::thread thread_;
};

}  // namespace edgeprobe::analysis
