// The sampler's sources. Every file is opened once (CachedFile) under the root prefix
// and re-read with pread; raw values are normalised to the units in the series names.
#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <limits>
#include <map>

#include "telemetry/file_reader.h"
#include "telemetry/source.h"

namespace edgeprobe::telemetry {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// USER_HZ: /proc/stat and task stat count in these ticks (proc(5)); 100 on every Linux ABI.
double ticks_per_s() {
  static const double hz = [] {
    const long value = ::sysconf(_SC_CLK_TCK);
    return value > 0 ? static_cast<double>(value) : 100.0;
  }();
  return hz;
}

// Reports a failed read once per series, not on every tick.
struct OnceFlags {
  std::vector<bool> reported;
  // what is a string_view so that the steady state (nothing to report) allocates nothing.
  void report_once(size_t i, std::string_view what, const CachedFile& file, const ReportFn& report) {
    if (i >= reported.size()) reported.resize(i + 1, false);
    if (reported[i]) return;
    reported[i] = true;
    report(std::string(what) + ": unavailable: " + file.path() + " " + file.error());
  }
};

double read_or_nan(CachedFile& file, size_t i, std::string_view what, OnceFlags& once, const ReportFn& report) {
  long long value = 0;
  if (file.read_int(&value)) return static_cast<double>(value);
  once.report_once(i, what, file, report);
  return kNaN;
}

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

// ---- power --------------------------------------------------------------------------

class PowerSource : public Source {
 public:
  PowerSource(const FsRoot& fs, const PowerLayout& power) {
    for (const auto& b : power.batteries) {
      if (b.has_power_now) {
        power_now_.push_back({b.name, b.status, CachedFile(fs.path(b.dir + "/status")),
                              CachedFile(fs.path(b.dir + "/power_now"))});
      }
      if (!b.has_current) continue;
      BatteryEntry e;
      e.name = b.name;
      e.current_scale = b.current_scale_to_ua;
      e.voltage_scale = b.voltage_scale_to_uv;
      e.current = CachedFile(fs.path(b.dir + "/current_now"));
      e.status_file = CachedFile(fs.path(b.dir + "/status"));
      e.status = b.status;
      e.has_voltage = b.has_voltage;
      if (b.has_voltage) e.voltage = CachedFile(fs.path(b.dir + "/voltage_now"));
      e.has_charge = b.has_charge_counter;
      if (b.has_charge_counter) e.charge = CachedFile(fs.path(b.dir + "/charge_counter"));
      batteries_.push_back(std::move(e));
    }
    for (const auto& z : power.rapl) {
      RaplEntry e;
      e.label = "rapl:" + z.name + (z.top_level ? "" : "@" + z.id.substr(11));
      e.range_uj = static_cast<double>(z.max_energy_range_uj);
      e.in_total = z.counts_in_total;
      e.file = CachedFile(fs.path(z.energy_path));
      rapl_.push_back(std::move(e));
    }
    for (const auto& r : power.rails) {
      rails_.push_back({r.label, r.counts_in_total, CachedFile(fs.path(r.voltage_path)), CachedFile(fs.path(r.current_path))});
    }
  }
  const char* family() const override { return "power"; }
  void declare(std::vector<SeriesInfo>* series) override {
    auto add = [&](std::string name, Metric metric, std::string group, bool in_total) {
      SeriesInfo info;
      info.name = std::move(name);
      info.metric = metric;
      info.group = std::move(group);
      info.in_total = in_total;
      series->push_back(std::move(info));
    };
    for (const auto& b : batteries_) {
      add(b.name + ".discharge_current_ua", Metric::kDischargeCurrentUa, b.name, false);
      if (b.has_voltage) {
        add(b.name + ".voltage_uv", Metric::kVoltageUv, b.name, false);
        add(b.name + ".power_w", Metric::kPowerW, b.name, true);
      }
      if (b.has_charge) add(b.name + ".charge_counter_uah", Metric::kChargeCounterUah, b.name, false);
    }
    for (const auto& p : power_now_) add(p.name + ".power_w", Metric::kPowerW, p.name, true);
    for (const auto& r : rapl_) add(r.label + ".energy_j", Metric::kEnergyJ, r.label, r.in_total);
    for (const auto& r : rails_) add("ina3221." + r.label + ".power_w", Metric::kPowerW, r.label, r.in_total);
  }
  void sample(double* row, const ReportFn& report) override {
    size_t k = 0;
    size_t flag = 0;
    for (auto& b : batteries_) {
      const std::string_view status = b.status_file.read();
      if (!b.status_file.failed() && status != b.status) b.status.assign(status);
      long long raw = 0;
      double current = kNaN;
      if (b.current.read_int(&raw)) {
        current = discharge_current_ua(raw, b.current_scale, b.status);
      } else {
        once_.report_once(flag, "battery current", b.current, report);
      }
      ++flag;
      row[k++] = current;
      if (b.has_voltage) {
        double voltage = kNaN;
        if (b.voltage.read_int(&raw)) voltage = static_cast<double>(raw) * b.voltage_scale;
        else once_.report_once(flag, "battery voltage", b.voltage, report);
        row[k++] = voltage;
        row[k++] = current * voltage * 1e-12;  // µA x µV -> W; positive while discharging
      }
      ++flag;
      if (b.has_charge) row[k++] = read_or_nan(b.charge, flag, "battery charge_counter", once_, report);
      ++flag;
    }
    for (auto& p : power_now_) {
      const std::string_view status = p.status_file.read();
      if (!p.status_file.failed() && status != p.status) p.status.assign(status);
      long long raw = 0;
      // µW, positive while discharging: the same sign rule as current_now.
      if (p.file.read_int(&raw)) {
        row[k++] = discharge_current_ua(raw, 1, p.status) * 1e-6;
      } else {
        once_.report_once(flag, "battery power_now", p.file, report);
        row[k++] = kNaN;
      }
      ++flag;
    }
    for (auto& r : rapl_) {
      long long raw = 0;
      if (!r.file.read_int(&raw)) {
        once_.report_once(flag++, r.label, r.file, report);
        row[k++] = kNaN;
        continue;
      }
      ++flag;
      const double value = static_cast<double>(raw);
      if (r.have_last) {
        double delta = value - r.last_uj;
        // energy_uj wraps at max_energy_range_uj (powercap.rst); one wrap per interval
        // at most at any sane sampling rate.
        if (delta < 0 && r.range_uj > 0) delta += r.range_uj + 1;
        if (delta >= 0) r.accumulated_uj += delta;
      }
      r.last_uj = value;
      r.have_last = true;
      row[k++] = r.accumulated_uj * 1e-6;
    }
    for (auto& r : rails_) {
      long long mv = 0, ma = 0;
      const bool ok_v = r.voltage.read_int(&mv);
      const bool ok_i = ok_v && r.current.read_int(&ma);
      if (!ok_v || !ok_i) once_.report_once(flag, r.label, ok_v ? r.current : r.voltage, report);
      ++flag;
      row[k++] = ok_v && ok_i ? static_cast<double>(mv) * static_cast<double>(ma) * 1e-6 : kNaN;  // mV x mA -> W
    }
  }

