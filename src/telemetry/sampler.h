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
};

// Background sampler: one thread wakes hz times a second on an absolute schedule, reads
// every source into a preallocated row and appends it to the timeline under a short lock.
// Sources that are absent or denied are reported once in unavailable() and skipped.
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
  void take_sample(int64_t t_ns, bool force_slow);
  void report(const std::string& line);

  SamplerOptions options_;
  RunClock clock_;
  FsRoot fs_;
  std::vector<std::unique_ptr<Source>> sources_;
  std::vector<size_t> offsets_;  // first series of each source
  std::vector<size_t> counts_;   // number of series of each source
  std::vector<int64_t> every_;   // read a source on every every_[i]-th tick
  std::vector<double> row_;
  std::vector<char> read_;  // which sources this tick reads (no per-tick allocation)

  std::mutex sample_mutex_;       // one sample at a time; guards sources_ and row_
  mutable std::mutex data_mutex_;  // guards timeline_ and unavailable_
  Timeline timeline_;
  std::vector<std::string> unavailable_;
  int64_t ticks_ = 0;
  int64_t slow_every_ = 1;

  std::atomic<int> sampler_tid_{0};  // left out of thread placement
  std::mutex wake_mutex_;
  std::condition_variable wake_;
  bool stop_requested_ = false;
  std::thread thread_;
};

}  // namespace edgeprobe::telemetry
