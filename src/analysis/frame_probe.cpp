#include "analysis/frame_probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/error.h"
#include "core/stats.h"

namespace edgeprobe::analysis {

std::optional<double> FrameWindowStats::late_share() const {
  if (frames == 0) return std::nullopt;
  return static_cast<double>(late) / static_cast<double>(frames);
}

std::optional<double> FrameWindowStats::missed_share() const {
  if (frames == 0) return std::nullopt;
  return static_cast<double>(missed) / static_cast<double>(frames);
}

FrameWindowStats summarize_frames(std::span<const FrameRecord> frames, int64_t period_ns,
                                  int64_t late_threshold_ns, int64_t start_ns, int64_t end_ns) {
  FrameWindowStats s;
  std::vector<double> lateness_ms;
  for (const FrameRecord& f : frames) {
    if (f.deadline_ns < start_ns || f.deadline_ns >= end_ns) continue;
    ++s.frames;
    if (f.lateness_ns > period_ns) {
      ++s.missed;
    } else if (f.lateness_ns > late_threshold_ns) {
      ++s.late;
    }
    s.max_lateness_ns = std::max(s.max_lateness_ns, f.lateness_ns);
    lateness_ms.push_back(static_cast<double>(f.lateness_ns) / 1e6);
  }
  if (!lateness_ms.empty()) s.p99_lateness_ms = stats::quantile(lateness_ms, 0.99);
  return s;
}

FrameProbe::FrameProbe(RunClock clock, FrameProbeOptions options)
    : clock_(clock),
      options_(std::move(options)),
      period_ns_(static_cast<int64_t>(std::llround(1e9 / (options_.hz > 0 ? options_.hz : 60.0)))) {}

FrameProbe::~FrameProbe() { stop(); }

void FrameProbe::start() {
  if (running_.exchange(true)) throw Error(ErrorKind::kBug, "FrameProbe::start: already running");
  {
    std::lock_guard lock(mutex_);
    stop_requested_ = false;
    frames_.reserve(frames_.size() + 60 * 60);  // a minute at 60 Hz before the first regrowth
  }
  const int64_t first = monotonic_ns() + period_ns_;
  thread_ = std::thread([this, first] { loop(first); });
}

void FrameProbe::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_requested_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  running_.store(false);
}

void FrameProbe::loop(int64_t first_deadline_mono_ns) {
  using std::chrono::nanoseconds;
  using std::chrono::steady_clock;
  int64_t deadline = first_deadline_mono_ns;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      // wait_until on steady_clock: libstdc++ waits on CLOCK_MONOTONIC, the RunClock's clock.
      if (wake_.wait_until(lock, steady_clock::time_point(nanoseconds(deadline)),
                           [this] { return stop_requested_; }))
        return;
    }
    const int64_t started = monotonic_ns();
    {
      std::lock_guard lock(mutex_);
      frames_.push_back({clock_.to_run_ns(deadline), started - deadline});
    }
    if (options_.frame_work) options_.frame_work();
    deadline += period_ns_;  // fixed schedule: a late frame does not move the next one
  }
}

std::vector<FrameRecord> FrameProbe::frames() const {
  std::lock_guard lock(mutex_);
  return frames_;
}

FrameWindowStats FrameProbe::window_stats(int64_t start_ns, int64_t end_ns) const {
  std::lock_guard lock(mutex_);
  return summarize_frames(frames_, period_ns_, options_.late_threshold_ns, start_ns, end_ns);
}

std::optional<double> FrameProbe::missed_share(int64_t start_ns, int64_t end_ns) const {
  return window_stats(start_ns, end_ns).missed_share();
}

}  // namespace edgeprobe::analysis
