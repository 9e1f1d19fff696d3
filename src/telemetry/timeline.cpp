#include "telemetry/timeline.h"

#include <algorithm>
#include <cmath>

namespace edgeprobe::telemetry {

const char* metric_unit(Metric metric) {
  switch (metric) {
    case Metric::kFreqKhz: return "kHz";
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
  if (t_ns.empty() || t < t_ns.front() || t > t_ns.back()) return std::nullopt;
  const auto& v = values[s];
  const size_t hi = static_cast<size_t>(std::lower_bound(t_ns.begin(), t_ns.end(), t) - t_ns.begin());
  if (t_ns[hi] == t) return std::isnan(v[hi]) ? std::nullopt : std::optional<double>(v[hi]);
  const size_t lo = hi - 1;
  if (std::isnan(v[lo]) || std::isnan(v[hi])) return std::nullopt;
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
  if (t_ns.empty() || start < t_ns.front() || end > t_ns.back() || end < start) return std::nullopt;
  // Points: the interpolated value at start, the samples inside, the value at end.
  const auto at = [&](int64_t t) { return counter_at(s, t); };  // linear interpolation of a level too
  auto prev_v = at(start);
  if (!prev_v) return std::nullopt;
  int64_t prev_t = start;
  double sum = 0;
  const auto [first, last] = window(start, end);
  for (size_t i = first; i <= last; ++i) {
    const int64_t t = i < last ? t_ns[i] : end;
    const auto v = i < last ? (std::isnan(values[s][i]) ? std::nullopt : std::optional<double>(values[s][i])) : at(end);
    if (!v) return std::nullopt;
    sum += 0.5 * (*prev_v + *v) * static_cast<double>(t - prev_t) * 1e-9;
    prev_t = t;
    prev_v = v;
  }
  return sum;
}

}  // namespace edgeprobe::telemetry
