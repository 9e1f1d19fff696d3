// Clock and heat: each cpufreq policy's current frequency (and its time_in_state table),
// each cluster's frequency cap, and the thermal zones and battery temperature.
#include <map>
#include <string>
#include <vector>

#include "telemetry/sources_internal.h"

namespace edgeprobe::telemetry {
namespace {

using namespace sources;

// ---- cpufreq ------------------------------------------------------------------------

class CpufreqSource : public Source {
 public:
  CpufreqSource(const FsRoot& fs, const CpuLayout& cpus) {
    for (size_t c = 0; c < cpus.clusters.size(); ++c) {
      for (size_t p : cpus.clusters[c].policies) {
        const auto& policy = cpus.policies[p];
        if (!policy.cur_readable) continue;
        Entry entry;
        entry.policy = policy.name;
        entry.what = "cpufreq " + policy.name;
        entry.cluster = c;
        entry.cluster_name = cpus.clusters[c].name;
        entry.max_khz = policy.cpuinfo_max_khz ? static_cast<double>(*policy.cpuinfo_max_khz) : kNaN;
        entry.cur = CachedFile(fs.path(policy.dir + "/scaling_cur_freq"));
        if (policy.has_time_in_state) entry.tis = CachedFile(fs.path(policy.dir + "/stats/time_in_state"));
        entries_.push_back(std::move(entry));
      }
    }
  }
  const char* family() const override { return "cpufreq"; }
  void declare(std::vector<SeriesInfo>* series) override {
    for (const auto& e : entries_)
      series->push_back({.name = "cpufreq." + e.policy + ".freq_khz", .metric = Metric::kFreqKhz, .group = e.cluster_name,
                         .index = static_cast<int>(e.cluster), .reference = static_cast<double>(e.max_khz)});
  }
  void sample(double* row, const ReportFn& report) override {
    for (size_t i = 0; i < entries_.size(); ++i) row[i] = read_or_nan(entries_[i].cur, i, entries_[i].what, once_, report);
  }
  void sample_slow(int64_t t_ns, Timeline* timeline, const ReportFn& report) override {
    for (size_t i = 0; i < entries_.size(); ++i) {
      auto& e = entries_[i];
      if (e.tis.path().empty()) continue;
      std::string_view text = e.tis.read();
      if (e.tis.failed()) {
        tis_once_.report_once(i, e.what + " time_in_state", e.tis, report);
        continue;
      }
      TimeInStateSnapshot snap;
      snap.t_ns = t_ns;
      snap.cluster = e.cluster;
      snap.policy = e.policy;
      for (;;) {
        const std::string_view khz = next_token(&text);
        const std::string_view ticks = next_token(&text);
        long long f = 0, t = 0;
        if (khz.empty() || ticks.empty() || !parse_ll(khz, &f) || !parse_ll(ticks, &t)) break;
        snap.khz_ticks.emplace_back(f, t);
      }
      timeline->time_in_state.push_back(std::move(snap));
    }
  }

 private:
  struct Entry {
    std::string policy, cluster_name, what;
    size_t cluster = 0;
    double max_khz = kNaN;
    CachedFile cur, tis;
  };
  std::vector<Entry> entries_;
  OnceFlags once_, tis_once_;
};

// The cap a thermal governor or power HAL sets (scaling_max_freq below cpuinfo_max_freq).
// A source of its own because it changes on the governor's polling interval (hundreds of
// milliseconds), not with every frequency step: read at most 5 Hz.
class CpufreqCapSource : public Source {
 public:
  CpufreqCapSource(const FsRoot& fs, const CpuLayout& cpus) {
    for (size_t c = 0; c < cpus.clusters.size(); ++c) {
      // One read per cluster: its policies are capped alike.
      for (size_t p : cpus.clusters[c].policies) {
        const auto& policy = cpus.policies[p];
        if (!policy.scaling_max_khz) continue;
        Cap cap;
        cap.cluster = c;
        cap.cluster_name = cpus.clusters[c].name;
        cap.what = "cpufreq " + policy.name + " scaling_max_freq";
        cap.max_khz = policy.cpuinfo_max_khz ? static_cast<double>(*policy.cpuinfo_max_khz) : kNaN;
        cap.file = CachedFile(fs.path(policy.dir + "/scaling_max_freq"));
        caps_.push_back(std::move(cap));
        break;
      }
    }
  }
  const char* family() const override { return "cpufreq cap"; }
  double max_hz() const override { return 5; }
  void declare(std::vector<SeriesInfo>* series) override {
    for (const auto& c : caps_)
      series->push_back({.name = "cpufreq." + c.cluster_name + ".cap_khz", .metric = Metric::kFreqCapKhz, .group = c.cluster_name,
                         .index = static_cast<int>(c.cluster), .reference = static_cast<double>(c.max_khz)});
  }
  void sample(double* row, const ReportFn& report) override {
    for (size_t i = 0; i < caps_.size(); ++i) row[i] = read_or_nan(caps_[i].file, i, caps_[i].what, once_, report);
  }

