#include "probe/bandwidth.h"

#include <fmt/format.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include <sys/mman.h>

#include "core/error.h"
#include "core/schedstat.h"
#include "core/stats.h"
#include "probe/contention.h"
#include "probe/bandwidth_kernels.h"

namespace edgeprobe::probe {
namespace {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<unsigned char[], FreeDeleter>;
constexpr uint64_t kHugePageBytes = 2ull << 20;

Buffer allocate(uint64_t bytes) {
  // Aligned to a 2 MiB huge page so transparent huge pages can back all of it.
  void* p = std::aligned_alloc(kHugePageBytes, (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes);
  if (!p) throw_environment("bandwidth probe: cannot allocate {} MiB", bytes >> 20);
  return Buffer(static_cast<unsigned char*>(p));
}

// AnonHugePages of this process (bytes), or nullopt where the kernel does not say.
std::optional<uint64_t> anon_huge_bytes() {
  std::ifstream in("/proc/self/smaps_rollup");  // first line: the address range, then "Key: N kB"
  std::string line;
  const std::string key = "AnonHugePages:";
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::strtoull(line.c_str() + key.size(), nullptr, 10) * 1024;
  return std::nullopt;
}

uint64_t mem_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t value = 0;
  std::string unit;
  while (in >> key >> value >> unit)
    if (key == "MemAvailable:") return value * 1024;
  return 0;
}

bool pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::atomic<uint64_t> g_sink{0};  // keeps the read sums alive
constexpr uint64_t kMinAutoBytes = 512ull << 20;
constexpr uint64_t kMaxAutoBytes = 1024ull << 20;

// Runs one kernel on `threads` threads, each on its own contiguous slice, and times whole
// passes between two barriers (so a pass ends when the slowest thread ends).
BandwidthPoint run_point(const StreamKernels& kernels, const std::string& kernel, const std::string& scope,
                         const std::vector<int>& cpus, int threads, unsigned char* a, unsigned char* b,
                         uint64_t bytes, const BandwidthOptions& opt, std::vector<std::string>& notes) {
  // read streams the whole buffer, copy moves its first half onto the second half
  const bool copy = kernel == "copy";
  const size_t span = copy ? bytes / 2 : bytes;
  const size_t per_thread = span / static_cast<size_t>(threads) / kStreamBlockBytes * kStreamBlockBytes;
  std::barrier start(threads + 1), done(threads + 1);
  std::atomic<bool> stop{false};
  std::atomic<int> pin_failures{0};
  std::vector<double> cpu_s(static_cast<size_t>(threads), 0.0);
  // Each thread's schedstat (run and run-queue wait) from the end of its untimed pass 0 to
  // its exit, read outside the timed passes; keyed by thread index.
  std::map<int, SchedTimes> sched_from, sched_to;
  std::mutex sched_mutex;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      if (!cpus.empty() && !pin_self(cpus[static_cast<size_t>(t)])) pin_failures++;
      const size_t begin = per_thread * static_cast<size_t>(t);
      uint64_t sum = 0;
      for (int pass = 0;; ++pass) {
        start.arrive_and_wait();
        if (stop.load(std::memory_order_relaxed)) break;
        const double c0 = thread_cpu_s();
        if (copy)
          kernels.copy(b + begin, a + begin, per_thread);
        else
          sum += kernels.read(a + begin, per_thread);
        if (pass > 0) cpu_s[static_cast<size_t>(t)] += thread_cpu_s() - c0;
        const auto sched = pass == 0 ? thread_sched_times() : std::nullopt;
        if (sched) {
          const std::lock_guard lock(sched_mutex);
          sched_from[t] = *sched;
        }
        done.arrive_and_wait();
      }
      if (const auto sched = thread_sched_times()) {
        const std::lock_guard lock(sched_mutex);
        sched_to[t] = *sched;
      }
      g_sink += sum;
    });
  }
  const double counted_bytes = static_cast<double>(per_thread) * threads * (copy ? 2 : 1);
  std::vector<double> rates;
  double timed_wall_s = 0;
  const double t_begin = now_s();
  for (int pass = 0;; ++pass) {
    const double t0 = now_s();
    start.arrive_and_wait();
    done.arrive_and_wait();
    const double t1 = now_s();
    if (pass > 0) {  // pass 0 warms TLBs and caches
      rates.push_back(counted_bytes / (t1 - t0) / 1e9);
      timed_wall_s += t1 - t0;
    }
    if (static_cast<int>(rates.size()) >= opt.min_passes && t1 - t_begin >= opt.min_seconds) break;
    if (rates.size() >= 1000) break;
  }
  stop = true;
  start.arrive_and_wait();
  for (auto& th : pool) th.join();
  if (pin_failures > 0)
    notes.push_back(fmt::format("{} {} x{}: pinning failed for {} thread(s); ran unpinned", kernel, scope, threads,
                                pin_failures.load()));
  BandwidthPoint p;
  p.kernel = kernel;
  p.scope = scope;
  p.threads = threads;
  p.cpus = cpus;
  p.passes = static_cast<int>(rates.size());
  p.best_gb_per_s = *std::max_element(rates.begin(), rates.end());
  p.median_gb_per_s = stats::quantile(rates, 0.5);
  // The share of the CPU the threads wanted that they got (schedstat), else, on a kernel
  // without schedstat, their CPU time over threads x wall (which also counts a thread
  // sleeping at the barrier for a slower sibling as disturbed).
  const std::optional<double> sched_share = cpu_share_between(sched_from, sched_to);
  double cpu_total = 0;
  for (double c : cpu_s) cpu_total += c;
  p.cpu_share = sched_share        ? *sched_share
                : timed_wall_s > 0 ? std::min(1.0, cpu_total / (timed_wall_s * threads))
                                   : 0;
  return p;
}

}  // namespace

