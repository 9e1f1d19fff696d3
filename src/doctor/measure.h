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

struct PairSample {
  double a = 0, b = 0, ratio = 0;  // ratio = a / b: > 1 when B is faster
  bool disturbed = false;
  std::string why;  // what moved between its two children
};

// A against B: the configuration as given (A) against a fix or an alternative (B).
struct Comparison {
  std::string what;              // "threads", "cpu variant", "mmap"
  std::string a_label, b_label;  // "-t 2", "-t 1"
  RunConfig a, b;
  std::string metric = "seconds per reference turn";
  std::vector<PairChild> children;
  std::vector<PairSample> pairs;
  std::optional<PairedEstimate> estimate;  // over the undisturbed pairs when there are enough
  // The same pairs per phase: B's tokens/s over A's (> 1 = B is faster); nullopt when the
  // children do not time that phase.
  std::optional<PairedEstimate> prefill_estimate, decode_estimate;
  // The first B child's ceilings per phase ({"prefill_ceiling_tokens_per_s", ...}): for a
  // variant comparison, the device's ceilings with the better variant (`explain` needs
  // them to keep a fallback out of the hardware factor). Null when its bench had none.
  nlohmann::json b_ceilings;
  bool includes_disturbed = false;
  PairVerdict verdict = PairVerdict::kInconclusive;
  // A first round that disagreed with the reason for measuring, measured again.
  std::optional<PairedEstimate> first_estimate;
  PairVerdict first_verdict = PairVerdict::kContinue;
  double speed_variation = 0;  // of the reference kernel over this comparison's children
  std::string error;           // a child failed
  double wall_s = 0;
  // "x1.84 [1.62, 2.10] over 4 interleaved pairs (88 % interval)"
  std::string text() const;
};
nlohmann::json to_json(const Comparison& comparison);

// Marks the pairs whose two children saw a different machine (the reference kernel's
// speed differs by more than 10 %, or other processes' or stolen share moved by 10 / 5
// points) and computes the estimate and verdict. Pure: the tests feed it synthetic pairs.
void settle(Comparison& comparison, double best_kernel_ms, const StopRule& rule, bool out_of_time);

}  // namespace edgeprobe::doctor