 private:
  struct BatteryEntry {
    std::string name, status;
    double current_scale = 1, voltage_scale = 1;
    bool has_voltage = false, has_charge = false;
    CachedFile current, voltage, charge, status_file;
  };
  struct RaplEntry {
    std::string label;
    double range_uj = 0, last_uj = 0, accumulated_uj = 0;
    bool have_last = false, in_total = false;
    CachedFile file;
  };
  struct RailEntry {
    std::string label;
    bool in_total;
    CachedFile voltage, current;
  };
  struct PowerNowEntry {
    std::string name, status;
    CachedFile status_file, file;
  };
  std::vector<BatteryEntry> batteries_;
  std::vector<PowerNowEntry> power_now_;
  std::vector<RaplEntry> rapl_;
  std::vector<RailEntry> rails_;
  OnceFlags once_;
};

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

// ---- the measured process -----------------------------------------------------------

class ProcessSource : public Source {
 public:
  ProcessSource(const FsRoot& fs, int pid, const CpuLayout& cpus, bool live_self, const std::atomic<int>* exclude_tid)
      : proc_(proc_dir(pid)), task_dir_(fs.path(proc_ + "/task")), exclude_tid_(exclude_tid), live_self_(live_self),
        stat_(fs.path(proc_ + "/stat")), status_(fs.path(proc_ + "/status")) {
    for (size_t c = 0; c < cpus.clusters.size(); ++c) {
      cluster_names_.push_back(cpus.clusters[c].name);
      for (int cpu : cpus.clusters[c].cpus) {
        if (cpu < 0) continue;
        if (static_cast<size_t>(cpu) >= cluster_of_cpu_.size()) cluster_of_cpu_.resize(static_cast<size_t>(cpu) + 1, -1);
        cluster_of_cpu_[static_cast<size_t>(cpu)] = static_cast<int>(c);
      }
    }
    cluster_cpu_s_.assign(cluster_names_.size(), 0.0);
  }
  ~ProcessSource() override {
    if (task_fd_ >= 0) ::close(task_fd_);
  }
  ProcessSource(const ProcessSource&) = delete;
  ProcessSource& operator=(const ProcessSource&) = delete;
  const char* family() const override { return "process"; }
  // CPU times are 10 ms ticks here too, and each thread costs a read; phases last
  // long enough for 10 Hz placement samples.
  double max_hz() const override { return 10; }
  void declare(std::vector<SeriesInfo>* series) override {
    auto add = [&](std::string name, Metric metric, std::string group = "", int index = -1) {
      SeriesInfo info;
      info.name = std::move(name);
      info.metric = metric;
      info.group = std::move(group);
      info.index = index;
      series->push_back(std::move(info));
    };
    add("process.cpu_s", Metric::kSelfCpuS);
    add("process.threads", Metric::kThreads);
    add("process.rss_kb", Metric::kRssKb);
    add("process.peak_rss_kb", Metric::kPeakRssKb);
    add("process.voluntary_ctx_switches", Metric::kVoluntaryCtxSwitches);
    add("process.involuntary_ctx_switches", Metric::kInvoluntaryCtxSwitches);
    for (size_t c = 0; c < cluster_names_.size(); ++c) {
      add("process.cluster." + cluster_names_[c] + ".cpu_s", Metric::kSelfClusterCpuS, cluster_names_[c], static_cast<int>(c));
    }
  }
  void sample(double* row, const ReportFn& report) override {
    std::fill(row, row + 6 + cluster_names_.size(), kNaN);
    TaskStat ts;
    long long num_threads = -1;
    const std::string_view stat = stat_.read();
    if (!stat_.failed() && parse_task_stat(stat, &ts)) {
      row[0] = static_cast<double>(ts.utime_ticks + ts.stime_ticks) / ticks_per_s();
      row[1] = static_cast<double>(ts.num_threads);
      num_threads = ts.num_threads;
    } else {
      once_.report_once(0, "process stat", stat_, report);
    }
    std::string_view status = status_.read();
    if (status_.failed()) {
      once_.report_once(1, "process status", status_, report);
    } else {
      while (!status.empty()) {
        const size_t eol = status.find('\n');
        std::string_view line = status.substr(0, eol);
        status.remove_prefix(eol == std::string_view::npos ? status.size() : eol + 1);
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos) continue;
        const std::string_view key = line.substr(0, colon);
        long long value = 0;
        if (!parse_ll(line.substr(colon + 1), &value)) continue;
        if (key == "VmRSS") row[2] = static_cast<double>(value);
        else if (key == "VmHWM") row[3] = static_cast<double>(value);
        else if (!live_self_ && key == "voluntary_ctxt_switches") row[4] = static_cast<double>(value);
        else if (!live_self_ && key == "nonvoluntary_ctxt_switches") row[5] = static_cast<double>(value);
      }
    }
    if (live_self_) {
      // All threads, living and exited; /proc/self/status only counts the main thread.
      struct rusage usage {};
      if (::getrusage(RUSAGE_SELF, &usage) == 0) {
        row[4] = static_cast<double>(usage.ru_nvcsw);
        row[5] = static_cast<double>(usage.ru_nivcsw);
      }
    }
    if (sample_tasks(report, num_threads)) {
      for (size_t c = 0; c < cluster_names_.size(); ++c) row[6 + c] = cluster_cpu_s_[c];
    }
  }
  void sample_threads(int64_t t_ns, Timeline* timeline) override {
    for (const auto& t : current_) timeline->threads.push_back({t_ns, t.tid, t.cpu, t.cpu_s});
  }