std::vector<int> thread_sweep(int n) {
  std::vector<int> out;
  for (int t = 1; t <= n; t = t < 8 ? t + 1 : t * 2) out.push_back(t);
  if (out.empty() || out.back() != n) out.push_back(n);
  return out;
}

bool BandwidthPoint::contended() const { return is_contended(cpu_share); }

double BandwidthResult::min_cpu_share() const {
  double share = 1;
  for (const auto& p : points)
    if (p.cpu_share > 0) share = std::min(share, p.cpu_share);  // 0: not recorded
  return share;
}

double BandwidthResult::read_gb_per_s_at(int threads) const {
  double best = 0;
  for (const auto& p : points)
    if (p.kernel == "read" && p.scope == "device" && p.threads == threads && !p.contended())
      best = std::max(best, p.best_gb_per_s);
  return best;
}

double BandwidthResult::read_median_gb_per_s_at(int threads) const {
  double median = 0;
  for (const auto& p : points)
    if (p.kernel == "read" && p.scope == "device" && p.threads == threads && !p.contended())
      median = std::max(median, p.median_gb_per_s);
  return median;
}

BandwidthResult measure_bandwidth(const platform::Topology& topology, const BandwidthOptions& options) {
  BandwidthResult result;
  std::vector<int> order = topology.placement_order();
  int max_threads = options.max_threads > 0 ? options.max_threads : std::max(1, topology.n_cores);
  if (order.empty()) {
    result.notes.push_back("topology has no CPUs: threads run unpinned");
  } else if (max_threads > static_cast<int>(order.size())) {
    result.notes.push_back(fmt::format("asked for {} threads, topology has {} CPUs", max_threads, order.size()));
    max_threads = static_cast<int>(order.size());
  }

  // STREAM's rule: arrays at least 4x the sum of the last-level caches, so no pass is served
  // from cache (McCalpin, stream.c, "STREAM_ARRAY_SIZE"). One buffer serves both kernels:
  // read streams all of it, copy moves its first half onto its second half.
  const uint64_t llc = topology.llc_total_bytes();
  uint64_t bytes = options.buffer_bytes;
  bool said_llc = false;
  if (bytes == 0) {
    const uint64_t wanted = 8 * llc;  // each copy half >= 4x LLC
    bytes = std::clamp<uint64_t>(wanted, kMinAutoBytes, kMaxAutoBytes);
    if (llc == 0) result.notes.push_back(fmt::format("last-level cache size unknown: using {} MiB", bytes >> 20));
    said_llc = wanted > kMaxAutoBytes;
    if (said_llc)
      result.notes.push_back(fmt::format(
          "8x the reported LLC ({} MiB) exceeds the {} MiB cap that keeps a probe to seconds; pass a buffer size "
          "to follow STREAM's rule strictly",
          llc >> 20, kMaxAutoBytes >> 20));
  }
  if (const uint64_t avail = mem_available_bytes(); avail > 0 && bytes > avail / 4) {
    bytes = avail / 4;
    result.notes.push_back(fmt::format("buffer capped to {} MiB by available memory", bytes >> 20));
  }
  const uint64_t quantum = 2 * kStreamBlockBytes * 64;  // whole kernel blocks per half, up to 64 threads
  bytes = std::max<uint64_t>(quantum, bytes / quantum * quantum);
  if (llc > 0 && bytes / 2 < 4 * llc && !said_llc)
    result.notes.push_back(fmt::format("copy halves ({} MiB) are smaller than 4x the reported LLC ({} MiB)",
                                       bytes >> 21, llc >> 20));
  result.buffer_bytes = bytes;

  StreamKernels kernels;
  try {
    kernels = stream_kernels(options.kernel_isa);
  } catch (const std::invalid_argument& e) {
    throw_bad_input("{}", e.what());
  }
  result.kernel_isa = kernels.isa;

  Buffer buffer = allocate(bytes);
  unsigned char* const a = buffer.get();
  unsigned char* const b = a + bytes / 2;
  // Huge pages where the kernel offers them (THP "madvise" or "always"): a 2 MiB page needs
  // one TLB entry where 4 KiB pages need 512, and hardware prefetchers stop at page edges.
  // Measured as the rise in this process's AnonHugePages while the buffer is first touched.
  const std::optional<uint64_t> huge_before = anon_huge_bytes();
  const bool advised = madvise(a, bytes, MADV_HUGEPAGE) == 0;
  // Touch every page in parallel from pinned threads first: first-touch places pages on the
  // NUMA node of the toucher, and untouched pages would make the first passes fault.
  {
    std::vector<std::thread> touch;
    const int n = std::max(1, max_threads);
    const uint64_t slice = bytes / static_cast<uint64_t>(n);
    for (int t = 0; t < n; ++t) {
      touch.emplace_back([&, t] {
        if (options.pin_threads && !order.empty()) pin_self(order[static_cast<size_t>(t)]);
        unsigned char* p = a + slice * static_cast<uint64_t>(t);
        const uint64_t len = t == n - 1 ? bytes - slice * static_cast<uint64_t>(t) : slice;
        for (uint64_t i = 0; i < len; ++i) p[i] = static_cast<unsigned char>(i * 31 + 7);
      });
    }
    for (auto& th : touch) th.join();
  }
  if (const auto huge_after = anon_huge_bytes(); huge_before && huge_after)
    result.huge_page_share = std::clamp(
        static_cast<double>(*huge_after > *huge_before ? *huge_after - *huge_before : 0) / static_cast<double>(bytes),
        0.0, 1.0);
  if (!advised) result.notes.push_back("huge pages unavailable (madvise failed): 4 KiB pages");

  auto cpus_for = [&](const std::vector<int>& pool, int threads) {
    if (!options.pin_threads || pool.empty()) return std::vector<int>{};
    return std::vector<int>(pool.begin(), pool.begin() + std::min<size_t>(pool.size(), static_cast<size_t>(threads)));
  };
  for (const char* kernel : {"read", "copy"}) {
    for (int t : thread_sweep(max_threads)) {
      result.points.push_back(measure_uncontended(
          [&] { return run_point(kernels, kernel, "device", cpus_for(order, t), t, a, b, bytes, options, result.notes); }));
    }
  }
  if (options.per_cluster && topology.clusters.size() > 1) {
    for (const auto& cluster : topology.clusters) {
      // One thread per physical core of the cluster, in the topology's placement order.
      std::vector<int> pool;
      for (int cpu : order)
        if (std::find(cluster.cpus.begin(), cluster.cpus.end(), cpu) != cluster.cpus.end()) pool.push_back(cpu);
      const int threads = std::max(1, std::min<int>(cluster.n_cores, static_cast<int>(pool.size())));
      const std::string scope = fmt::format("cluster {} {} pkg {}", cluster.rank, cluster.label, cluster.package_id);
      result.points.push_back(measure_uncontended(
          [&] { return run_point(kernels, "read", scope, cpus_for(pool, threads), threads, a, b, bytes, options, result.notes); }));
    }
  }
  summarize_points(result);
  return result;
}

