// The measured process: its CPU time, threads, memory and context switches, and the
// cluster each of its threads ran on.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

#include "telemetry/sources_internal.h"

namespace edgeprobe::telemetry {
namespace {

using namespace sources;

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

std::unique_ptr<Source> make_process_source(const FsRoot& fs, int pid, const CpuLayout& cpus, bool live_self,
                                            const std::atomic<int>* exclude_tid) {
  return std::make_unique<ProcessSource>(fs, pid, cpus, live_self, exclude_tid);
}

}  // namespace edgeprobe::telemetry
