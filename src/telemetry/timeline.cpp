#include "telemetry/timeline.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <map>

namespace edgeprobe::telemetry {

const char* metric_unit(Metric metric) {
  switch (metric) {
    case Metric::kFreqKhz:
    case Metric::kFreqCapKhz: return "kHz";
    case Metric::kTempC: return "°C";
    case Metric::kPowerW: return "W";
    case Metric::kDischargeCurrentUa: return "µA";
    case Metric::kVoltageUv: return "µV";
    case Metric::kChargeCounterUah: return "µAh";
    case Metric::kEnergyJ: return "J";
    case Metric::kCpuBusyS:
    case Metric::kCpuTotalS:
    case Metric::kSelfCpuS:
    case Metric::kSelfClusterCpuS:
    case Metric::kThrottledS: return "s";
    case Metric::kThreads: return "threads";
    case Metric::kRssKb:
    case Metric::kPeakRssKb: return "KiB";
    case Metric::kVoluntaryCtxSwitches:
    case Metric::kInvoluntaryCtxSwitches: return "switches";
    case Metric::kThrottledPeriods:
    case Metric::kPeriods: return "periods";
    case Metric::kGpuFreqHz:
    case Metric::kGpuCapHz:
      return "Hz";
    case Metric::kGpuBusyShare:
      return "share";
    case Metric::kGpuTempC:
      return "°C";
  }
  return "";
}

bool metric_is_counter(Metric metric) {
  switch (metric) {
    case Metric::kEnergyJ:
    case Metric::kCpuBusyS:
    case Metric::kCpuTotalS:
    case Metric::kSelfCpuS:
    case Metric::kSelfClusterCpuS:
    case Metric::kVoluntaryCtxSwitches:
    case Metric::kInvoluntaryCtxSwitches:
    case Metric::kThrottledS:
    case Metric::kThrottledPeriods:
    case Metric::kPeriods: return true;
    default: return false;
  }
}

std::vector<size_t> Timeline::find(Metric metric) const {
  std::vector<size_t> out;
  for (size_t i = 0; i < series.size(); ++i) {
    if (series[i].metric == metric) out.push_back(i);
  }
  return out;
}

std::optional<size_t> Timeline::find(const std::string& name) const {
  for (size_t i = 0; i < series.size(); ++i) {
    if (series[i].name == name) return i;
  }
  return std::nullopt;
}

std::pair<size_t, size_t> Timeline::window(int64_t start_ns, int64_t end_ns) const {
  const auto first = std::lower_bound(t_ns.begin(), t_ns.end(), start_ns);
  const auto last = std::upper_bound(t_ns.begin(), t_ns.end(), end_ns);
  return {static_cast<size_t>(first - t_ns.begin()), static_cast<size_t>(last - t_ns.begin())};
}

std::optional<double> Timeline::counter_at(size_t s, int64_t t) const {
  // Nearest valid samples on each side: a source read at a lower rate, or a failed
  // read, leaves NaN in between.
  const auto& v = values[s];
  const size_t n = t_ns.size();
  size_t hi = static_cast<size_t>(std::lower_bound(t_ns.begin(), t_ns.end(), t) - t_ns.begin());
  while (hi < n && std::isnan(v[hi])) ++hi;
  if (hi == n) return std::nullopt;
  if (t_ns[hi] == t) return v[hi];
  size_t lo = static_cast<size_t>(std::upper_bound(t_ns.begin(), t_ns.end(), t) - t_ns.begin());
  while (lo > 0 && std::isnan(v[lo - 1])) --lo;
  if (lo == 0) return std::nullopt;
  --lo;  // the last valid sample with t_ns[lo] <= t
  if (t_ns[lo] == t_ns[hi]) return v[hi];
  const double f = static_cast<double>(t - t_ns[lo]) / static_cast<double>(t_ns[hi] - t_ns[lo]);
  return v[lo] + f * (v[hi] - v[lo]);
}

std::optional<double> Timeline::counter_delta(size_t s, int64_t start, int64_t end) const {
  const auto a = counter_at(s, start);
  const auto b = counter_at(s, end);
  if (!a || !b) return std::nullopt;
  return *b - *a;
}

std::optional<double> Timeline::integrate(size_t s, int64_t start, int64_t end) const {
  if (end < start) return std::nullopt;
  // Trapezoids through the value at start, the valid samples inside, the value at end.
  auto prev_v = counter_at(s, start);
  const auto end_v = counter_at(s, end);
  if (!prev_v || !end_v) return std::nullopt;
  int64_t prev_t = start;
  double sum = 0;
  const auto [first, last] = window(start, end);
  for (size_t i = first; i < last; ++i) {
    const double v = values[s][i];
    if (std::isnan(v)) continue;
    sum += 0.5 * (*prev_v + v) * static_cast<double>(t_ns[i] - prev_t) * 1e-9;
    prev_t = t_ns[i];
    prev_v = v;
  }
  sum += 0.5 * (*prev_v + *end_v) * static_cast<double>(end - prev_t) * 1e-9;
  return sum;
}

Timeline Timeline::slice(int64_t start_ns, int64_t end_ns) const {
  Timeline out;
  out.series = series;
  out.clusters = clusters;
  out.gpus = gpus;
  out.sample_hz = sample_hz;
  out.values.resize(series.size());
  auto [first, last] = window(start_ns, end_ns);
  // Widen to the nearest valid sample of every series before and after.
  size_t lo = first, hi = last;
  for (const auto& column : values) {
    size_t i = first;  // the last valid sample before the window
    while (i > 0) {
      --i;
      if (!std::isnan(column[i])) break;
    }
    lo = std::min(lo, i);
    size_t j = last;
    while (j < t_ns.size() && std::isnan(column[j])) ++j;
    hi = std::max(hi, std::min(j + 1, t_ns.size()));
  }
  out.t_ns.assign(t_ns.begin() + static_cast<std::ptrdiff_t>(lo), t_ns.begin() + static_cast<std::ptrdiff_t>(hi));
  for (size_t s = 0; s < values.size(); ++s) {
    out.values[s].assign(values[s].begin() + static_cast<std::ptrdiff_t>(lo),
                         values[s].begin() + static_cast<std::ptrdiff_t>(hi));
  }
  const int64_t from = out.t_ns.empty() ? start_ns : out.t_ns.front();
  const int64_t to = out.t_ns.empty() ? end_ns : out.t_ns.back();
  // time_in_state is sampled more slowly: keep the last snapshot at or before the start
  // and the first at or after the end of each policy, and everything between.
  std::map<std::string, std::pair<int64_t, int64_t>> keep;  // policy -> (latest <= start, earliest >= end)
  for (const auto& snap : time_in_state) {
    auto [it, added] = keep.try_emplace(snap.policy, INT64_MIN, INT64_MAX);
    if (snap.t_ns <= start_ns) it->second.first = std::max(it->second.first, snap.t_ns);
    if (snap.t_ns >= end_ns) it->second.second = std::min(it->second.second, snap.t_ns);
  }
  for (const auto& snap : time_in_state) {
    const auto& [before, after] = keep[snap.policy];
    if (snap.t_ns >= std::min(before, start_ns) && snap.t_ns <= std::max(after == INT64_MAX ? end_ns : after, end_ns)) {
      out.time_in_state.push_back(snap);
    }
  }
  for (const auto& t : threads) {
    if (t.t_ns >= from && t.t_ns <= to) out.threads.push_back(t);
  }
  return out;
}

}  // namespace edgeprobe::telemetry