void summarize_points(BandwidthResult& result) {
  result.read_best_gb_per_s = result.read_median_gb_per_s = result.copy_best_gb_per_s = 0;
  for (const auto& p : result.points) {
    if (p.scope != "device" || p.contended()) continue;
    if (p.kernel == "read") {
      result.read_best_gb_per_s = std::max(result.read_best_gb_per_s, p.best_gb_per_s);
      result.read_median_gb_per_s = std::max(result.read_median_gb_per_s, p.median_gb_per_s);
    }
    if (p.kernel == "copy") result.copy_best_gb_per_s = std::max(result.copy_best_gb_per_s, p.best_gb_per_s);
  }
  std::erase_if(result.notes, [](const std::string& n) { return n.rfind(kContendedNote, 0) == 0; });
  if (result.min_cpu_share() < kContendedShare)
    result.notes.push_back(fmt::format("{} the probe's threads got as little as {:.0f}% of the CPU time they wanted; "
                                       "such points are kept out of the ceilings{}",
                                       kContendedNote, result.min_cpu_share() * 100,
                                       result.read_best_gb_per_s > 0
                                           ? ""
                                           : " and no read pass was clean: the bandwidth ceiling is unavailable "
                                             "(edgeprobe probe --refresh on a quiet machine)"));
}

