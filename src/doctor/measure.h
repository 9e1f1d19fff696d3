#pragma once
// How doctor measures on a machine whose speed moves: a reference kernel timed all along
// (the machine's current speed) and comparisons run as interleaved pairs of children.
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "doctor/config.h"
#include "doctor/paired.h"

namespace edgeprobe::doctor {

using SteadyTime = std::chrono::steady_clock::time_point;

// One run of the reference kernel: a fixed chain of dependent loads and multiplies over
// 64 KiB (in cache on any CPU), about 1 ms, timed in this thread's CPU time so that
// waiting for a CPU does not count: what is left is the clock, SMT siblings, the host's
// cache and memory traffic (and stolen time where the guest does not subtract it).
double reference_kernel_ms();

// Times the reference kernel every `period_s` in a background thread while doctor runs.
class SpeedProbe {
 public:
  explicit SpeedProbe(double period_s = 0.25);
  ~SpeedProbe();
  SpeedProbe(const SpeedProbe&) = delete;
  SpeedProbe& operator=(const SpeedProbe&) = delete;
  // Kernel milliseconds of the samples taken in [from, to].
  std::vector<double> samples(SteadyTime from, SteadyTime to) const;
  double best_ms() const;  // the fastest sample so far, 0 before the first

 private:
  struct Sample {
    SteadyTime at;
    double ms;
  };
  mutable std::mutex mutex_;
  std::vector<Sample> samples_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The machine's speed during a run: the best kernel time of the whole diagnosis over the
// median of the run's samples (1 = as fast as doctor ever saw it). nullopt without samples.
std::optional<double> speed_factor(const std::vector<double>& kernel_ms, double best_ms);

// One child of a comparison, in the order it ran.
struct PairChild {
  bool is_b = false;
  std::optional<double> value;  // the compared metric (seconds of the reference turn, or load ms)
  std::vector<double> reference_ms;
  std::optional<double> other_cpu_share, steal_share, cpu_pressure_share;
  double wall_s = 0;
  std::string error;
  // The child's median prefill and decode tokens/s: a fix can help one phase and cost the
  // other, and `explain` attributes each phase on its own.
  std::optional<double> prefill_tokens_per_s, decode_tokens_per_s;
};

using result::PairSample;

// A against B: the configuration as given (A) against a fix or an alternative (B). What
// the document keeps (labels, pairs, estimates, verdicts) is the base; the configurations
// and the children's own readings stay here.
struct Comparison : result::PairComparison {
  RunConfig a, b;
  std::vector<PairChild> children;
  // "x1.84 [1.62, 2.10] over 4 interleaved pairs (88 % interval)"
  std::string text() const;
};

// Marks the pairs whose two children saw a different machine (the reference kernel's
// speed differs by more than 10 %, or other processes' or stolen share moved by 10 / 5
// points) and computes the estimate and verdict. Pure: the tests feed it synthetic pairs.
void settle(Comparison& comparison, double best_kernel_ms, const StopRule& rule, bool out_of_time);

}  // namespace edgeprobe::doctor
