#pragma once
#include <atomic>
#include <memory>

namespace edgeprobe {

// A request to stop a job after the unit in flight (a repetition, a turn, a lab job):
// what was measured is kept. Copies share one flag, so the job context, the runners and
// whoever asks (a signal handler, a test, a lab controller) all see the same request.
class StopToken {
 public:
  // A flag of its own, not set: a job that only its holder can stop.
  StopToken() : flag_(std::make_shared<std::atomic<bool>>(false)) {}
  // The process's flag, which Ctrl-C and SIGTERM set (request_process_stop).
  static StopToken process();

  void request_stop() const noexcept { flag_->store(true); }
  bool stop_requested() const noexcept { return flag_->load(); }
  // Readies the flag for another sweep in the same process.
  void reset() const noexcept { flag_->store(false); }

 private:
  explicit StopToken(std::shared_ptr<std::atomic<bool>> flag) : flag_(std::move(flag)) {}
  std::shared_ptr<std::atomic<bool>> flag_;
};

// Sets the process's flag; async-signal-safe (one store to a lock-free atomic of static
// storage: no allocation, no lock, no reference count), so a signal handler may call it.
void request_process_stop() noexcept;

// A second Ctrl-C: stop at once. The engine aborts the computation in flight (llama.cpp's
// abort callback asks between graph nodes), the runners drop the repetition or turn it
// belonged to and end as after a stop request, keeping what finished. Async-signal-safe;
// sets the process's stop flag too.
void request_process_stop_now() noexcept;
bool process_stop_now_requested() noexcept;

// While one lives, code that checks the process's flag is running (a job between its
// units, a lab run, kv-serve's loop), so a first Ctrl-C or SIGTERM can ask it to stop after
// the unit in flight. Outside every one nothing would ever see the flag (reading a plan,
// opening a file, blocked in an open(2) of a FIFO): the signal then ends the process at
// once (process_stop_watched says which applies).
class ProcessStopWatch {
 public:
  ProcessStopWatch() noexcept;
  ~ProcessStopWatch();
  ProcessStopWatch(const ProcessStopWatch&) = delete;
  ProcessStopWatch& operator=(const ProcessStopWatch&) = delete;
};
bool process_stop_watched() noexcept;  // async-signal-safe

}  // namespace edgeprobe