nlohmann::json to_json(const BandwidthResult& r) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : r.points)
    points.push_back({{"kernel", p.kernel},
                      {"scope", p.scope},
                      {"threads", p.threads},
                      {"cpus", p.cpus},
                      {"best_gb_per_s", p.best_gb_per_s},
                      {"median_gb_per_s", p.median_gb_per_s},
                      {"passes", p.passes},
                      {"cpu_share", p.cpu_share},
                      {"contended", p.contended()}});
  return {{"buffer_bytes", r.buffer_bytes},
          {"kernel_isa", r.kernel_isa},
          {"huge_page_share", r.huge_page_share ? nlohmann::json(*r.huge_page_share) : nlohmann::json(nullptr)},
          {"read_best_gb_per_s", r.read_best_gb_per_s},
          {"read_median_gb_per_s", r.read_median_gb_per_s},
          {"copy_best_gb_per_s", r.copy_best_gb_per_s},
          {"points", points},
          {"notes", r.notes}};
}

BandwidthResult bandwidth_from_json(const nlohmann::json& j) {
  BandwidthResult r;
  r.buffer_bytes = j.value("buffer_bytes", uint64_t{0});
  r.kernel_isa = j.value("kernel_isa", "");
  if (j.contains("huge_page_share") && j["huge_page_share"].is_number())
    r.huge_page_share = j["huge_page_share"].get<double>();
  r.read_best_gb_per_s = j.value("read_best_gb_per_s", 0.0);
  r.read_median_gb_per_s = j.value("read_median_gb_per_s", 0.0);
  r.copy_best_gb_per_s = j.value("copy_best_gb_per_s", 0.0);
  for (const auto& p : j.value("points", nlohmann::json::array())) {
    BandwidthPoint x;
    x.kernel = p.value("kernel", "");
    x.scope = p.value("scope", "");
    x.threads = p.value("threads", 0);
    x.cpus = p.value("cpus", std::vector<int>{});
    x.best_gb_per_s = p.value("best_gb_per_s", 0.0);
    x.median_gb_per_s = p.value("median_gb_per_s", 0.0);
    x.passes = p.value("passes", 0);
    x.cpu_share = p.value("cpu_share", 0.0);
    r.points.push_back(x);
  }
  r.notes = j.value("notes", std::vector<std::string>{});
  return r;
}

}  // namespace edgeprobe::probe
