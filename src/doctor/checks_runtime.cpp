// What happens while the model runs: clocks below their maximum (governor, power cap,
// heat), decode that slows partway through, a slow first load, and what is left against
// the device's measured ceilings.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "analysis/stability.h"
#include "doctor/checks_internal.h"

namespace edgeprobe::doctor::checks {

// ---- 6. throttling: clock and heat ----------------------------------------------------

namespace {

constexpr double kGpuBusyShare = 0.30;  // a GPU this busy on average was doing the run's work
constexpr const char* kGpuCoolFix =
    "cool the device (no case, a fan or heatsink), add --delay between tests, or lighten the GPU's load";
constexpr const char* kJetsonClockFix =
    "a higher power mode and fixed clocks while measuring (sudo nvpmodel -m 0; sudo jetson_clocks)";
constexpr const char* kDevfreqClockFix =
    "the performance governor on the GPU's devfreq while measuring (echo performance > <devfreq>/governor, "
    "as root), or a performance mode";

// One GPU over prefill+decode: duration-weighted clock and busy shares, lowest cap, heat.
struct GpuAcc {
  std::string kind, governor, rail, rail_shared_with;
  double share_sum = 0, share_ms = 0, busy_sum = 0, busy_ms = 0, mean_freq_sum = 0;
  double min_cap = 1, max_freq_hz = 0;
  double max_temp = NAN;
};

void add_gpu_phase(const json& g, double ms, GpuAcc& a) {
  a.kind = text(g, "kind", a.kind);
  a.governor = text(g, "governor", a.governor);
  a.rail = text(g, "rail", a.rail);
  a.rail_shared_with = text(g, "rail_shared_with", a.rail_shared_with);
  a.max_freq_hz = num(g, "max_freq_hz", a.max_freq_hz);
  if (field(g, "mean_freq_share").is_number()) {
    a.share_sum += num(g, "mean_freq_share") * ms;
    a.mean_freq_sum += num(g, "mean_freq_hz") * ms;
    a.share_ms += ms;
  }
  if (field(g, "mean_busy_share").is_number()) {
    a.busy_sum += num(g, "mean_busy_share") * ms;
    a.busy_ms += ms;
  }
  if (field(g, "min_cap_share").is_number()) a.min_cap = std::min(a.min_cap, num(g, "min_cap_share"));
  if (field(g, "max_temp_c").is_number() && (std::isnan(a.max_temp) || num(g, "max_temp_c") > a.max_temp))
    a.max_temp = num(g, "max_temp_c");
}

// The evidence of a GPU clock finding: the GPU, its figures, governor, heat and rail.
std::vector<std::string> gpu_evidence(const std::string& name, const GpuAcc& a, double share, double busy) {
  std::vector<std::string> ev = {fmt::format(
      "GPU {} ({}) was busy {} of the time and ran at {} of its {:.0f} MHz on average ({:.0f} MHz)", name,
      a.kind, pct(busy), pct(share), a.max_freq_hz / 1e6, a.mean_freq_sum / a.share_ms / 1e6)};
  if (a.min_cap < 0.98) {
    ev.push_back(fmt::format("its clock was capped to {} of its top clock", pct(a.min_cap)));
  }
  if (!a.governor.empty()) ev.push_back(fmt::format("governor '{}'", a.governor));
  if (!std::isnan(a.max_temp)) ev.push_back(fmt::format("GPU temperature up to {:.1f} °C", a.max_temp));
  if (!a.rail.empty()) {
    const std::string shared = a.rail_shared_with.empty() ? "" : " (shared with " + a.rail_shared_with + ")";
    ev.push_back("power rail " + a.rail + shared);
  }
  return ev;
}

// A GPU kept busy while its clock ran below its maximum: with heat or a cap it is thermal
// throttling, without them its governor or a power mode holds it back.
void check_gpu_clock(const std::map<std::string, GpuAcc>& gpus, std::vector<Finding>& out) {
  for (const auto& [name, a] : gpus) {
    if (a.share_ms <= 0 || a.busy_ms <= 0) continue;
    const double share = a.share_sum / a.share_ms, busy = a.busy_sum / a.busy_ms;
    if (busy < kGpuBusyShare || share >= kLowClockShare) continue;
    const bool capped = a.min_cap < 0.98, hot = !std::isnan(a.max_temp) && a.max_temp >= kHotC;
    const json max_temp = std::isnan(a.max_temp) ? json(nullptr) : json(a.max_temp);
    Finding f{"", Severity::kWarning, "", gpu_evidence(name, a, share, busy), "prefill+decode",
              1.0 / std::max(share, 0.05),
              "estimated: the GPU's maximum clock over its mean clock while busy (an upper bound: only GPU "
              "work gains, and memory-bound work gains less)",
              "",
              {{"gpu", name}, {"kind", a.kind}, {"mean_freq_share", share}, {"mean_busy_share", busy},
               {"min_cap_share", a.min_cap}, {"governor", a.governor}, {"max_temp_c", max_temp}}};
    if (hot || capped) {
      f.id = "throttle.gpu_thermal";
      f.title = hot ? fmt::format("GPU thermal throttling: '{}' ran at {} of its clock at {:.0f} °C", name,
                                  pct(share), a.max_temp)
                    : fmt::format("GPU clock cap: '{}' capped to {} of its clock while busy", name,
                                  pct(a.min_cap));
      f.fix = kGpuCoolFix;
    } else {
      f.id = "throttle.gpu_clock";
      f.title = fmt::format("GPU '{}' ran at {} of its maximum clock while {} busy", name, pct(share),
                            pct(busy));
      f.fix = a.kind == "jetson" ? kJetsonClockFix : kDevfreqClockFix;
    }
    out.push_back(std::move(f));
  }
}

}  // namespace

void check_clock_and_heat(const Evidence& e, std::vector<Finding>& out) {
  const auto& o = e.options;
  const result::TestResult* tg = rv::find_result(e.primary.report, fmt::format("tg{}", o.n_gen));
  const result::TestResult* pp = rv::find_result(e.primary.report, fmt::format("pp{}", o.n_prompt));
  // Per cluster: duration-weighted mean clock share and lowest cap during prefill+decode,
  // on the clusters that held at least a fifth of the thread-time (or all when unknown).
  struct Acc {
    double share_sum = 0, ms = 0, min_cap = 1, thread_share = 0, thread_ms = 0;
    bool thread_known = false;
  };
  std::map<std::string, Acc> acc;
  std::map<std::string, GpuAcc> gpus;
  double first_temp = NAN, max_temp = NAN;
  std::string hottest;
  for (const result::TestResult* r : {pp, tg}) {
    if (!r) continue;
    for (const auto& rep : r->repetitions) {
      for (const char* phase : {"prefill", "decode"}) {
        const auto& p = field(rep.telemetry, phase);
        if (!p.is_object()) continue;
        const double ms = num(p, "duration_ms");
        for (const auto& c : p.value("clusters", json::array())) {
          auto& a = acc[text(c, "name")];
          if (c.contains("mean_freq_share") && field(c, "mean_freq_share").is_number()) {
            a.share_sum += field(c, "mean_freq_share").get<double>() * ms;
            a.ms += ms;
          }
          if (c.contains("min_cap_share") && field(c, "min_cap_share").is_number()) a.min_cap = std::min(a.min_cap, field(c, "min_cap_share").get<double>());
          if (c.contains("thread_time_share") && field(c, "thread_time_share").is_number()) {
            a.thread_known = true;
            a.thread_share += field(c, "thread_time_share").get<double>() * ms;
            a.thread_ms += ms;
          }
        }
        for (const auto& g : p.value("gpus", json::array())) add_gpu_phase(g, ms, gpus[text(g, "name")]);
        const json thermal = p.value("thermal", json::object());
        for (const auto& [zone, t] : thermal.items()) {
          const double m = num(t, "max_temp_c", NAN);
          if (std::isnan(first_temp)) first_temp = num(t, "mean_temp_c", m);
          if (std::isnan(max_temp) || m > max_temp) {
            max_temp = m;
            hottest = zone;
          }
        }
      }
    }
  }
  const bool hot = !std::isnan(max_temp) && (max_temp >= kHotC || (!std::isnan(first_temp) && max_temp - first_temp >= kTempRise));
  for (const auto& [name, a] : acc) {
    if (a.ms <= 0) continue;
    if (a.thread_known && a.thread_ms > 0 && a.thread_share / a.thread_ms < 0.2) continue;
    const double share = a.share_sum / a.ms;
    if (share >= kLowClockShare) continue;
    const telemetry::Cluster* cluster = nullptr;
    for (const auto& c : e.device.cpus.clusters)
      if (c.name == name) cluster = &c;
    const std::string governor = cluster ? cluster->governor : "";
    std::string driver;
    if (cluster && !cluster->policies.empty()) driver = e.device.cpus.policies[cluster->policies[0]].driver;
    // intel_pstate / amd-pstate-epp "powersave" is their normal dynamic mode, not a cap.
    const bool pstate = driver.find("pstate") != std::string::npos;
    const bool saving_governor = governor == "powersave" && !pstate ? true : governor == "conservative" || governor == "userspace";
    std::vector<std::string> ev = {fmt::format("cluster {} ran at {} of its maximum clock on average under load", name, pct(share))};
    if (a.min_cap < 0.98) ev.push_back(fmt::format("its scaling_max_freq was capped to {} of the maximum", pct(a.min_cap)));
    if (!governor.empty()) ev.push_back(fmt::format("governor '{}'{}", governor, driver.empty() ? "" : " (driver " + driver + ")"));
    if (!std::isnan(max_temp)) ev.push_back(fmt::format("hottest zone {}: {:.1f} °C (from {:.1f} °C)", hottest, max_temp, first_temp));
    Finding f{"", Severity::kWarning, "", ev, "prefill+decode", 1.0 / std::max(share, 0.05),
              "estimated: maximum clock over the mean clock under load (an upper bound: memory-bound decode gains less)", "",
              {{"cluster", name}, {"mean_freq_share", share}, {"min_cap_share", a.min_cap}, {"governor", governor},
               {"max_temp_c", std::isnan(max_temp) ? json(nullptr) : json(max_temp)}}};
    if (a.min_cap < 0.98 && hot) {
      f.id = "throttle.thermal";
      f.title = fmt::format("thermal throttling: '{}' capped to {} of its clock at {:.0f} °C", name, pct(a.min_cap), max_temp);
      f.fix = "cool the device (no case, a fan or cold plate), add --delay between tests, or use a lighter quantisation";
    } else if (saving_governor) {
      f.id = "power.governor";
      f.title = fmt::format("the '{}' governor holds '{}' at {} of its clock under load", governor, name, pct(share));
      f.fix = cluster && !cluster->policies.empty()
                  ? fmt::format("echo performance > {}/scaling_governor (as root; on a phone: leave battery saver, use a performance mode)",
                                e.device.cpus.policies[cluster->policies[0]].dir)
                  : "set the performance governor (cpupower frequency-set -g performance); on a phone: leave battery saver";
    } else if (a.min_cap < 0.98) {
      f.id = "throttle.power_cap";
      f.title = fmt::format("the clock of '{}' is capped to {} of its maximum", name, pct(a.min_cap));
      f.fix = "find what lowers scaling_max_freq (thermal daemon, power profile, battery saver) and lift it";
    } else {
      f.id = "throttle.clock";
      f.title = fmt::format("'{}' ran at {} of its maximum clock under load", name, pct(share));
      f.fix = "set the performance governor or a performance power profile while measuring";
    }
    out.push_back(std::move(f));
  }
  check_gpu_clock(gpus, out);
  if (hot && std::none_of(out.begin(), out.end(), [](const Finding& f) {
        return f.id == "throttle.thermal" || f.id == "throttle.gpu_thermal";
      })) {
    out.push_back({"thermal.hot", Severity::kInfo, fmt::format("{} reached {:.1f} °C during the run", hottest, max_temp),
                   {fmt::format("from {:.1f} °C", first_temp)}, "prefill+decode", std::nullopt, "",
                   "watch for throttling in longer runs (edgeprobe session); --delay lets the device cool between tests", {}});
  }
}

// The biggest cores held back before anything runs: taken offline (core control, a power
// mode) or their policy's clock pinned far below what the core can do (scaling_max_freq
// lowered, or a powersave governor that holds scaling_min_freq). Read from cpufreq and the
// online list, so it is named even when the threads never reached those cores.
void check_big_cores(const Evidence& e, std::vector<Finding>& out) {
  const auto& layout = e.device.cpus;
  if (layout.clusters.size() < 2) return;  // "big" needs a smaller kind beside it
  const telemetry::Cluster* big = nullptr;
  for (const auto& c : layout.clusters)
    if (c.max_khz && (!big || *c.max_khz > *big->max_khz)) big = &c;
  if (!big) return;
  const double max_ghz = static_cast<double>(*big->max_khz) / 1e6;
  std::vector<int> offline;
  for (int cpu : big->cpus)
    if (!layout.online.empty() && std::find(layout.online.begin(), layout.online.end(), cpu) == layout.online.end()) offline.push_back(cpu);
  if (!offline.empty()) {
    std::string commands;
    for (int cpu : offline) commands += fmt::format("{}echo 1 > /sys/devices/system/cpu/cpu{}/online", commands.empty() ? "" : "; ", cpu);
    out.push_back({"power.big_core_offline", Severity::kWarning,
                   fmt::format("big core(s) {} of '{}' ({:.2f} GHz) are offline", cpu_list_text(offline), big->name, max_ghz),
                   {fmt::format("/sys/devices/system/cpu/online lists {}; '{}' has CPUs {}", cpu_list_text(layout.online), big->name, cpu_list_text(big->cpus))},
                   "prefill+decode", std::nullopt, "none: an offline core runs nothing doctor could measure; bring it online and run doctor again",
                   commands + " (as root); on a phone core control or a battery/power mode takes big cores offline: switch it to a performance mode",
                   {{"cluster", big->name}, {"offline_cpus", offline}}});
  }
  // The lowest clock the cluster's policies allow it to reach.
  const telemetry::CpufreqPolicy* pinned = nullptr;
  double allowed = 1;
  std::string how;
  for (size_t i : big->policies) {
    const auto& p = layout.policies[i];
    if (!p.cpuinfo_max_khz || *p.cpuinfo_max_khz <= 0) continue;
    const double cap = p.scaling_max_khz ? static_cast<double>(*p.scaling_max_khz) / static_cast<double>(*p.cpuinfo_max_khz) : 1.0;
    // powersave holds scaling_min_freq, except intel_pstate/amd-pstate's dynamic mode of that name.
    const bool powersave = p.governor == "powersave" && p.driver.find("pstate") == std::string::npos && p.scaling_min_khz;
    const double floor = powersave ? static_cast<double>(*p.scaling_min_khz) / static_cast<double>(*p.cpuinfo_max_khz) : 1.0;
    if (std::min(cap, floor) < allowed) {
      allowed = std::min(cap, floor);
      pinned = &p;
      how = floor < cap ? fmt::format("governor 'powersave' holds scaling_min_freq {:.2f} GHz", static_cast<double>(*p.scaling_min_khz) / 1e6)
                        : fmt::format("scaling_max_freq {:.2f} GHz of cpuinfo_max_freq {:.2f} GHz", static_cast<double>(*p.scaling_max_khz) / 1e6,
                                      static_cast<double>(*p.cpuinfo_max_khz) / 1e6);
    }
  }
  if (!pinned || allowed >= kPinnedClockShare) return;
  // A clock finding from the run itself already names this cluster, with what it measured.
  if (std::any_of(out.begin(), out.end(), [&](const Finding& f) {
        return f.id != "power.big_core_offline" && f.data.is_object() && f.data.value("cluster", std::string()) == big->name;
      }))
    return;
  const std::string dir = pinned->dir;
  out.push_back({"power.big_core_pinned", Severity::kWarning,
                 fmt::format("the big cores of '{}' (CPUs {}) are held at {} of their {:.2f} GHz", big->name, cpu_list_text(big->cpus), pct(allowed), max_ghz),
                 {fmt::format("{}: {}", pinned->name, how), fmt::format("governor '{}', driver '{}'", pinned->governor, pinned->driver)},
                 "prefill+decode", 1.0 / allowed,
                 "estimated: the cores' maximum clock over the clock they are held to (an upper bound: only threads on these cores gain, "
                 "and memory-bound decode gains less)",
                 pinned->governor == "powersave"
                     ? fmt::format("echo schedutil > {}/scaling_governor (as root); on a phone: leave battery saver, use a performance mode", dir)
                     : fmt::format("echo {} > {}/scaling_max_freq (as root); on a phone the cap comes from a power mode or a thermal engine: "
                                   "leave battery saver, let the device cool",
                                   pinned->cpuinfo_max_khz.value_or(0), dir),
                 {{"cluster", big->name}, {"allowed_clock_share", allowed}, {"policy", pinned->name}}});
}

// Decode that steps down within the run: PELT on the per-token latencies of all the
// repetitions in order, tied to that repetition's telemetry.
void check_decode_steps(const Evidence& e, std::vector<Finding>& out) {
  const result::TestResult* tg = rv::find_result(e.primary.report, fmt::format("tg{}", e.options.n_gen));
  if (!tg) return;
  std::vector<double> steps;
  std::vector<size_t> rep_of_step;
  for (size_t i = 0; i < tg->repetitions.size(); ++i)
    for (const double ms : tg->repetitions[i].decode_step_ms) {
      steps.push_back(ms);
      rep_of_step.push_back(i);
    }
  if (steps.size() < 16) return;
  for (const auto& cp : analysis::detect_change_points(steps)) {
    // Latency up = throughput down.
    if (cp.mean_before <= 0 || cp.mean_after / cp.mean_before - 1 < kStepDown) continue;
    const size_t rep = rep_of_step[cp.index];
    const auto& t = tg->repetitions[rep].telemetry;
    std::vector<std::string> ev = {fmt::format("per-token latency rose from {:.2f} to {:.2f} ms at token {} of {} (repetition {})",
                                               cp.mean_before, cp.mean_after, cp.index, steps.size(), rep + 1)};
    bool explained = false;
    bool by_neighbours_only = false;  // other processes at that moment, and nothing of the device's own
    if (t.is_object() && t.contains("decode")) {
      const auto& d = field(t, "decode");
      if (num(d, "throttled_ms") > 0) {
        explained = true;
        ev.push_back(fmt::format("that repetition was cgroup-throttled for {:.0f} ms", num(d, "throttled_ms")));
      }
      if (num(d, "other_cpu_share") >= kContentionShare) {
        by_neighbours_only = !explained;
        explained = true;
        ev.push_back(fmt::format("other processes took {} of the CPUs then", pct(num(d, "other_cpu_share"))));
      }
      for (const auto& c : d.value("clusters", json::array()))
        if (c.contains("min_freq_share") && field(c, "min_freq_share").is_number() && field(c, "min_freq_share").get<double>() < kLowClockShare) {
          explained = true;
          by_neighbours_only = false;
          ev.push_back(fmt::format("cluster {}'s clock fell to {} of its maximum", text(c, "name"), pct(field(c, "min_freq_share").get<double>())));
        }
    }
    // The reference kernel, timed beside the run: when it slowed as much, the machine
    // slowed (host, clock, neighbours), not the model.
    std::vector<double> kernel = e.primary.reference_ms;
    std::sort(kernel.begin(), kernel.end());
    const bool machine_slowed = kernel.size() >= 4 && kernel[kernel.size() - 2] >= kernel.front() * (1 + kStepDown);
    if (machine_slowed) {
      ev.push_back(fmt::format("the reference kernel timed beside the run slowed as well: {:.2f} to {:.2f} ms over {} readings "
                               "(x{:.2f}): the machine slowed, not the model",
                               kernel.front(), kernel[kernel.size() - 2], kernel.size(), kernel[kernel.size() - 2] / kernel.front()));
    } else if (!explained) {
      ev.push_back(kernel.size() >= 4 ? fmt::format("this device's telemetry shows no cause at that moment, and the reference kernel "
                                                    "held its speed ({:.2f} to {:.2f} ms over {} readings)",
                                                    kernel.front(), kernel.back(), kernel.size())
                                      : std::string("this device's telemetry shows no cause at that moment (a noisy host?)"));
    }
    // Named on its own only when no finding above already names its cause: then it is a
    // symptom of that one, listed for the moment it struck.
    const bool cause_named = std::any_of(out.begin(), out.end(), [](const Finding& f) {
      return f.severity != Severity::kInfo && (f.id.starts_with("contention.") || f.id.starts_with("throttle.") ||
                                               f.id.starts_with("power.") || f.id.starts_with("thermal."));
    });
    if (explained && cause_named) ev.push_back("a symptom of the finding above that names this cause");
    // A moment of other processes' work, too short to count over the whole run, is the
    // machine's neighbours, not the model or the device: said, but not a warning.
    if (by_neighbours_only && !cause_named)
      ev.push_back("too brief to count over the whole run: the machine's neighbours, not the model");
    const bool warn = explained && !by_neighbours_only && !cause_named && !machine_slowed;
    out.push_back({"throttle.decode_step_down", warn ? Severity::kWarning : Severity::kInfo,
                   fmt::format("decode slowed by {} partway through the run (x{:.2f} per-token latency){}", pct(cp.mean_after / cp.mean_before - 1),
                               cp.mean_after / cp.mean_before, machine_slowed ? ", and so did the machine" : ""),
                   ev, "decode", std::nullopt, "",
                   explained ? "fix the cause named above" : "repeat the measurement; if it recurs, trace it (edgeprobe bench --trace)",
                   {{"index", cp.index}, {"mean_before_ms", cp.mean_before}, {"mean_after_ms", cp.mean_after},
                    {"machine_slowed", machine_slowed}}});
    break;
  }
}

// ---- 7. load ------------------------------------------------------------------------
void check_load(const Evidence& e, std::vector<Finding>& out) {
  const result::TestResult* r = rv::find_result(e.primary.report, fmt::format("pp{}", e.options.n_prompt));
  if (!r) r = rv::find_result(e.primary.report, fmt::format("tg{}", e.options.n_gen));
  if (!r) return;
  const result::TestSummary summary = result::summarize(*r);
  const double cold = r->load_ms.empty() ? 0.0 : summary.load_cold_ms;
  const double resident = r->page_cache_resident_share;
  const double warm = summary.load_warm_ms.n > 0 ? summary.load_warm_ms.median : 0.0;
  const double ceiling_ms = r->roofline ? r->roofline->load_ceiling_ms : 0.0;
  std::vector<std::string> ev;
  ev.push_back(fmt::format("first load {:.0f} ms with {} of the file in the page cache before it{}", cold,
                           resident >= 0 ? pct(resident) : "an unknown share", warm > 0 ? fmt::format("; warm loads {:.0f} ms", warm) : ""));
  if (ceiling_ms > 0)
    ev.push_back(fmt::format("storage ceiling for the file: {:.0f} ms ({})", ceiling_ms, r->roofline->load_ceiling_basis));
  if (!e.options.config.use_mmap) {
    const bool cold_cache = resident >= 0 && resident < 0.5;
    Finding f{"load.no_mmap", cold_cache ? Severity::kWarning : Severity::kInfo,
              cold_cache ? "the model is read without mmap from a cold page cache: the first load reads the whole file from storage"
                         : "the model is read without mmap: every process keeps its own copy of the weights",
              ev, "load", std::nullopt, "",
              "drop -mmp 0 / --mmap 0 (llama.cpp: drop --no-mmap) so processes share the page cache, and keep the file cached "
              "(read it once at start-up, e.g. vmtouch -t) where the first load matters",
              {{"cold_ms", cold}, {"warm_ms", warm}, {"resident_share_before", resident}}};
    double best_ms = warm;
    if (e.with_mmap && e.with_mmap->ok()) {
      const auto& results = e.with_mmap->report->results;
      const double mmap_ms = !results.empty() && !results[0].load_ms.empty() ? results[0].load_ms.front() : 0.0;
      if (mmap_ms > 0) {
        f.evidence.push_back(fmt::format("with mmap the same file loaded in {:.0f} ms (measured, page cache warm by then)", mmap_ms));
        f.data["mmap_ms"] = mmap_ms;
        if (best_ms <= 0 || mmap_ms < best_ms) best_ms = mmap_ms;
        const int64_t rss_mmap = result::summarize(results[0]).peak_rss_bytes;
        const int64_t rss_copy = summary.peak_rss_bytes;
        if (rss_mmap > 0 && rss_copy > 0)
          f.evidence.push_back(fmt::format("peak RSS {} without mmap, {} with it", mib(static_cast<double>(rss_copy)), mib(static_cast<double>(rss_mmap))));
      }
    }
    if (e.mmap_pairs) {
      f.evidence.push_back(fmt::format("warm loads with mmap against without, in interleaved pairs: {} ({})", e.mmap_pairs->text(),
                                       verdict_name(e.mmap_pairs->verdict)));
      f.data["measured"] = to_json(*e.mmap_pairs);
    }
    if (cold_cache && best_ms > 0 && cold > best_ms) {
      f.speedup = cold / best_ms;
      f.speedup_basis = "measured: the first load as configured against the fastest warm load measured";
    }
    out.push_back(std::move(f));
  } else if (resident >= 0 && resident < 0.5 && warm > 0 && cold > 1.5 * warm) {
    out.push_back({"load.cold_cache", Severity::kInfo,
                   fmt::format("the first load read the file from storage: {:.0f} ms against {:.0f} ms warm", cold, warm), ev, "load",
                   cold / warm, "measured: cold against warm load", "expected on a first run; keep the file cached (vmtouch) where start-up matters",
                   {{"cold_ms", cold}, {"warm_ms", warm}}});
  }
}

// ---- 8. ceiling ---------------------------------------------------------------------
void check_ceiling(const Evidence& e, std::vector<Finding>& out) {
  const auto& o = e.options;
  std::vector<std::string> ev;
  json data = json::object();
  for (const auto& [test, decode] : {std::pair{fmt::format("tg{}", o.n_gen), true}, std::pair{fmt::format("pp{}", o.n_prompt), false}}) {
    const result::TestResult* r = rv::find_result(e.primary.report, test);
    if (!r || !r->roofline) continue;
    const result::Roofline& roof = *r->roofline;
    const char* label = decode ? "decode" : "prefill";
    if (decode ? roof.decode_ceiling_suspect : roof.prefill_ceiling_suspect) {
      data[label] = result::to_json(roof);
      ev.push_back(fmt::format("{}: ceiling suspect: it ran at {:.2f}x its measured ceiling, so the ceiling was probed "
                               "while the machine was slower; measure it again: {}",
                               label, decode ? roof.decode_over_ceiling : roof.prefill_over_ceiling, roof.remeasure_command));
      continue;
    }
    const double eff = decode ? roof.decode_efficiency : roof.prefill_efficiency;
    if (!(std::isfinite(eff) && eff > 0)) continue;  // not measured (null in the document)
    data[label] = result::to_json(roof);
    if (decode) {
      std::string basis = fmt::format("{:.1f} GB/s ÷ {} per token", roof.bandwidth_gb_per_s, mib(roof.decode_bytes_per_token));
      if (!roof.decode_bound.empty()) basis += ", bound: " + roof.decode_bound;
      if (roof.decode_bound == "kernel" && roof.decode_bandwidth_efficiency > 0)
        basis += fmt::format("; {:.0f} % of memory bandwidth alone", roof.decode_bandwidth_efficiency * 100);
      ev.push_back(fmt::format("decode: {:.0f} % of the ceiling {:.1f} t/s ({})", eff * 100, roof.decode_ceiling_tokens_per_s, basis));
    } else {
      ev.push_back(fmt::format("prefill: {:.0f} % of the ceiling {:.1f} t/s ({:.1f} GFLOP/s achieved)", eff * 100,
                               roof.prefill_ceiling_tokens_per_s, roof.prefill_achieved_gflop_per_s));
    }
  }
  if (ev.empty()) {
    // A roofline without an efficiency had ceilings that are no figure: measured while other
    // processes held the CPUs (its notes say which); without a roofline none were measured.
    std::vector<std::string> why;
    for (const auto& test : {fmt::format("tg{}", o.n_gen), fmt::format("pp{}", o.n_prompt)})
      if (const result::TestResult* r = rv::find_result(e.primary.report, test); r && r->roofline)
        for (const auto& note : r->roofline->notes)
          if (std::find(why.begin(), why.end(), note) == why.end()) why.push_back(note);
    if (why.empty())
      ev.push_back("no device ceilings in the diagnosed run: 'edgeprobe probe -m MODEL' measures them (bench measures them "
                   "with --ceilings auto)");
    else
      for (const auto& note : why) ev.push_back("no ceiling to judge against: " + note);
  }
  out.push_back({"ceiling.efficiency", Severity::kInfo, "what is left against this device's measured ceilings once the findings above are fixed",
                 ev, "prefill+decode", std::nullopt, "", "", data});
}

}  // namespace edgeprobe::doctor::checks
