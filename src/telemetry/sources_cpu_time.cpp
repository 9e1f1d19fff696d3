// CPU time of the whole machine: each CPU's busy and total time from /proc/stat, and the
// cgroup's throttling from cpu.stat.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "telemetry/sources_internal.h"

namespace edgeprobe::telemetry {
namespace {

using namespace sources;

// ---- /proc/stat ---------------------------------------------------------------------

class ProcStatSource : public Source {
 public:
  ProcStatSource(const FsRoot& fs, const std::vector<int>& cpus) : cpus_(cpus), file_(fs.path("/proc/stat")) {
    slot_.assign(cpus_.empty() ? 0 : static_cast<size_t>(cpus_.back()) + 1, -1);
    for (size_t i = 0; i < cpus_.size(); ++i) slot_[static_cast<size_t>(cpus_[i])] = static_cast<int>(i);
  }
  const char* family() const override { return "procstat"; }
  // /proc/stat counts 10 ms ticks: at 10 Hz an interval holds >= 10 ticks per CPU;
  // faster reads add cost, not information.
  double max_hz() const override { return 10; }
  void declare(std::vector<SeriesInfo>* series) override {
    for (int cpu : cpus_) {
      for (const auto& [suffix, metric] : {std::pair{".busy_s", Metric::kCpuBusyS}, std::pair{".total_s", Metric::kCpuTotalS}}) {
        SeriesInfo info;
        info.name = "cpu" + std::to_string(cpu) + suffix;
        info.metric = metric;
        info.group = "cpu" + std::to_string(cpu);
        info.index = cpu;
        series->push_back(std::move(info));
      }
    }
  }
  void sample(double* row, const ReportFn& report) override {
    const size_t n = cpus_.size() * 2;
    std::fill(row, row + n, kNaN);
    std::string_view text = file_.read();
    if (file_.failed()) {
      once_.report_once(0, "procstat", file_, report);
      return;
    }
    // "cpuN user nice system idle iowait irq softirq steal guest guest_nice" (proc(5));
    // guest time is already inside user, idle and iowait are not busy.
    while (!text.empty()) {
      const size_t eol = text.find('\n');
      std::string_view line = text.substr(0, eol);
      text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
      if (line.size() < 4 || line.substr(0, 3) != "cpu") {
        if (!line.empty() && line[0] != 'c') break;  // per-CPU lines come first
        continue;
      }
      std::string_view rest = line.substr(3);
      const std::string_view id = next_token(&rest);
      long long cpu = 0;
      if (id.empty() || !parse_ll(id, &cpu) || cpu < 0 || static_cast<size_t>(cpu) >= slot_.size()) continue;
      const int slot = slot_[static_cast<size_t>(cpu)];
      if (slot < 0) continue;
      long long f[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (long long& value : f) {
        const std::string_view token = next_token(&rest);
        if (token.empty() || !parse_ll(token, &value)) break;
      }
      const long long total = f[0] + f[1] + f[2] + f[3] + f[4] + f[5] + f[6] + f[7];
      const long long idle = f[3] + f[4];
      row[2 * slot] = static_cast<double>(total - idle) / ticks_per_s();
      row[2 * slot + 1] = static_cast<double>(total) / ticks_per_s();
    }
  }

 private:
  std::vector<int> cpus_;
  std::vector<int> slot_;
  CachedFile file_;
  OnceFlags once_;
};

// ---- cgroup cpu.stat ----------------------------------------------------------------

class CgroupSource : public Source {
 public:
  CgroupSource(const FsRoot& fs, const CgroupInfo& cgroup)
      : version_(cgroup.version), file_(fs.path(cgroup.cpu_dir + "/cpu.stat")) {}
  const char* family() const override { return "cgroup"; }
  // Throttling is accounted per CFS period (100 ms by default): 10 Hz resolves it.
  double max_hz() const override { return 10; }
  void declare(std::vector<SeriesInfo>* series) override {
    for (const auto& [name, metric] : {std::pair{"cgroup.throttled_s", Metric::kThrottledS},
                                       std::pair{"cgroup.nr_throttled", Metric::kThrottledPeriods},
                                       std::pair{"cgroup.nr_periods", Metric::kPeriods}}) {
      SeriesInfo info;
      info.name = name;
      info.metric = metric;
      info.group = "cgroup";
      series->push_back(std::move(info));
    }
  }
  void sample(double* row, const ReportFn& report) override {
    row[0] = row[1] = row[2] = kNaN;
    std::string_view text = file_.read();
    if (file_.failed()) {
      once_.report_once(0, "cgroup cpu.stat", file_, report);
      return;
    }
    for (;;) {
      const std::string_view key = next_token(&text);
      const std::string_view value = next_token(&text);
      long long v = 0;
      if (key.empty() || value.empty()) break;
      if (!parse_ll(value, &v)) continue;
      // v1 throttled_time is ns (sched-bwc.rst), v2 throttled_usec is µs (cgroup-v2.rst).
      if (version_ == 1 && key == "throttled_time") row[0] = static_cast<double>(v) * 1e-9;
      else if (version_ == 2 && key == "throttled_usec") row[0] = static_cast<double>(v) * 1e-6;
      else if (key == "nr_throttled") row[1] = static_cast<double>(v);
      else if (key == "nr_periods") row[2] = static_cast<double>(v);
    }
  }

 private:
  int version_;
  CachedFile file_;
  OnceFlags once_;
};

}  // namespace

std::unique_ptr<Source> make_procstat_source(const FsRoot& fs, const std::vector<int>& cpus) {
  return std::make_unique<ProcStatSource>(fs, cpus);
}
std::unique_ptr<Source> make_cgroup_source(const FsRoot& fs, const CgroupInfo& cgroup) {
  return std::make_unique<CgroupSource>(fs, cgroup);
}

}  // namespace edgeprobe::telemetry
