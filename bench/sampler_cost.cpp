// What the telemetry sampler costs (issue 3; a benchmark, not a test).
//
//   sampler_cost idle [HZ=50] [SECONDS=5]
//     The sampler alone on this machine's /proc and /sys: wake-ups, rows, the sampler
//     thread's CPU time per wake-up (schedstat), how late each wake-up ran after its
//     schedule, and the cost of one forced sample_now() (every source read).
//   sampler_cost load [HZ=50] [ROUNDS=20] [SLICE_MS=500]
//     A ggml-like load: one worker per online CPU, each doing a fixed slice of work and
//     then spinning at a shared barrier (as ggml's threads do after every op). Slices
//     alternate sampler on / off in ABBA order; prints the median of paired ratios of
//     barrier rounds per second (on / off), and the lateness of the sampler's wake-ups
//     under that load.
//
// SAMPLER_NICE and SAMPLER_SLACK_US in the environment override the sampler thread's
// nice value and timer slack (SamplerOptions), to compare settings; SAMPLER_FORCED=0
// skips the forced samples (for strace -f -c of the thread alone); SAMPLER_SCHED_IDLE=1
// puts the sampler thread under SCHED_IDLE in load mode.
#include <dirent.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "telemetry/sampler.h"

using namespace edgeprobe;
using namespace edgeprobe::telemetry;

