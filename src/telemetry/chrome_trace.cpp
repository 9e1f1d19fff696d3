#include "telemetry/chrome_trace.h"

#include <cmath>
#include <map>

#include <nlohmann/json.hpp>

namespace edgeprobe::telemetry {
namespace {

using nlohmann::json;

constexpr int kPid = 1;
constexpr int kPhaseTid = 1;
constexpr int kTokenTid = 2;
constexpr int kOtherTid = 3;

double to_us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

json metadata(const char* what, int tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", kPid}, {"tid", tid}, {"args", {{"name", name}}}};
}

// Track name for a series: the series name for levels ("cpufreq.policy4.freq_khz"); for
// accumulating counters the rate that is drawn, unit last ("cpu3.utilisation_share").
std::string track_of(const SeriesInfo& s) {
  switch (s.metric) {
    case Metric::kCpuBusyS: return s.group + ".utilisation_share";
    case Metric::kSelfCpuS: return "process.cpu_cores";
    case Metric::kSelfClusterCpuS: return "process.cluster." + s.group + ".cpu_cores";
    case Metric::kEnergyJ: return s.group + ".power_w";
    case Metric::kThrottledS: return "cgroup.throttled_share";
    case Metric::kThrottledPeriods: return "cgroup.throttled_periods_per_s";
    case Metric::kVoluntaryCtxSwitches: return "process.voluntary_ctx_switches_per_s";
    case Metric::kInvoluntaryCtxSwitches: return "process.involuntary_ctx_switches_per_s";
    default: return s.name;
  }
}

// One series per track (Chrome stacks the args of one counter name), so mixed units
// never share an axis.
void counter(std::ostream& out, bool* first, const std::string& name, double ts_us, double v) {
  if (!std::isfinite(v)) return;
  const json e = {{"ph", "C"}, {"name", name}, {"pid", kPid}, {"ts", ts_us}, {"args", {{"value", v}}}};
  out << (*first ? "\n" : ",\n") << e.dump();
  *first = false;
}

}  // namespace

void write_chrome_trace(std::ostream& out, const Timeline& tl, const std::vector<PhaseEvent>& events) {
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"clock\":\"run clock (steady_clock since run start)\","
         "\"sample_hz\":"
      << json(tl.sample_hz).dump() << "},\"traceEvents\":[";
  bool first = true;
  auto emit = [&](const json& e) {
    out << (first ? "\n" : ",\n") << e.dump();
    first = false;
  };
  emit(metadata("process_name", kPhaseTid, "edgeprobe"));
  emit(metadata("thread_name", kPhaseTid, "phases"));
  emit(metadata("thread_name", kTokenTid, "tokens"));
  emit(metadata("thread_name", kOtherTid, "other spans"));
  emit({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", kPid}, {"tid", kPhaseTid}, {"args", {{"sort_index", 0}}}});
  emit({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", kPid}, {"tid", kTokenTid}, {"args", {{"sort_index", 1}}}});

  for (const auto& e : events) {
    const int tid = e.category == "phase" ? kPhaseTid : e.category == "token" ? kTokenTid : kOtherTid;
    json args = {{"tokens", e.tokens}};
    if (e.repetition >= 0) args["repetition"] = e.repetition;
    if (!e.test.empty()) args["test"] = e.test;
    emit({{"ph", "X"},
          {"name", e.name},
          {"cat", e.category.empty() ? "span" : e.category},
          {"pid", kPid},
          {"tid", tid},
          {"ts", to_us(e.start_ns)},
          {"dur", to_us(std::max<int64_t>(0, e.end_ns - e.start_ns))},
          {"args", args}});
  }

  // /proc/stat busy time needs the matching total of the same CPU.
  std::map<int, size_t> total_of_cpu;
  for (size_t s = 0; s < tl.series.size(); ++s) {
    if (tl.series[s].metric == Metric::kCpuTotalS) total_of_cpu[tl.series[s].index] = s;
  }
  for (size_t s = 0; s < tl.series.size(); ++s) {
    const auto& info = tl.series[s];
    if (info.metric == Metric::kCpuTotalS || info.metric == Metric::kPeriods) continue;
    const std::string name = track_of(info);
    const auto& v = tl.values[s];
    if (!metric_is_counter(info.metric)) {
      for (size_t i = 0; i < tl.size(); ++i) counter(out, &first, name, to_us(tl.t_ns[i]), v[i]);
      continue;
    }
    // Rate between consecutive valid samples, drawn from the first (counter tracks are
    // steps); sources read at a lower rate leave NaN between their samples.
    size_t prev = tl.size();
    for (size_t i = 0; i < tl.size(); ++i) {
      if (std::isnan(v[i])) continue;
      if (prev < tl.size()) {
        const double dt = static_cast<double>(tl.t_ns[i] - tl.t_ns[prev]) * 1e-9;
        double rate = dt > 0 ? (v[i] - v[prev]) / dt : std::nan("");
        if (info.metric == Metric::kCpuBusyS) {
          const auto it = total_of_cpu.find(info.index);
          const double total = it == total_of_cpu.end() ? 0 : tl.values[it->second][i] - tl.values[it->second][prev];
          rate = total > 0 ? (v[i] - v[prev]) / total : std::nan("");
        }
        if (dt > 0) counter(out, &first, name, to_us(tl.t_ns[prev]), rate);
      }
      prev = i;
    }
  }
  // Where each thread last ran: one track per thread.
  for (const auto& t : tl.threads) {
    counter(out, &first, "thread." + std::to_string(t.tid) + ".last_cpu", to_us(t.t_ns), t.cpu);
  }
  out << "\n]}\n";
}

}  // namespace edgeprobe::telemetry