 private:
  struct Task {
    int tid = 0;
    int cpu = -1;
    double cpu_s = 0;
  };
  // Reads every thread's stat and adds each thread's CPU time since the previous tick
  // to the cluster it last ran on (the best a sampler can do without sched tracing).
  // num_threads: field 20 of the process's stat from this tick, -1 when unknown. While it
  // equals the count of the last listing and every known thread still reads, the set of
  // threads is the same (a thread that exits fails its read, so a swap of one thread for
  // another is caught) and the directory is not listed again.
  bool sample_tasks(const ReportFn& report, long long num_threads) {
    previous_.swap(current_);
    current_.clear();
    const int excluded = exclude_tid_ != nullptr ? exclude_tid_->load(std::memory_order_relaxed) : 0;
    bool same = num_threads >= 0 && listed_ && num_threads == static_cast<long long>(tids_.size());
    if (same) {
      for (auto& [tid, file] : files_) {
        if (tid != excluded && !read_task(tid, file)) {
          same = false;
          break;
        }
      }
    }
    if (!same) {
      current_.clear();
      if (!list_tasks(report)) return false;
      for (const int tid : tids_) {
        if (tid == excluded) continue;
        auto it = std::find_if(files_.begin(), files_.end(), [&](const auto& f) { return f.first == tid; });
        if (it == files_.end()) {
          files_.emplace_back(tid, CachedFile(task_dir_ + "/" + std::to_string(tid) + "/stat"));
          it = files_.end() - 1;
        }
        read_task(tid, it->second);  // fails for a thread that just exited
      }
    }
    // Forget files of threads that are gone.
    files_.erase(std::remove_if(files_.begin(), files_.end(),
                                [&](const auto& f) {
                                  return std::none_of(current_.begin(), current_.end(),
                                                      [&](const Task& t) { return t.tid == f.first; });
                                }),
                 files_.end());
    for (const Task& t : current_) {
      const auto prev = std::find_if(previous_.begin(), previous_.end(), [&](const Task& p) { return p.tid == t.tid; });
      double delta = 0;
      if (prev != previous_.end()) delta = t.cpu_s - prev->cpu_s;
      else if (!first_tick_) delta = t.cpu_s;  // born since the last tick
      if (delta <= 0 || t.cpu < 0 || static_cast<size_t>(t.cpu) >= cluster_of_cpu_.size()) continue;
      const int cluster = cluster_of_cpu_[static_cast<size_t>(t.cpu)];
      if (cluster >= 0) cluster_cpu_s_[static_cast<size_t>(cluster)] += delta;
    }
    first_tick_ = false;
    return true;
  }

