#include "telemetry/sampler.h"

#include <pthread.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace edgeprobe::telemetry {

Sampler::Sampler(SamplerOptions options, RunClock clock)
    : options_(std::move(options)), clock_(clock), fs_(options_.sysfs_root) {
  if (!std::isfinite(options_.hz) || options_.hz > 1000) {
    throw_bad_input("--sample-hz {} is out of range (0 turns telemetry off, at most 1000)", options_.hz);
  }
  if (options_.hz <= 0) return;
  timeline_.sample_hz = options_.hz;
  // time_in_state is a table; about twice a second is plenty for phase residency.
  slow_every_ = std::max<int64_t>(1, std::llround(options_.hz / 2));

  std::vector<std::string> lines;
  const CpuLayout cpus = discover_cpus(fs_);
  lines.insert(lines.end(), cpus.unavailable.begin(), cpus.unavailable.end());
  const auto zones = discover_thermal(fs_, &lines);
  const PowerLayout power = discover_power(fs_);
  lines.insert(lines.end(), power.unavailable.begin(), power.unavailable.end());
  const GpuLayout gpus = discover_gpus(fs_, power.rails);
  lines.insert(lines.end(), gpus.unavailable.begin(), gpus.unavailable.end());
  const CgroupInfo cgroup = discover_cgroup(fs_, options_.pid);
  lines.insert(lines.end(), cgroup.unavailable.begin(), cgroup.unavailable.end());

  for (const auto& c : cpus.clusters) timeline_.clusters.push_back({c.name, c.role, c.cpus, c.max_khz});
  if (!cpus.policies.empty()) sources_.push_back(make_cpufreq_source(fs_, cpus));
  if (std::any_of(cpus.policies.begin(), cpus.policies.end(), [](const CpufreqPolicy& p) { return p.scaling_max_khz.has_value(); })) {
    sources_.push_back(make_cpufreq_cap_source(fs_, cpus));
  }
  // Right after the CPU clocks, so that the trace shows both clocks side by side.
  for (const auto& g : gpus.gpus) {
    timeline_.gpus.push_back({g.name, g.kind, g.model, g.governor, g.max_hz, g.rail, g.rail_shared_with});
  }
  if (!gpus.gpus.empty()) {
    sources_.push_back(make_gpu_source(fs_, gpus));
    sources_.push_back(make_gpu_slow_source(fs_, gpus));
  }
  if (!zones.empty() || std::any_of(power.batteries.begin(), power.batteries.end(), [](const Battery& b) { return b.has_temp; })) {
    sources_.push_back(make_thermal_source(fs_, zones, power.batteries));
  }
  if (!power.batteries.empty() || !power.rapl.empty() || !power.rails.empty()) {
    sources_.push_back(make_power_source(fs_, power));
  }
  sources_.push_back(make_procstat_source(fs_, cpus.online));
  const bool live_self = options_.pid == 0 && fs_.root() == "/";
  sources_.push_back(make_process_source(fs_, options_.pid, cpus, live_self, live_self ? &sampler_tid_ : nullptr));
  if (cgroup.version != 0) sources_.push_back(make_cgroup_source(fs_, cgroup));

  for (auto& source : sources_) {
    offsets_.push_back(timeline_.series.size());
    source->declare(&timeline_.series);
    counts_.push_back(timeline_.series.size() - offsets_.back());
    const double cap = source->max_hz();
    every_.push_back(cap > 0 ? std::max<int64_t>(1, static_cast<int64_t>(std::ceil(options_.hz / cap - 1e-9))) : 1);
  }
  due_ = every_;
  timeline_.values.resize(timeline_.series.size());
  // Room for a few minutes without reallocating; growth after that is geometric.
  const size_t reserve = static_cast<size_t>(std::min(options_.hz * 300, 1e5));
  timeline_.t_ns.reserve(reserve);
  for (auto& column : timeline_.values) column.reserve(reserve);
  row_.assign(timeline_.series.size(), 0.0);
  read_.assign(sources_.size(), 0);
  unavailable_ = std::move(lines);
}

Sampler::~Sampler() {
  try {
    stop();
  } catch (...) {
  }
}

void Sampler::report(const std::string& line) {
  std::lock_guard<std::mutex> lock(data_mutex_);
  if (std::find(unavailable_.begin(), unavailable_.end(), line) == unavailable_.end()) unavailable_.push_back(line);
}

