#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/fs.h"
#include "telemetry/layout.h"
#include "telemetry/source.h"
#include "telemetry/timeline.h"

namespace edgeprobe::telemetry {

struct SamplerOptions {
  double hz = 20;                 // <= 0: telemetry off (no discovery, no thread, empty timeline)
  std::string sysfs_root = "/";   // every path is read under this prefix (fixtures)
  int pid = 0;                    // 0 = this process
  // The sampler thread's nice value (setpriority on its tid); kKeepNice leaves it as is.
  // 19 by default: a waking sampler then does not preempt the workload's threads (which
  // on a small device occupy every core and wait for each other at ggml's barriers); it
  // runs at the next scheduling point instead, and each row is stamped when it is read.
  static constexpr int kKeepNice = 100;
  int thread_nice = 19;
  // The sampler thread's timer slack (PR_SET_TIMERSLACK) in ns; < 0 leaves the kernel's
  // default (50 us); 0 picks min(period / 5, 4 ms), so that a wake-up can share the
  // timer interrupt the scheduler tick raises anyway.
  int64_t timer_slack_ns = 0;
};

// Background sampler: one thread on an absolute schedule of hz ticks a second. A source
// with a lower useful rate (Source::max_hz) is read on every k-th tick only, and the thread
// wakes only on ticks where some source is due: on a device whose fastest source is 10 Hz
// it wakes 10 times a second whatever hz says. Each tick reads the due sources into a
// preallocated row (NaN for the others) and appends it under a short lock. Sources that
// are absent or denied are reported once in unavailable() and skipped.
class Sampler {
 public:
  Sampler(SamplerOptions options, RunClock clock);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Takes a first sample synchronously (so phases starting now are bracketed), then
  // starts the thread. start() after stop() resumes on the same timeline.
  void start();
  // Stops the thread and takes a last sample.
  void stop();
  bool running() const { return thread_.joinable(); }
  // One sample now, from any thread (the runner may call it at phase boundaries).
  void sample_now();
  // One sample stamped t_ns, for replaying fixture snapshots in tests.
  void sample_at(int64_t t_ns);

  Timeline timeline() const;
  // Only what summarize_phase needs for [start, end] (see Timeline::slice).
  Timeline timeline(int64_t start_ns, int64_t end_ns) const;
  std::vector<std::string> unavailable() const;
  const SamplerOptions& options() const { return options_; }

 private:
  void run();
  // grid: the tick this thread wake-up is for; < 0 for a forced sample (every source).
  void take_sample(int64_t t_ns, int64_t grid);
  // The first tick after `grid` on which some source is due.
  int64_t next_due_tick(int64_t grid) const;
  void report(const std::string& line);

  SamplerOptions options_;
  RunClock clock_;
  FsRoot fs_;
  std::vector<std::unique_ptr<Source>> sources_;
  std::vector<size_t> offsets_;  // first series of each source
  std::vector<size_t> counts_;   // number of series of each source
  std::vector<int64_t> every_;   // read a source on every every_[i]-th tick
  std::vector<int64_t> due_;     // the next tick on which each source is read
  std::vector<double> row_;
  std::vector<char> read_;  // which sources this tick reads (no per-tick allocation)

  std::mutex sample_mutex_;       // one sample at a time; guards sources_ and row_
  mutable std::mutex data_mutex_;  // guards timeline_ and unavailable_
  Timeline timeline_;
  std::vector<std::string> unavailable_;
  int64_t slow_every_ = 1;
  int64_t slow_due_ = 0;

  std::atomic<int> sampler_tid_{0};  // left out of thread placement
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool stop_requested_ = false;
  std::thread thread_;
};

}  // namespace edgeprobe::telemetry