 private:
  struct Cap {
    std::string cluster_name, what;
    size_t cluster = 0;
    double max_khz = kNaN;
    CachedFile file;
  };
  std::vector<Cap> caps_;
  OnceFlags once_;
};

// ---- thermal ------------------------------------------------------------------------

class ThermalSource : public Source {
 public:
  ThermalSource(const FsRoot& fs, const std::vector<ThermalZone>& zones, const std::vector<Battery>& batteries) {
    std::map<std::string, int> type_count;
    for (const auto& z : zones) ++type_count[z.type];
    for (const auto& z : zones) {
      // Phones repeat types ("battery", "cpu-0-0" twice): keep labels unique.
      std::string label = z.type.empty() ? z.name : z.type;
      if (type_count[z.type] > 1 || z.type.empty()) label += "#" + z.name.substr(12);
      entries_.push_back({label, "thermal." + label + ".temp_c", "thermal " + label, z.divisor, CachedFile(fs.path(z.temp_path))});
    }
    for (const auto& b : batteries) {
      // 0.1 C (ABI). Named apart from thermal zones: phones also have a zone of type "battery".
      if (b.has_temp) {
        entries_.push_back({"power_supply." + b.name, b.name + ".temp_c", "battery temp", 10.0, CachedFile(fs.path(b.dir + "/temp"))});
      }
    }
  }
  const char* family() const override { return "thermal"; }
  // Sensors update on their zone's polling interval (often 100 ms to 1 s) and a die heats
  // over seconds; on phones a read can go through a slow ADC. 5 Hz is plenty.
  double max_hz() const override { return 5; }
  void declare(std::vector<SeriesInfo>* series) override {
    for (const auto& e : entries_) {
      SeriesInfo info;
      info.name = e.series;
      info.metric = Metric::kTempC;
      info.group = e.label;
      series->push_back(std::move(info));
    }
  }
  void sample(double* row, const ReportFn& report) override {
    for (size_t i = 0; i < entries_.size(); ++i) {
      long long raw = 0;
      if (entries_[i].file.read_int(&raw)) {
        row[i] = normalise_temp_c(raw, entries_[i].divisor);
      } else {
        row[i] = kNaN;
        once_.report_once(i, entries_[i].what, entries_[i].file, report);
      }
    }
  }

 private:
  struct Entry {
    std::string label, series, what;
    double divisor;
    CachedFile file;
  };
  std::vector<Entry> entries_;
  OnceFlags once_;
};

}  // namespace

std::unique_ptr<Source> make_cpufreq_source(const FsRoot& fs, const CpuLayout& cpus) {
  return std::make_unique<CpufreqSource>(fs, cpus);
}
std::unique_ptr<Source> make_cpufreq_cap_source(const FsRoot& fs, const CpuLayout& cpus) {
  return std::make_unique<CpufreqCapSource>(fs, cpus);
}
std::unique_ptr<Source> make_thermal_source(const FsRoot& fs, const std::vector<ThermalZone>& zones,
                                            const std::vector<Battery>& batteries) {
  return std::make_unique<ThermalSource>(fs, zones, batteries);
}

}  // namespace edgeprobe::telemetry