void Sampler::take_sample(int64_t t_ns, int64_t grid) {
  std::lock_guard<std::mutex> lock(sample_mutex_);
  const ReportFn report_fn = [this](const std::string& line) { report(line); };
  const bool forced = grid < 0;
  const int64_t begin = clock_.now_ns();
  for (size_t i = 0; i < sources_.size(); ++i) {
    double* row = row_.data() + offsets_[i];
    // A tick past a source's due tick (after a stall) reads it too; the next due tick
    // stays on the source's own grid so that sources of one rate share wake-ups.
    read_[i] = forced || grid >= due_[i];
    if (!forced && read_[i]) due_[i] = (grid / every_[i] + 1) * every_[i];
    if (read_[i]) {
      sources_[i]->sample(row, report_fn);
    } else {
      std::fill(row, row + counts_[i], std::numeric_limits<double>::quiet_NaN());
    }
  }
  // Stamp the middle of the reads when sampling live; replays give their own time.
  if (t_ns < 0) t_ns = begin + (clock_.now_ns() - begin) / 2;
  // Slow readings ride on the first wake-up at or after their tick: no wake-up of their own.
  const bool slow = forced || grid >= slow_due_;
  if (!forced && slow) slow_due_ = (grid / slow_every_ + 1) * slow_every_;
  std::lock_guard<std::mutex> data_lock(data_mutex_);
  // Keep the timeline sorted even when sample_now() races a tick.
  if (!timeline_.t_ns.empty() && t_ns < timeline_.t_ns.back()) t_ns = timeline_.t_ns.back();
  timeline_.t_ns.push_back(t_ns);
  for (size_t s = 0; s < row_.size(); ++s) timeline_.values[s].push_back(row_[s]);
  for (size_t i = 0; i < sources_.size(); ++i) {
    if (slow) sources_[i]->sample_slow(t_ns, &timeline_, report_fn);
    if (read_[i]) sources_[i]->sample_threads(t_ns, &timeline_);
  }
}

int64_t Sampler::next_due_tick(int64_t grid) const {
  int64_t next = std::numeric_limits<int64_t>::max();
  for (const int64_t due : due_) next = std::min(next, std::max(due, grid + 1));
  return next == std::numeric_limits<int64_t>::max() ? grid + 1 : next;
}

void Sampler::sample_now() {
  if (options_.hz > 0) take_sample(-1, -1);
}

void Sampler::sample_at(int64_t t_ns) {
  if (options_.hz > 0) take_sample(std::max<int64_t>(0, t_ns), -1);
}

void Sampler::start() {
  if (options_.hz <= 0 || thread_.joinable()) return;
  take_sample(-1, -1);
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);
    stop_requested_ = false;
  }
  thread_ = std::thread([this] { run(); });
}

void Sampler::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(wake_mutex_);
    stop_requested_ = true;
  }
  wake_.notify_all();
  thread_.join();
  take_sample(-1, -1);
}

void Sampler::run() {
#ifdef __linux__
  pthread_setname_np(pthread_self(), "ep-sampler");  // tells it apart in the thread list
#endif
  // The sampler's own reads are not the workload's placement.
  const int tid = static_cast<int>(::syscall(SYS_gettid));
  sampler_tid_.store(tid, std::memory_order_relaxed);
  using clock = std::chrono::steady_clock;
  const int64_t period_ns = static_cast<int64_t>(1e9 / options_.hz);
#ifdef __linux__
  // Timestamps are taken at read time, so a wake-up that comes a little late (slack, a
  // low priority) moves a row, never mislabels it.
  const int64_t slack = options_.timer_slack_ns > 0 ? options_.timer_slack_ns
                                                    : std::min<int64_t>(period_ns / 5, 4'000'000);
  if (options_.timer_slack_ns >= 0) ::prctl(PR_SET_TIMERSLACK, static_cast<unsigned long>(slack), 0, 0, 0);
  if (options_.thread_nice != SamplerOptions::kKeepNice) {
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(tid), options_.thread_nice);  // best effort
  }
#endif
  const auto period = std::chrono::nanoseconds(period_ns);
  // Tick g is due at origin + g * period; a restart (start() after stop()) begins a new grid.
  const auto origin = clock::now();
  due_ = every_;
  slow_due_ = slow_every_;
  int64_t grid = 0;
  std::unique_lock<std::mutex> lock(wake_mutex_);
  while (!stop_requested_) {
    grid = next_due_tick(grid);
    // An absolute schedule does not drift; after a stall, skip the missed ticks (the
    // sources that were due are read on the next one).
    const auto now = clock::now();
    if (origin + grid * period < now) grid = (now - origin) / period + 1;
    if (wake_.wait_until(lock, origin + grid * period, [this] { return stop_requested_; })) break;
    lock.unlock();
    take_sample(-1, grid);
    lock.lock();
  }
}

Timeline Sampler::timeline() const {
  std::lock_guard<std::mutex> lock(data_mutex_);
  return timeline_;
}

Timeline Sampler::timeline(int64_t start_ns, int64_t end_ns) const {
  std::lock_guard<std::mutex> lock(data_mutex_);
  return timeline_.slice(start_ns, end_ns);
}

std::vector<std::string> Sampler::unavailable() const {
  std::lock_guard<std::mutex> lock(data_mutex_);
  return unavailable_;
}

}  // namespace edgeprobe::telemetry
