#include "telemetry/summary.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace edgeprobe::telemetry {
namespace {

struct LevelStats {
  double mean = 0, min = 0, max = 0;
};

// Values of a level series over [start, end]: interpolated at the edges when samples
// bracket them, plus every sample inside.
std::optional<LevelStats> level_stats(const Timeline& tl, size_t s, int64_t start, int64_t end,
                                      double scale = 1.0) {
  std::vector<double> points;
  const auto at_start = tl.counter_at(s, start);
  const auto at_end = tl.counter_at(s, end);
  if (at_start) points.push_back(*at_start);
  const auto [first, last] = tl.window(start, end);
  for (size_t i = first; i < last; ++i) {
    if (!std::isnan(tl.values[s][i])) points.push_back(tl.values[s][i]);
  }
  if (at_end) points.push_back(*at_end);
  if (points.empty()) return std::nullopt;
  LevelStats stats;
  stats.min = *std::min_element(points.begin(), points.end()) * scale;
  stats.max = *std::max_element(points.begin(), points.end()) * scale;
  const auto integral = end > start ? tl.integrate(s, start, end) : std::nullopt;
  if (integral) {
    stats.mean = *integral / (static_cast<double>(end - start) * 1e-9) * scale;
  } else {
    double sum = 0;
    for (double p : points) sum += p;
    stats.mean = sum / static_cast<double>(points.size()) * scale;
  }
  return stats;
}

std::optional<double> sum_deltas(const Timeline& tl, Metric metric, int64_t start, int64_t end) {
  std::optional<double> total;
  for (size_t s : tl.find(metric)) {
    const auto d = tl.counter_delta(s, start, end);
    if (!d) return std::nullopt;  // a partial sum would be a wrong number
    total = total.value_or(0) + *d;
  }
  return total;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Each GPU's clock, cap, busy share and temperature over the phase; the rail's power is
// filled in once the power sources are summed.
std::vector<GpuPhase> summarize_gpus(const Timeline& tl, int64_t start_ns, int64_t end_ns) {
  std::vector<GpuPhase> out;
  for (size_t g = 0; g < tl.gpus.size(); ++g) {
    const auto& info = tl.gpus[g];
    GpuPhase phase;
    phase.name = info.name;
    phase.kind = info.kind;
    phase.model = info.model;
    phase.governor = info.governor;
    phase.rail = info.rail;
    phase.rail_shared_with = info.rail_shared_with;
    if (info.max_hz && *info.max_hz > 0) phase.max_freq_hz = static_cast<double>(*info.max_hz);
    for (size_t s = 0; s < tl.series.size(); ++s) {
      if (tl.series[s].index != static_cast<int>(g)) continue;
      const Metric metric = tl.series[s].metric;
      if (metric != Metric::kGpuFreqHz && metric != Metric::kGpuCapHz && metric != Metric::kGpuBusyShare &&
          metric != Metric::kGpuTempC) {
        continue;
      }
      const auto stats = level_stats(tl, s, start_ns, end_ns);
      if (!stats) continue;
      if (metric == Metric::kGpuFreqHz) {
        phase.mean_freq_hz = stats->mean;
        phase.min_freq_hz = stats->min;
        if (phase.max_freq_hz) {
          phase.mean_freq_share = stats->mean / *phase.max_freq_hz;
          phase.min_freq_share = stats->min / *phase.max_freq_hz;
        }
      } else if (metric == Metric::kGpuCapHz) {
        if (phase.max_freq_hz) phase.min_cap_share = std::min(1.0, stats->min / *phase.max_freq_hz);
      } else if (metric == Metric::kGpuBusyShare) {
        phase.mean_busy_share = stats->mean;
      } else {
        phase.max_temp_c = stats->max;
      }
    }
    out.push_back(std::move(phase));
  }
  return out;
}

}  // namespace

PhaseTelemetry summarize_phase(const Timeline& tl, int64_t start_ns, int64_t end_ns, int64_t tokens,
                               const std::vector<int>& usable_cpus) {
  PhaseTelemetry out;
  out.start_ns = start_ns;
  out.end_ns = end_ns;
  out.tokens = tokens;
  const auto [first, last] = tl.window(start_ns, end_ns);
  out.samples = last - first;
  const double duration_s = static_cast<double>(end_ns - start_ns) * 1e-9;

  // Clusters: frequency as a share of the cluster's cpuinfo_max_freq.
  std::vector<double> thread_s(tl.clusters.size(), 0.0);
  bool thread_known = !tl.find(Metric::kSelfClusterCpuS).empty();
  for (size_t s : tl.find(Metric::kSelfClusterCpuS)) {
    const auto d = tl.counter_delta(s, start_ns, end_ns);
    if (!d || tl.series[s].index < 0 || static_cast<size_t>(tl.series[s].index) >= thread_s.size()) {
      thread_known = false;
      continue;
    }
    thread_s[static_cast<size_t>(tl.series[s].index)] += *d;
  }
  double thread_total = 0;
  for (double v : thread_s) thread_total += v;

  for (size_t c = 0; c < tl.clusters.size(); ++c) {
    const auto& info = tl.clusters[c];
    ClusterPhase phase;
    phase.name = info.name;
    phase.role = info.role;
    phase.cpus = info.cpus;
    if (info.max_khz) phase.max_khz = static_cast<double>(*info.max_khz);
    double mean_khz = 0, mean_share = 0;
    size_t n = 0, n_share = 0;
    for (size_t s : tl.find(Metric::kFreqKhz)) {
      if (tl.series[s].index != static_cast<int>(c)) continue;
      const auto khz = level_stats(tl, s, start_ns, end_ns);
      if (!khz) continue;
      mean_khz += khz->mean;
      ++n;
      phase.min_freq_khz = std::min(phase.min_freq_khz.value_or(khz->min), khz->min);
      // Each policy against its own maximum (x86 cores of one type differ by a bin).
      const double ref = tl.series[s].reference;
      if (std::isfinite(ref) && ref > 0) {
        mean_share += khz->mean / ref;
        ++n_share;
        phase.min_freq_share = std::min(phase.min_freq_share.value_or(khz->min / ref), khz->min / ref);
      }
    }
    for (size_t s : tl.find(Metric::kFreqCapKhz)) {
      const double ref = tl.series[s].reference;
      if (tl.series[s].index != static_cast<int>(c) || !std::isfinite(ref) || ref <= 0) continue;
      if (const auto cap = level_stats(tl, s, start_ns, end_ns)) phase.min_cap_share = cap->min / ref;
    }
    if (n > 0) phase.mean_freq_khz = mean_khz / static_cast<double>(n);
    if (n_share > 0) phase.mean_freq_share = mean_share / static_cast<double>(n_share);

    // time_in_state: the snapshots just before the start and just after the end.
    std::map<int64_t, double> residency_ms;
    std::map<std::string, std::pair<const TimeInStateSnapshot*, const TimeInStateSnapshot*>> around;
    for (const auto& snap : tl.time_in_state) {
      if (snap.cluster != c) continue;
      auto& [before, after] = around[snap.policy];
      if (snap.t_ns <= start_ns && (before == nullptr || snap.t_ns >= before->t_ns)) before = &snap;
      if (snap.t_ns >= end_ns && (after == nullptr || snap.t_ns < after->t_ns)) after = &snap;
    }
    bool residency_ok = !around.empty();
    for (const auto& [policy, pair] : around) {
      const auto* before = pair.first;
      const auto* after = pair.second;
      if (before == nullptr || after == nullptr) {
        residency_ok = false;
        break;
      }
      for (const auto& [khz, ticks] : after->khz_ticks) {
        const auto it = std::find_if(before->khz_ticks.begin(), before->khz_ticks.end(),
                                     [&](const auto& e) { return e.first == khz; });
        const int64_t base = it == before->khz_ticks.end() ? 0 : it->second;
        if (ticks > base) residency_ms[khz] += static_cast<double>(ticks - base) * 10.0;  // 10 ms units
      }
    }
    if (residency_ok && !residency_ms.empty() && phase.max_khz) {
      double weighted = 0, total = 0;
      for (const auto& [khz, ms] : residency_ms) {
        weighted += static_cast<double>(khz) * ms;
        total += ms;
        phase.time_in_state_ms.emplace_back(khz, ms);
      }
      // All policies of the cluster summed: the share is per policy-time, as above.
      phase.residency_mean_freq_share = weighted / total / *phase.max_khz;
    }
    if (thread_known && thread_total > 0) phase.thread_time_share = thread_s[c] / thread_total;
    out.clusters.push_back(std::move(phase));
  }

  out.gpus = summarize_gpus(tl, start_ns, end_ns);

  for (size_t s : tl.find(Metric::kTempC)) {
    if (const auto stats = level_stats(tl, s, start_ns, end_ns)) {
      out.thermal.push_back({tl.series[s].group, stats->max, stats->mean});
    }
  }

  // Power and energy, per source; the total from the first source that measures the
  // whole device: Jetson module input, then a discharging battery, then RAPL.
  std::optional<double> rails_total, battery_total, rapl_total;
  bool battery_discharging = true;
  std::vector<std::string> battery_names;
  for (size_t s = 0; s < tl.series.size(); ++s) {
    const auto& info = tl.series[s];
    std::optional<double> energy;
    if (info.metric == Metric::kPowerW) {
      if (end_ns > start_ns) energy = tl.integrate(s, start_ns, end_ns);
    } else if (info.metric == Metric::kEnergyJ) {
      energy = tl.counter_delta(s, start_ns, end_ns);
    } else {
      continue;
    }
    PowerSourcePhase ps;
    ps.name = info.group;
    ps.in_total = info.in_total;
    ps.energy_j = energy;
    if (energy && duration_s > 0) ps.mean_power_w = *energy / duration_s;
    out.power_sources.push_back(ps);
    if (!info.in_total || !energy) continue;
    if (starts_with(info.name, "ina3221.")) {
      rails_total = rails_total.value_or(0) + *energy;
    } else if (starts_with(info.name, "rapl:")) {
      rapl_total = rapl_total.value_or(0) + *energy;
    } else {
      battery_total = battery_total.value_or(0) + *energy;
      battery_names.push_back(info.group);
      const auto stats = level_stats(tl, s, start_ns, end_ns);
      if (!stats || stats->min <= 0) battery_discharging = false;
    }
  }
  for (auto& gpu : out.gpus) {
    for (const auto& ps : out.power_sources) {
      if (!gpu.rail.empty() && ps.name == gpu.rail) gpu.rail_mean_power_w = ps.mean_power_w;
    }
  }
  if (battery_total && !battery_discharging) {
    out.notes.push_back("battery not discharging throughout the phase (charger connected?): its energy is net of charging, not used as the total");
  }
  if (rails_total) {
    out.energy_j = rails_total;
    out.energy_source = "ina3221";
  } else if (battery_total && battery_discharging) {
    out.energy_j = battery_total;
    out.energy_source = "battery";
  } else if (rapl_total) {
    out.energy_j = rapl_total;
    out.energy_source = "rapl";
  }
  if (out.energy_j && duration_s > 0) out.mean_power_w = *out.energy_j / duration_s;
  if (out.energy_j && tokens > 0) out.joules_per_token = *out.energy_j / static_cast<double>(tokens);

  for (size_t s : tl.find(Metric::kDischargeCurrentUa)) {
    if (end_ns <= start_ns) break;
    if (const auto uas = tl.integrate(s, start_ns, end_ns)) {
      out.discharge_mah = out.discharge_mah.value_or(0) + *uas / 3.6e6;  // µA·s -> mAh
    }
  }
  for (size_t s : tl.find(Metric::kChargeCounterUah)) {
    const auto a = tl.counter_at(s, start_ns);
    const auto b = tl.counter_at(s, end_ns);
    if (a && b) out.charge_counter_drop_mah = out.charge_counter_drop_mah.value_or(0) + (*a - *b) / 1000.0;
  }

  if (const auto t = sum_deltas(tl, Metric::kThrottledS, start_ns, end_ns)) out.throttled_ms = *t * 1000.0;
  // Counts interpolated at the phase edges are estimates: whole numbers say so.
  const auto rounded = [](std::optional<double> v) { return v ? std::optional<double>(std::round(*v)) : v; };
  out.throttled_periods = rounded(sum_deltas(tl, Metric::kThrottledPeriods, start_ns, end_ns));
  out.periods = rounded(sum_deltas(tl, Metric::kPeriods, start_ns, end_ns));

  const auto busy = sum_deltas(tl, Metric::kCpuBusyS, start_ns, end_ns);
  const auto total = sum_deltas(tl, Metric::kCpuTotalS, start_ns, end_ns);
  const auto self = sum_deltas(tl, Metric::kSelfCpuS, start_ns, end_ns);
  if (total && *total > 0) {
    if (self) out.process_cpu_share = std::clamp(*self / *total, 0.0, 1.0);
    // Tick counts of /proc/stat and of the process are rounded separately: clamp at 0.
    if (busy && self) out.other_cpu_share = std::clamp((*busy - *self) / *total, 0.0, 1.0);
  }
  // The process runs only on its usable CPUs, so all of its time is on them: the others'
  // time there is those CPUs' busy time less its own.
  if (self && !usable_cpus.empty()) {
    double usable_busy = 0, usable_total = 0;
    size_t cpus = 0, found = 0;
    bool complete = true;
    for (size_t s : tl.find(Metric::kCpuTotalS)) {
      ++cpus;
      if (std::find(usable_cpus.begin(), usable_cpus.end(), tl.series[s].index) == usable_cpus.end()) continue;
      ++found;
      const auto d = tl.counter_delta(s, start_ns, end_ns);
      complete = complete && d.has_value();
      usable_total += d.value_or(0);
    }
    for (size_t s : tl.find(Metric::kCpuBusyS))
      if (std::find(usable_cpus.begin(), usable_cpus.end(), tl.series[s].index) != usable_cpus.end()) {
        const auto d = tl.counter_delta(s, start_ns, end_ns);
        complete = complete && d.has_value();
        usable_busy += d.value_or(0);
      }
    if (complete && found > 0 && found < cpus && usable_total > 0)
      out.other_usable_cpu_share = std::clamp((usable_busy - *self) / usable_total, 0.0, 1.0);
  }

  // Memory is read in whole KiB; an edge value interpolated between two readings is not.
  for (size_t s : tl.find(Metric::kRssKb)) {
    if (const auto st = level_stats(tl, s, start_ns, end_ns)) out.max_rss_kb = std::round(st->max);
  }
  for (size_t s : tl.find(Metric::kPeakRssKb)) {
    if (const auto st = level_stats(tl, s, start_ns, end_ns)) out.peak_rss_kb = std::round(st->max);
  }
  out.voluntary_ctx_switches = rounded(sum_deltas(tl, Metric::kVoluntaryCtxSwitches, start_ns, end_ns));
  out.involuntary_ctx_switches = rounded(sum_deltas(tl, Metric::kInvoluntaryCtxSwitches, start_ns, end_ns));
  if (tl.find(Metric::kVoluntaryCtxSwitches).empty()) {
    out.voluntary_ctx_switches.reset();
    out.involuntary_ctx_switches.reset();
  }
  return out;
}

nlohmann::json to_json(const PhaseTelemetry& p) {
  using nlohmann::json;
  auto put = [](json& j, const char* key, const std::optional<double>& v) {
    if (v && std::isfinite(*v)) j[key] = *v;
  };
  json j;
  j["duration_ms"] = static_cast<double>(p.end_ns - p.start_ns) * 1e-6;
  j["samples"] = p.samples;
  json clusters = json::array();
  for (const auto& c : p.clusters) {
    json jc;
    jc["name"] = c.name;
    if (!c.role.empty()) jc["role"] = c.role;
    jc["cpus"] = c.cpus;
    put(jc, "max_freq_khz", c.max_khz);
    put(jc, "mean_freq_khz", c.mean_freq_khz);
    put(jc, "min_freq_khz", c.min_freq_khz);
    put(jc, "mean_freq_share", c.mean_freq_share);
    put(jc, "min_freq_share", c.min_freq_share);
    put(jc, "min_cap_share", c.min_cap_share);
    put(jc, "residency_mean_freq_share", c.residency_mean_freq_share);
    if (!c.time_in_state_ms.empty()) {
      json tis = json::object();
      for (const auto& [khz, ms] : c.time_in_state_ms) tis[std::to_string(khz)] = ms;
      jc["time_in_state_ms_by_khz"] = tis;
    }
    put(jc, "thread_time_share", c.thread_time_share);
    clusters.push_back(jc);
  }
  j["clusters"] = clusters;
  if (!p.gpus.empty()) {
    json gpus = json::array();
    for (const auto& g : p.gpus) {
      json jg = {{"name", g.name}, {"kind", g.kind}};
      if (!g.model.empty()) jg["model"] = g.model;
      if (!g.governor.empty()) jg["governor"] = g.governor;
      put(jg, "max_freq_hz", g.max_freq_hz);
      put(jg, "mean_freq_hz", g.mean_freq_hz);
      put(jg, "min_freq_hz", g.min_freq_hz);
      put(jg, "mean_freq_share", g.mean_freq_share);
      put(jg, "min_freq_share", g.min_freq_share);
      put(jg, "min_cap_share", g.min_cap_share);
      put(jg, "mean_busy_share", g.mean_busy_share);
      put(jg, "max_temp_c", g.max_temp_c);
      if (!g.rail.empty()) jg["rail"] = g.rail;
      if (!g.rail_shared_with.empty()) jg["rail_shared_with"] = g.rail_shared_with;
      put(jg, "rail_mean_power_w", g.rail_mean_power_w);
      gpus.push_back(jg);
    }
    j["gpus"] = gpus;
  }
  json thermal = json::object();
  for (const auto& z : p.thermal) thermal[z.zone] = {{"max_temp_c", z.max_temp_c}, {"mean_temp_c", z.mean_temp_c}};
  j["thermal"] = thermal;
  put(j, "energy_j", p.energy_j);
  if (!p.energy_source.empty()) j["energy_source"] = p.energy_source;
  put(j, "joules_per_token", p.joules_per_token);
  put(j, "mean_power_w", p.mean_power_w);
  put(j, "discharge_mah", p.discharge_mah);
  put(j, "charge_counter_drop_mah", p.charge_counter_drop_mah);
  json sources = json::object();
  for (const auto& s : p.power_sources) {
    json js;
    put(js, "energy_j", s.energy_j);
    put(js, "mean_power_w", s.mean_power_w);
    js["in_total"] = s.in_total;
    sources[s.name] = js;
  }
  if (!sources.empty()) j["power_sources"] = sources;
  put(j, "throttled_ms", p.throttled_ms);
  put(j, "throttled_periods", p.throttled_periods);
  put(j, "cfs_periods", p.periods);
  put(j, "other_cpu_share", p.other_cpu_share);
  put(j, "other_usable_cpu_share", p.other_usable_cpu_share);
  put(j, "process_cpu_share", p.process_cpu_share);
  put(j, "max_rss_kb", p.max_rss_kb);
  put(j, "peak_rss_kb", p.peak_rss_kb);
  put(j, "voluntary_ctx_switches", p.voluntary_ctx_switches);
  put(j, "involuntary_ctx_switches", p.involuntary_ctx_switches);
  if (!p.notes.empty()) j["notes"] = p.notes;
  return j;
}

}  // namespace edgeprobe::telemetry