  bool read_task(int tid, CachedFile& file) {
    TaskStat ts;
    const std::string_view line = file.read();
    if (file.failed() || !parse_task_stat(line, &ts)) return false;
    current_.push_back({tid, ts.processor, static_cast<double>(ts.utime_ticks + ts.stime_ticks) / ticks_per_s()});
    return true;
  }

  // One descriptor for the task directory, rewound for each listing: lseek + getdents64
  // instead of opendir's open, fstat, malloc and close.
  bool list_tasks(const ReportFn& report) {
    listed_ = false;
    if (task_fd_ < 0) task_fd_ = ::open(task_dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (task_fd_ < 0 || ::lseek(task_fd_, 0, SEEK_SET) != 0) {
      if (!task_dir_reported_) report("process threads: unavailable: " + task_dir_ + " cannot be listed");
      task_dir_reported_ = true;
      return false;
    }
    tids_.clear();
    for (;;) {
      const long n = ::syscall(SYS_getdents64, task_fd_, dirents_.data(), dirents_.size());
      if (n <= 0) break;
      for (long pos = 0; pos < n;) {
        // struct linux_dirent64 (getdents64(2)): ino 8, off 8, reclen 2, type 1, name.
        unsigned short reclen = 0;
        std::memcpy(&reclen, dirents_.data() + pos + 16, sizeof reclen);
        const char* name = dirents_.data() + pos + 19;
        long long tid = 0;
        if (name[0] >= '0' && name[0] <= '9' && parse_ll(name, &tid)) tids_.push_back(static_cast<int>(tid));
        pos += reclen;
      }
    }
    listed_ = true;
    return true;
  }

  std::string proc_, task_dir_;
  const std::atomic<int>* exclude_tid_;
  int task_fd_ = -1;
  std::vector<char> dirents_ = std::vector<char>(16384);
  std::vector<int> tids_;
  bool live_self_;
  CachedFile stat_, status_;
  std::vector<std::string> cluster_names_;
  std::vector<int> cluster_of_cpu_;
  std::vector<double> cluster_cpu_s_;
  std::vector<std::pair<int, CachedFile>> files_;
  std::vector<Task> previous_, current_;
  bool first_tick_ = true;
  bool listed_ = false;  // tids_ holds the last listing
  bool task_dir_reported_ = false;
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

bool parse_task_stat(std::string_view line, TaskStat* out) {
  const size_t close = line.rfind(')');
  if (close == std::string_view::npos) return false;
  std::string_view rest = line.substr(close + 1);
  // Field 3 (state) is the first after ')'; we need 14, 15 (utime, stime), 20, 39.
  for (int field = 3; field <= 39; ++field) {
    const std::string_view token = next_token(&rest);
    if (token.empty()) return field > 20;  // kernels before 2.2 lack field 39: processor stays -1
    long long value = 0;
    if (field == 14 || field == 15 || field == 20 || field == 39) {
      if (!parse_ll(token, &value)) return false;
      if (field == 14) out->utime_ticks = value;
      if (field == 15) out->stime_ticks = value;
      if (field == 20) out->num_threads = value;
      if (field == 39) out->processor = static_cast<int>(value);
    }
  }
  return true;
}

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
std::unique_ptr<Source> make_power_source(const FsRoot& fs, const PowerLayout& power) {
  return std::make_unique<PowerSource>(fs, power);
}
std::unique_ptr<Source> make_procstat_source(const FsRoot& fs, const std::vector<int>& cpus) {
  return std::make_unique<ProcStatSource>(fs, cpus);
}
std::unique_ptr<Source> make_process_source(const FsRoot& fs, int pid, const CpuLayout& cpus, bool live_self,
                                            const std::atomic<int>* exclude_tid) {
  return std::make_unique<ProcessSource>(fs, pid, cpus, live_self, exclude_tid);
}
std::unique_ptr<Source> make_cgroup_source(const FsRoot& fs, const CgroupInfo& cgroup) {
  return std::make_unique<CgroupSource>(fs, cgroup);
}

}  // namespace edgeprobe::telemetry