namespace {

struct SchedStat {
  double cpu_ms = 0, wait_ms = 0;
  long long slices = 0;
};

// /proc/self/task/<tid>/schedstat: ns on CPU, ns waiting on a run queue, time slices.
SchedStat schedstat(int tid) {
  SchedStat s;
  std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/schedstat");
  long long run = 0, wait = 0;
  if (in >> run >> wait >> s.slices) {
    s.cpu_ms = static_cast<double>(run) * 1e-6;
    s.wait_ms = static_cast<double>(wait) * 1e-6;
  }
  return s;
}

int find_thread(const char* name) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    if (DIR* dir = ::opendir("/proc/self/task")) {
      while (const dirent* entry = ::readdir(dir)) {
        if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
        std::ifstream comm(std::string("/proc/self/task/") + entry->d_name + "/comm");
        std::string line;
        if (std::getline(comm, line) && line == name) {
          const int tid = std::atoi(entry->d_name);
          ::closedir(dir);
          return tid;
        }
      }
      ::closedir(dir);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return 0;
}

SamplerOptions options(double hz) {
  SamplerOptions o;
  o.hz = hz;
  if (const char* v = std::getenv("SAMPLER_NICE")) o.thread_nice = std::atoi(v);
  if (const char* v = std::getenv("SAMPLER_SLACK_US")) o.timer_slack_ns = std::atoll(v) * 1000;
  return o;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = p * static_cast<double>(v.size() - 1);
  const size_t i = static_cast<size_t>(pos);
  const double f = pos - static_cast<double>(i);
  return i + 1 < v.size() ? v[i] * (1 - f) + v[i + 1] * f : v[i];
}

// Lateness of each thread wake-up: the thread wakes on a grid of k/hz (k = 1 when a
// source is read on every tick, 5 at 50 Hz when the fastest is 10 Hz); k is the median
// spacing of rows in ticks. The distance from the grid anchored at the first row is how
// late (or, by the timer slack, early) a wake-up ran, plus half its read time.
std::vector<double> lateness_ms(const Timeline& tl, double hz) {
  std::vector<double> late;
  if (tl.t_ns.size() < 4) return late;
  // Leave out the forced samples at start and stop.
  std::vector<double> gaps;
  for (size_t i = 2; i + 1 < tl.t_ns.size(); ++i) gaps.push_back(static_cast<double>(tl.t_ns[i] - tl.t_ns[i - 1]));
  const double tick = 1e9 / hz;
  const double period = std::max(1.0, std::round(percentile(gaps, 0.5) / tick)) * tick;
  const int64_t origin = tl.t_ns[1];
  for (size_t i = 2; i + 1 < tl.t_ns.size(); ++i) {
    const double since = static_cast<double>(tl.t_ns[i] - origin);
    double past = since - std::floor(since / period) * period;
    if (past > period / 2) past -= period;  // early, not a whole period late
    late.push_back(past * 1e-6);
  }
  return late;
}

void print_lateness(const char* what, const std::vector<double>& late) {
  std::printf("%s: wake-up lateness ms (signed, from the grid of the first row)  p50 %.3f  p90 %.3f  p99 %.3f  max %.3f  (n=%zu)\n", what,
              percentile(late, 0.5), percentile(late, 0.9), percentile(late, 0.99),
              late.empty() ? 0.0 : *std::max_element(late.begin(), late.end()), late.size());
}

int idle(double hz, double seconds) {
  RunClock clock;
  Sampler sampler(options(hz), clock);
  // One forced sample reads every source: its cost, on this thread's CPU clock.
  const int kForced = std::getenv("SAMPLER_FORCED") ? std::atoi(std::getenv("SAMPLER_FORCED")) : 200;
  timespec a{}, b{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  for (int i = 0; i < kForced; ++i) sampler.sample_now();
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  const double forced_us = (static_cast<double>(b.tv_sec - a.tv_sec) * 1e9 + static_cast<double>(b.tv_nsec - a.tv_nsec)) / std::max(1, kForced) * 1e-3;

  Sampler live(options(hz), clock);
  live.start();
  const int tid = find_thread("ep-sampler");
  const SchedStat s0 = schedstat(tid);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const SchedStat s1 = schedstat(tid);
  live.stop();
  const Timeline tl = live.timeline();
  const double wakes = static_cast<double>(s1.slices - s0.slices);
  const double rows = static_cast<double>(tl.size() > 2 ? tl.size() - 2 : 0);
  std::printf("hz %.0f, %.1f s idle: %.0f rows (%.1f/s), %.0f wake-ups (%.1f/s)\n", hz, seconds, rows,
              rows / seconds, wakes, wakes / seconds);
  std::printf("sampler thread CPU: %.2f ms/s = %.3f %% of one core; %.1f us per wake-up; run-queue wait %.3f ms/s\n",
              (s1.cpu_ms - s0.cpu_ms) / seconds, (s1.cpu_ms - s0.cpu_ms) / seconds / 10,
              wakes > 0 ? (s1.cpu_ms - s0.cpu_ms) * 1e3 / wakes : 0.0, (s1.wait_ms - s0.wait_ms) / seconds);
  std::printf("one forced sample_now() (every source): %.1f us of CPU\n", forced_us);
  print_lateness("idle", lateness_ms(tl, hz));
  return 0;
}

// ---- a ggml-like load --------------------------------------------------------------------

struct Load {
  explicit Load(int n) : n_threads(n) {}
  const int n_threads;
  std::atomic<long long> arrived{0};
  std::atomic<long long> rounds{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;

  void start() {
    for (int i = 0; i < n_threads; ++i) {
      threads.emplace_back([this] {
        volatile double x = 1.0;
        long long round = 0;
        while (!stop.load(std::memory_order_relaxed)) {
          for (int k = 0; k < 20000; ++k) x = x * 1.0000001 + 1e-9;  // about 90 us of work here
          // Barrier: the last to arrive opens the next round; the others spin.
          ++round;
          const long long target = round * n_threads;
          if (arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == target) {
            rounds.fetch_add(1, std::memory_order_relaxed);
          }
          while (arrived.load(std::memory_order_acquire) < target) {
            if (stop.load(std::memory_order_relaxed)) return;
#if defined(__x86_64__)
            __builtin_ia32_pause();
#endif
          }
        }
      });
    }
  }
  void join() {
    stop = true;
    for (auto& t : threads) t.join();
  }
};

int load(double hz, int rounds, int slice_ms) {
  const int n = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  Load work(n);
  work.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // warm up
  RunClock clock;
  std::vector<double> ratios, all_late;
  auto slice = [&](bool sampling) {
    std::unique_ptr<Sampler> sampler;
    if (sampling) {
      sampler = std::make_unique<Sampler>(options(hz), clock);
      sampler->start();
      if (std::getenv("SAMPLER_SCHED_IDLE")) {
        const sched_param param{};
        if (::sched_setscheduler(find_thread("ep-sampler"), SCHED_IDLE, &param) != 0) std::perror("SCHED_IDLE");
      }
    }
    const long long r0 = work.rounds.load();
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(slice_ms));
    const long long r1 = work.rounds.load();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (sampler) {
      sampler->stop();
      const auto late = lateness_ms(sampler->timeline(), hz);
      all_late.insert(all_late.end(), late.begin(), late.end());
    }
    return static_cast<double>(r1 - r0) / s;
  };
  for (int i = 0; i < rounds; ++i) {
    double on = 0, off = 0;
    if (i % 2 == 0) {
      on = slice(true);
      off = slice(false);
    } else {
      off = slice(false);
      on = slice(true);
    }
    ratios.push_back(on / off);
    std::printf("round %2d: on %.0f off %.0f rounds/s, ratio %.4f\n", i, on, off, on / off);
  }
  work.join();
  std::printf("%d workers, hz %.0f, %d ABBA rounds of %d ms: median on/off %.4f  (p25 %.4f, p75 %.4f)\n", n, hz,
              rounds, slice_ms, percentile(ratios, 0.5), percentile(ratios, 0.25), percentile(ratios, 0.75));
  print_lateness("under load", all_late);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "idle";
  const double hz = argc > 2 ? std::atof(argv[2]) : 50;
  if (mode == "idle") return idle(hz, argc > 3 ? std::atof(argv[3]) : 5);
  if (mode == "load") return load(hz, argc > 3 ? std::atoi(argv[3]) : 20, argc > 4 ? std::atoi(argv[4]) : 500);
  std::fprintf(stderr, "usage: sampler_cost idle [HZ] [SECONDS] | load [HZ] [ROUNDS] [SLICE_MS]\n");
  return 2;
}
