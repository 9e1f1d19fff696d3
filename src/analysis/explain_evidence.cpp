// The causes a run's own evidence shows, estimated from what it carries: its telemetry
// (other processes' CPU time, cgroup-throttled time), its provenance (the CPU quota, the
// usable CPUs, the CPU variant against the best this CPU runs), its ceilings at the thread
// count it ran, and a sweep of thread counts in the same run. A plain bench run from a
// phone is what most users have; doctor's measured pairs replace these where they exist.
// Every estimate is held to what its cause can physically cost (analysis/cpu_time_cost.h).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "analysis/cpu_time_cost.h"
#include "analysis/explain_internal.h"
#include "core/stats.h"
#include "core/text.h"

namespace edgeprobe::analysis::explain_detail {

namespace {

constexpr double kContentionShare = 0.10;  // as doctor: other processes' share worth naming
constexpr double kThrottledShare = 0.02;   // throttled time over wall time worth naming
constexpr double kWarmCacheShare = 0.9;    // a first load with this much of the file cached is warm
constexpr double kMinCost = 1.02;          // an estimate below this costs nothing worth a factor

bool has_factor(const std::vector<ExplainFactor>& factors, const std::string& name, const std::string& id) {
  return std::any_of(factors.begin(), factors.end(), [&](const ExplainFactor& f) { return f.side == name && f.id == id; });
}

// Sum of a telemetry field over the repetitions' `phase` objects and of their durations;
// none when no repetition recorded it.
struct PhaseSum {
  double value = 0, duration_ms = 0, weighted = 0;
  int reps = 0;
  double mean() const { return duration_ms > 0 ? weighted / duration_ms : 0; }  // duration-weighted
};
std::optional<PhaseSum> telemetry_sum(const json& result, const std::string& phase, const char* field) {
  PhaseSum sum;
  const json& reps = at(result, "/repetitions");
  for (const json& rep : reps.is_array() ? reps : json::array()) {
    const json& t = at(rep, ("/telemetry/" + phase).c_str());
    if (!t.is_object() || !t.contains(field) || !t[field].is_number()) continue;
    const double v = t[field].get<double>(), ms = number_at(t, "/duration_ms");
    sum.value += v;
    sum.duration_ms += ms;
    sum.weighted += v * ms;
    ++sum.reps;
  }
  if (sum.reps == 0) return std::nullopt;
  return sum;
}

ExplainFactor estimate(const std::string& id, const std::string& name, double gain, std::string title, std::string detail,
                       std::vector<std::string> evidence, std::string fix) {
  ExplainFactor f{id, name, std::move(title), name == "B" ? 1 / gain : gain, "estimated", fmt::format("{}: {}", name, detail),
                  std::move(evidence), std::move(fix), std::nullopt};
  return f;
}

struct SideCpus {
  int threads = 0;       // the test's -t
  int usable = 0;        // provenance.usable_cpus
  int machine = 0;       // provenance.cpu_limits.machine_cpus (0 in results from before it)
  double quota = 0;      // provenance.cpu_limits.quota_cpus (0: none)
  std::string cgroup;
};
SideCpus side_cpus(const ExplainSide& side, const PhaseSample& sample) {
  SideCpus c;
  c.threads = sample.threads;
  c.usable = static_cast<int>(number_at(side.bench, "/provenance/usable_cpus"));
  c.machine = static_cast<int>(number_at(side.bench, "/provenance/cpu_limits/machine_cpus"));
  c.quota = number_at(side.bench, "/provenance/cpu_limits/quota_cpus");
  c.cgroup = text_at(side.bench, "/provenance/cpu_limits/cgroup");
  if (c.threads <= 0) c.threads = c.usable;
  return c;
}

void quota_factor(const SideCpus& c, const std::string& name, const std::string& phase, const PhaseSample& sample,
                  std::vector<ExplainFactor>& out) {
  const auto throttled = telemetry_sum(*sample.result, phase, "throttled_ms");
  const double share = throttled && throttled->duration_ms > 0 ? throttled->value / throttled->duration_ms : 0;
  const int need = c.usable > 0 ? std::min(c.threads, c.usable) : c.threads;
  const bool quota_low = c.quota > 0 && c.quota < need;
  if (!quota_low && share < kThrottledShare) return;
  // The quota bounds what throttling can cost; the throttled time is the measurement where
  // the quota is not below the threads' need (bursts, a shared cgroup).
  const double bound = c.quota > 0 ? quota_cost(c.threads, c.usable > 0 ? c.usable : c.threads, c.quota) : 10;
  const double gain = quota_low ? bound : std::min(lost_time_cost(share), std::max(1.0, bound));
  if (gain < kMinCost) return;
  std::vector<std::string> evidence;
  if (c.quota > 0) evidence.push_back(fmt::format("cgroup {} allows {:.2f} CPUs for {} thread(s)", c.cgroup.empty() ? "?" : one_line(c.cgroup, 120), c.quota, need));
  if (throttled) evidence.push_back(fmt::format("throttled {:.0f} ms of {:.0f} ms of {} ({} repetitions)", throttled->value,
                                                throttled->duration_ms, phase, throttled->reps));
  const std::string detail = quota_low ? fmt::format("the {} CPU(s) the threads need over the cgroup's quota of {:.2f} CPUs", need, c.quota)
                                       : fmt::format("throttled {:.0f} % of the phase's wall time (the quota of {} bounds it)",
                                                     share * 100, c.quota > 0 ? fmt::format("{:.2f} CPUs", c.quota) : "the cgroup");
  out.push_back(estimate("throttle.cgroup_quota", name, gain,
                         c.quota > 0 ? fmt::format("a cgroup CPU quota of {:.2f} CPUs throttles the run", c.quota)
                                     : "the cgroup throttles the run",
                         detail, evidence,
                         fmt::format("raise the quota of cgroup {} (echo max > cpu.max, docker --cpus, systemd CPUQuota=)",
                                     c.cgroup.empty() ? "?" : one_line(c.cgroup, 120))));
}

void contention_factor(const SideCpus& c, const std::string& name, const std::string& phase, const PhaseSample& sample,
                       std::vector<ExplainFactor>& out, std::vector<std::string>& unmeasured) {
  const auto other = telemetry_sum(*sample.result, phase, "other_cpu_share");
  if (!other || other->mean() < kContentionShare || c.usable <= 0) return;
  // telemetry's share is of every CPU of the machine; a result from before the machine's
  // count was kept is read as if the usable CPUs were all of them (the larger estimate).
  // Where the run could use fewer CPUs than the machine has, the others' share of those
  // CPUs is what they could take from its threads.
  const int machine = c.machine > 0 ? c.machine : c.usable;
  const auto on_usable = telemetry_sum(*sample.result, phase, "other_usable_cpu_share");
  const double others = on_usable ? on_usable->mean() * c.usable : other->mean() * machine;
  const double fair = contention_cost(c.threads, c.usable, others);
  const double gain = lockstep_contention_cost(c.threads, c.usable, others);
  const std::string title = fmt::format("other processes took {:.0f} % of the CPUs during {}", other->mean() * 100, phase);
  if (gain < kMinCost) {
    unmeasured.push_back(fmt::format("{} contention.other_processes: {} ({:.2f} CPUs of {}), on CPUs that {} thread(s) left "
                                     "idle: it costs this run nothing it can be charged (bound x{:.2f})",
                                     name, title, others, machine, c.threads, gain));
    return;
  }
  const int need = std::min(c.threads, c.usable);
  const std::string sharing = fmt::format(
      "{} thread(s) and the other processes' {:.2f} CPUs sharing {} usable CPU(s) fairly{}", c.threads,
      std::min<double>(others, c.usable), c.usable,
      c.machine > 0 ? "" : " (the machine's CPU count is not in this result: taken as the usable CPUs)");
  out.push_back(estimate(
      "contention.other_processes", name, gain, title,
      need > 1 ? fmt::format(
                     "{} leave each thread {:.0f} % of a CPU (x{:.2f}); the {} threads meet at ggml's "
                     "barriers, so "
                     "they advance only while all of them run: about x{:.2f} (x{:.2f} if their descheduling "
                     "always overlapped)",
                     sharing, 100 / fair, fair, need, gain, fair)
               : fmt::format("{}: x{:.2f}", sharing, gain),
      {fmt::format("other processes: {:.0f} % of {} CPU(s) over {} repetitions of {}", other->mean() * 100,
                   machine, other->reps, phase)},
      "stop the competing work while the model runs, or leave it a CPU (-t one less, -C on the rest)"));
}

// The same test at the usable CPU count in this run's own results (a -t sweep).
std::optional<PhaseSample> sweep_sample(const ExplainSide& side, const std::string& phase, const PhaseSample& sample, int usable) {
  std::optional<PhaseSample> best;
  for (const auto& s : phase_samples(side.bench, phase))
    if (s.test == sample.test && s.threads > sample.threads && s.threads <= usable && (!best || s.threads > best->threads))
      best = s;
  return best;
}

// A probe point measured cleanly: without an error, and not while other processes held the
// CPUs (probe/contention.h: its threads got at least 90 % of the CPU time they wanted; 0 is
// a point from before the share was recorded).
bool clean_point(const json& p) {
  const double share = number_at(p, "/cpu_share");
  return text_at(p, "/error").empty() && (share == 0 || share >= 0.9) && number_at(p, "/median_gflop_per_s") > 0;
}

// How much faster prefill's matmuls run at `full` threads than at `threads`: the median over
// the model's own prefill shapes probed at both counts (the probe's kernel points), else the
// generic matmul of the model's main type. 0 when no clean pair of points exists.
double prefill_thread_gain(const json& ceilings, const std::string& type, int threads, int full, std::string& basis) {
  std::vector<double> ratios;
  const json& kernels = at(ceilings, "/model_kernels");
  auto rate = [&](const json& points, auto same) {
    double best = 0;
    for (const json& p : points.is_array() ? points : json::array())
      if (same(p) && clean_point(p)) best = std::max(best, number_at(p, "/median_gflop_per_s"));
    return best;
  };
  for (const json& k : kernels.is_array() ? kernels : json::array()) {
    if (text_at(k, "/phase") != "prefill" || static_cast<int>(number_at(k, "/threads")) != threads || !clean_point(k)) continue;
    const double wide = rate(kernels, [&](const json& p) {
      return text_at(p, "/phase") == "prefill" && static_cast<int>(number_at(p, "/threads")) == full && p.value("type", "") == k.value("type", "") &&
             p.value("rows", 0) == k.value("rows", 0) && p.value("cols", 0) == k.value("cols", 0) && p.value("tokens", 0) == k.value("tokens", 0);
    });
    if (wide > 0) ratios.push_back(wide / number_at(k, "/median_gflop_per_s"));
  }
  if (!ratios.empty()) {
    std::sort(ratios.begin(), ratios.end());
    basis = fmt::format("the model's own prefill matmuls probed at {} and at {} thread(s) (median of {} shapes)", full, threads, ratios.size());
    return ratios[ratios.size() / 2];
  }
  const json& points = at(ceilings, "/compute/points");
  auto generic = [&](int t) {
    return rate(points, [&](const json& p) { return text_at(p, "/type") == type && static_cast<int>(number_at(p, "/threads")) == t; });
  };
  if (generic(threads) > 0 && generic(full) > 0) {
    basis = fmt::format("the probe's {} matmul at {} and at {} thread(s)", type, full, threads);
    return generic(full) / generic(threads);
  }
  return 0;
}

void thread_count_factor(const ExplainSide& side, const SideCpus& c, const std::string& name, const std::string& phase,
                         const PhaseSample& sample, std::vector<ExplainFactor>& out) {
  if (c.threads <= 0 || c.usable <= 0 || c.threads >= c.usable || phase == "load") return;
  const double bound = static_cast<double>(c.usable) / c.threads;  // threads t of n: at most n / t
  double gain = 0;
  std::string detail, basis = "estimated";
  if (const auto wider = sweep_sample(side, phase, sample, c.usable)) {
    gain = wider->median / sample.median;
    basis = "measured";
    detail = fmt::format("this run's own sweep: -t {} at {:.4g} tok/s against -t {} at {:.4g} (medians)", wider->threads,
                         wider->median, c.threads, sample.median);
  } else if (phase == "decode") {
    const json& roof = at(*sample.result, "/roofline");
    const double at_threads = number_at(roof, "/decode_ceiling_at_threads_tokens_per_s"), full = number_at(roof, "/decode_ceiling_tokens_per_s");
    if (at_threads > 0 && full > 0) {
      gain = full / at_threads;
      detail = fmt::format("the device's decode ceiling at {} thread(s) ({:.4g} tok/s) over at {} ({:.4g} tok/s)",
                           static_cast<int>(number_at(side.bench, "/provenance/ceilings/threads")), full, c.threads, at_threads);
    }
  } else {
    const json& ceilings = at(side.bench, "/provenance/ceilings");
    std::string type = text_at(side.bench, "/provenance/models/0/quant");
    std::transform(type.begin(), type.end(), type.begin(), [](unsigned char ch) { return std::tolower(ch); });
    const int full_threads = static_cast<int>(number_at(ceilings, "/threads"));
    std::string basis_text;
    if (const double g = full_threads > c.threads ? prefill_thread_gain(ceilings, type, c.threads, full_threads, basis_text) : 0; g > 0) {
      gain = g;
      detail = fmt::format("{}: x{:.2f}", basis_text, g);
    } else {
      gain = bound;
      detail = fmt::format("prefill's matmuls split over the threads: {} CPUs against {} thread(s) (no probe point at {} "
                           "thread(s); the most it can cost)",
                           c.usable, c.threads, c.threads);
    }
  }
  if (gain < kMinCost) return;
  gain = std::min(gain, bound);
  ExplainFactor f = estimate("threads.count", name, gain, fmt::format("{} thread(s) on {} usable CPUs", c.threads, c.usable), detail,
                             {fmt::format("-t {} of {} usable CPUs (bound x{:.2f})", c.threads, c.usable, bound)},
                             fmt::format("-t {}", c.usable));
  f.basis = basis;
  out.push_back(std::move(f));
}

// The device's ceiling for this phase with the variant that loaded against with the best
// one this CPU runs (bench probes both when it falls back: Roofline::best_variant).
void variant_factor(const ExplainSide& side, const std::string& name, const std::string& phase, const PhaseSample& sample,
                    std::vector<ExplainFactor>& out) {
  if (phase == "load") return;
  const json& roof = at(*sample.result, "/roofline");
  const double own = number_at(roof, ("/" + phase + "_ceiling_tokens_per_s").c_str());
  const double best = number_at(roof, ("/best_variant/" + phase + "_ceiling_tokens_per_s").c_str());
  if (own <= 0 || best <= 0 || best / own < kMinCost) return;
  const std::string best_name = text_at(roof, "/best_variant/variant").empty() ? side.best_variant : text_at(roof, "/best_variant/variant");
  out.push_back(estimate(
      "kernel.isa_fallback", name, best / own,
      fmt::format("the ggml CPU variant '{}' ran where this CPU can run '{}'", side.cpu_variant, best_name),
      fmt::format("the device's {} ceiling with '{}' ({:.4g} tok/s{}) over with '{}' ({:.4g} tok/s), both probed on that device",
                  phase, best_name, best, phase == "decode" ? ", " + text_at(roof, "/best_variant/decode_bound") + "-bound" : "",
                  side.cpu_variant, own),
      {fmt::format("{} ceilings: '{}' {:.4g}, '{}' {:.4g} tok/s", phase, side.cpu_variant, own, best_name, best)},
      fmt::format("load the '{}' variant: drop --cpu-variant, or install and load libggml-cpu-{}.so", best_name, best_name)));
}

// A first load that read the model file from storage (little of it in the page cache before)
// against the warm loads of the same run: measured in that run, so a cold A against a
// warm B, the usual order of two runs, is a cause and not the hardware.
void cold_cache_factor(const std::string& name, const PhaseSample& sample, std::vector<ExplainFactor>& out) {
  const json& load = at(*sample.result, "/load");
  const double share = number_at(load, "/page_cache_resident_share_before");
  const json& samples = at(load, "/samples_ms");
  if (!samples.is_array() || samples.size() < 2 ||
      !at(load, "/page_cache_resident_share_before").is_number() || share >= kWarmCacheShare)
    return;
  std::vector<double> warm;
  for (size_t i = 1; i < samples.size(); ++i)
    if (samples[i].is_number() && samples[i].get<double>() > 0) warm.push_back(samples[i].get<double>());
  const double cold = samples[0].is_number() ? samples[0].get<double>() : 0;
  if (warm.empty() || cold <= 0) return;
  const double warm_ms = stats::quantile(warm, 0.5);
  if (cold / warm_ms < kMinCost) return;
  ExplainFactor f = estimate(
      "load.cold_cache", name, cold / warm_ms,
      fmt::format(
          "the first load read the model from storage ({:.0f} % of the file in the page cache before it)",
          share * 100),
      fmt::format("the run's first load ({:.4g} ms) over its warm loads (median {:.4g} ms of {})", cold,
                  warm_ms, warm.size()),
      {fmt::format(
          "page cache before the first load: {:.0f} % of the file; loads {:.4g} ms cold, {:.4g} ms warm",
          share * 100, cold, warm_ms)},
      "a first load reads the file from storage: compare warm loads, or keep the model in the page cache "
      "(vmtouch, a "
      "preceding read)");
  f.basis = "measured";
  out.push_back(std::move(f));
}

}  // namespace

std::string doctor_command(const ExplainSide& side, const PhaseSample& sample) {
  // Words from a result file reach a shell a person pastes into: each one quoted.
  const std::string model = text_at(side.bench, "/provenance/models/0/path");
  std::string cmd = "edgeprobe doctor -m " + (model.empty() ? std::string("MODEL") : one_line(shell_quote(model), 300));
  const json& config = sample.result ? at(*sample.result, "/config") : json();
  if (const int t = static_cast<int>(number_at(config, "/n_threads")); t > 0) cmd += fmt::format(" -t {}", t);
  if (const std::string mask = text_at(config, "/cpu_mask"); !mask.empty()) cmd += " -C " + one_line(shell_quote(mask), 40);
  if (side.variant_fallback && !side.cpu_variant.empty()) cmd += " --cpu-variant " + one_line(shell_quote(side.cpu_variant), 40);
  for (const char* key : {"type_k", "type_v"})
    if (const std::string type = text_at(config, (std::string("/") + key).c_str()); !type.empty() && type != "f16")
      cmd += fmt::format(" --cache-type-{} {}", key[5], one_line(shell_quote(type), 20));
  if (at(config, "/use_mmap") == false) cmd += " --mmap 0";
  return cmd;
}

void evidence_factors(const ExplainSide& side, const std::string& name, const std::string& phase, const PhaseSample& sample,
                      std::vector<ExplainFactor>& factors, std::vector<std::string>& unmeasured) {
  if (!sample.result || !side.emulated.empty()) return;  // an emulator's timings estimate nothing of a device
  const SideCpus c = side_cpus(side, sample);
  std::vector<ExplainFactor> found;
  if (!has_factor(factors, name, "throttle.cgroup_quota")) quota_factor(c, name, phase, sample, found);
  if (!has_factor(factors, name, "contention.other_processes")) contention_factor(c, name, phase, sample, found, unmeasured);
  if (!has_factor(factors, name, "threads.count") && !has_factor(factors, name, "threads.oversubscribed"))
    thread_count_factor(side, c, name, phase, sample, found);
  if (c.usable > 0 && c.threads > c.usable && !has_factor(factors, name, "threads.oversubscribed") && side.kind == "bench")
    unmeasured.push_back(fmt::format("{} threads.oversubscribed: {} threads on {} usable CPU(s) wait for each other at every "
                                     "barrier; nothing in the run estimates what that costs: {} measures it (fix -t {})",
                                     name, c.threads, c.usable, doctor_command(side, sample), c.usable));
  if (phase == "load" && !has_factor(factors, name, "load.cold_cache"))
    cold_cache_factor(name, sample, found);
  if (side.variant_fallback && !has_factor(factors, name, "kernel.isa_fallback")) variant_factor(side, name, phase, sample, found);
  if (side.variant_fallback && !has_factor(factors, name, "kernel.isa_fallback") && !has_factor(found, name, "kernel.isa_fallback"))
    unmeasured.push_back(fmt::format("{} kernel.isa_fallback: the ggml CPU variant '{}' ran where this CPU can run '{}': {} "
                                     "measures what it costs",
                                     name, side.cpu_variant, side.best_variant, doctor_command(side, sample)));
  for (auto& f : found) factors.push_back(std::move(f));
}

}  // namespace edgeprobe::analysis::explain_detail
