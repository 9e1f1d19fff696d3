#include "doctor/measure.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "doctor/doctor.h"

namespace edgeprobe::doctor {
namespace {

constexpr double kDisturbedSpeed = 0.10;   // the two children's speed factors differ by more
constexpr double kDisturbedOthers = 0.10;  // other processes' share moved by this much
constexpr double kDisturbedSteal = 0.05;

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

double reference_kernel_ms() {
  static const std::vector<uint32_t> table = [] {
    std::vector<uint32_t> t(16384);
    uint32_t x = 2463534242u;
    for (auto& v : t) {
      x ^= x << 13, x ^= x >> 17, x ^= x << 5;
      v = x;
    }
    return t;
  }();
  const double t0 = thread_cpu_ms();
  uint32_t x = 1;
  for (uint32_t i = 0; i < 200000; ++i) x = table[(x ^ i) & 16383] + x * 2654435761u;
  const double ms = thread_cpu_ms() - t0;
  volatile uint32_t sink = x;  // keeps the chain from being optimised away
  (void)sink;
  return ms;
}

SpeedProbe::SpeedProbe(double period_s) {
  thread_ = std::thread([this, period_s] {
    while (!stop_) {
      const double ms = reference_kernel_ms();
      {
        std::lock_guard lock(mutex_);
        samples_.push_back({std::chrono::steady_clock::now(), ms});
      }
      std::this_thread::sleep_for(std::chrono::duration<double>(period_s));
    }
  });
}

SpeedProbe::~SpeedProbe() {
  stop_ = true;
  thread_.join();
}

double SpeedProbe::best_ms() const {
  std::lock_guard lock(mutex_);
  double best = 0;
  for (const auto& s : samples_)
    if (s.ms > 0 && (best == 0 || s.ms < best)) best = s.ms;
  return best;
}

std::vector<double> SpeedProbe::samples(SteadyTime from, SteadyTime to) const {
  std::lock_guard lock(mutex_);
  std::vector<double> out;
  for (const auto& s : samples_)
    if (s.at >= from && s.at <= to) out.push_back(s.ms);
  return out;
}

std::optional<double> speed_factor(const std::vector<double>& kernel_ms, double best_ms) {
  if (kernel_ms.empty() || best_ms <= 0) return std::nullopt;
  const double m = median_of(kernel_ms);
  return m > 0 ? std::optional<double>(std::min(1.0, best_ms / m)) : std::nullopt;
}

std::string Comparison::text() const {
  if (!estimate) return error.empty() ? "not measured" : "not measured: " + error;
  return fmt::format("x{:.2f} [{:.2f}, {:.2f}] over {} interleaved pair(s) ({:.0f} % interval{})", estimate->median, estimate->low,
                     estimate->high, estimate->n, estimate->coverage * 100, includes_disturbed ? ", disturbed pairs included" : "");
}

void settle(Comparison& c, double best_ms, const StopRule& rule, bool out_of_time) {
  c.pairs.clear();
  std::vector<double> speeds;
  for (const auto& child : c.children)
    if (auto s = speed_factor(child.reference_ms, best_ms)) speeds.push_back(*s);
  c.speed_variation = speed_variation(speeds);
  std::vector<double> clean, all;
  // Per phase, B's rate over A's in the same pairs (the same selection as the estimate).
  struct PhaseRatios {
    std::vector<double> clean, all;
  } prefill, decode;
  auto add_phase = [](PhaseRatios& out, const std::optional<double>& a, const std::optional<double>& b, bool disturbed) {
    if (!a || !b || *a <= 0 || *b <= 0) return;
    out.all.push_back(*b / *a);
    if (!disturbed) out.clean.push_back(*b / *a);
  };
  for (size_t i = 0; i + 1 < c.children.size(); i += 2) {
    const PairChild& x = c.children[i];
    const PairChild& y = c.children[i + 1];
    const PairChild& a = x.is_b ? y : x;
    const PairChild& b = x.is_b ? x : y;
    if (!a.value || !b.value || *b.value <= 0) continue;
    PairSample p{*a.value, *b.value, *a.value / *b.value, false, ""};
    const auto sa = speed_factor(a.reference_ms, best_ms), sb = speed_factor(b.reference_ms, best_ms);
    if (sa && sb && std::abs(*sa / *sb - 1) > kDisturbedSpeed)
      p.why = fmt::format("the reference kernel ran at {:.0f} % and {:.0f} % of its best", *sa * 100, *sb * 100);
    else if (a.other_cpu_share && b.other_cpu_share && std::abs(*a.other_cpu_share - *b.other_cpu_share) >= kDisturbedOthers)
      p.why = fmt::format("other processes took {:.0f} % and {:.0f} % of the CPUs", *a.other_cpu_share * 100, *b.other_cpu_share * 100);
    else if (a.steal_share && b.steal_share && std::abs(*a.steal_share - *b.steal_share) >= kDisturbedSteal)
      p.why = fmt::format("the hypervisor stole {:.0f} % and {:.0f} %", *a.steal_share * 100, *b.steal_share * 100);
    p.disturbed = !p.why.empty();
    all.push_back(p.ratio);
    if (!p.disturbed) clean.push_back(p.ratio);
    add_phase(prefill, a.prefill_tokens_per_s, b.prefill_tokens_per_s, p.disturbed);
    add_phase(decode, a.decode_tokens_per_s, b.decode_tokens_per_s, p.disturbed);
    c.pairs.push_back(p);
  }
  // Undisturbed pairs alone once they are enough; until then every pair (and say so).
  c.includes_disturbed = static_cast<int>(clean.size()) < rule.min_pairs && clean.size() < all.size();
  c.estimate = estimate_pairs(c.includes_disturbed ? all : clean);
  c.prefill_estimate = estimate_pairs(c.includes_disturbed ? prefill.all : prefill.clean);
  c.decode_estimate = estimate_pairs(c.includes_disturbed ? decode.all : decode.clean);
  // Every pair run counts against max_pairs, disturbed or not.
  c.verdict = decide(c.estimate, rule, out_of_time || static_cast<int>(all.size()) >= rule.max_pairs || !c.error.empty());
}

namespace {

// A bench report's binding ceilings per phase, from its tests' rooflines; null when none.
nlohmann::json phase_ceilings(const std::optional<result::BenchReport>& report) {
  nlohmann::json out = nlohmann::json::object();
  if (!report) return nullptr;
  for (const auto& r : report->results) {
    if (!r.roofline) continue;
    // In the document's names; a ceiling not measured is left out, as its null is.
    const nlohmann::json roof = result::to_json(*r.roofline);
    for (const char* key : {"prefill_ceiling_tokens_per_s", "decode_ceiling_tokens_per_s", "decode_bound"})
      if (!roof[key].is_null() && !out.contains(key)) out[key] = roof[key];
  }
  return out.empty() ? nlohmann::json(nullptr) : out;
}

}  // namespace

Comparison compare_pairs(const DoctorOptions& o, const SpeedProbe& probe, const ComparisonSpec& spec, SteadyTime deadline,
                         const StopRule& rule, const ProgressFn& progress) {
  Comparison c;
  c.what = spec.what;
  c.a_label = spec.a_label;
  c.b_label = spec.b_label;
  c.a = spec.a;
  c.b = spec.b;
  c.metric = spec.metric_name;
  c.after = spec.after;
  const auto t0 = std::chrono::steady_clock::now();
  double pair_s = 0;  // the last pair's wall time: whether another fits before the deadline
  auto run_child = [&](bool is_b) {
    const auto from = std::chrono::steady_clock::now();
    const BenchRun run = run_bench_child(o, spec.what + (is_b ? ": " + spec.b_label : ": " + spec.a_label), is_b ? spec.b : spec.a, spec.tests);
    const auto to = std::chrono::steady_clock::now();
    PairChild child;
    child.is_b = is_b;
    child.reference_ms = probe.samples(from, to);
    child.other_cpu_share = run.window.other_cpu_share;
    child.steal_share = run.window.steal_share;
    child.cpu_pressure_share = run.window.cpu_pressure_share;
    child.wall_s = run.window.wall_s;
    child.error = run.error;
    if (run.ok()) {
      if (is_b && c.b_ceilings.is_null()) c.b_ceilings = phase_ceilings(run.report);
      child.value = spec.metric(run);
      const Rates r = rates(run.report, spec.tests.n_prompt, spec.tests.n_gen);
      child.prefill_tokens_per_s = r.pp;
      child.decode_tokens_per_s = r.tg;
    }
    if (run.ok() && !child.value) child.error = "the result has no " + spec.metric_name;
    c.children.push_back(child);
    return child.error;
  };
  for (int i = 0;; ++i) {
    const auto pair_t0 = std::chrono::steady_clock::now();
    const bool out_of_time = pair_t0 + std::chrono::duration<double>(pair_s) > deadline;
    settle(c, probe.best_ms(), rule, out_of_time);
    if (c.verdict != PairVerdict::kContinue) break;
    if (progress) progress(fmt::format("{}: pair {} ({} against {})", spec.what, i + 1, spec.a_label, spec.b_label));
    // ABBA: A first in even pairs, B first in odd ones.
    const bool b_first = i % 2 == 1;
    std::string err = run_child(b_first);
    if (err.empty()) err = run_child(!b_first);
    if (!err.empty()) {
      c.error = err;
      settle(c, probe.best_ms(), rule, true);
      break;
    }
    pair_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - pair_t0).count();
  }
  c.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

}  // namespace edgeprobe::doctor
