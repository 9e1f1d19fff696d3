// stream_ab: edgeprobe's read kernel (src/probe/bandwidth_kernels.cpp, dispatched as the
// probe does, on a huge-page buffer as the probe allocates it) against stream_ref's sum loop
// (this file, built -O3 -march=native -ffast-math, on plain arrays), alternating pass by
// pass inside one process. Two programs run one after the other see different moments of a
// noisy host; adjacent passes see nearly the same one, so the paired ratios here say more
// about the kernels than whole-run comparisons can (bench/bandwidth-check.sh runs both).
//
// usage: stream_ab [--bytes B] [--threads N] [--passes P] [--isa NAME]
//   B: bytes each side reads per pass (default 1 GiB); passes per side per thread count.
//   Prints one JSON object per thread count 1..N on stdout.
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "probe/bandwidth_kernels.h"

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void* alloc_or_exit(size_t align, size_t bytes) {
  void* p = std::aligned_alloc(align, bytes);
  if (!p) {
    std::fprintf(stderr, "stream_ab: cannot allocate %zu MiB\n", bytes >> 20);
    std::exit(3);
  }
  return p;
}

// stream_ref's sum, verbatim in effect: both arrays, four accumulators.
double ref_sum(const double* x, const double* y, size_t b, size_t e) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = b;
  for (; i + 4 <= e; i += 4) {
    s0 += x[i] + y[i];
    s1 += x[i + 1] + y[i + 1];
    s2 += x[i + 2] + y[i + 2];
    s3 += x[i + 3] + y[i + 3];
  }
  for (; i < e; ++i) s0 += x[i] + y[i];
  return s0 + s1 + s2 + s3;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::atomic<uint64_t> g_sink{0};  // keeps the sums alive

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = 1ull << 30;
  int threads = 1, passes = 40;
  std::string isa;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "usage: stream_ab [--bytes B] [--threads N] [--passes P] [--isa NAME]\n");
      return 2;
    }
    const char* v = argv[++i];
    if (k == "--bytes") bytes = std::strtoull(v, nullptr, 10);
    else if (k == "--threads") threads = std::max(1, std::atoi(v));
    else if (k == "--passes") passes = std::max(2, std::atoi(v));
    else if (k == "--isa") isa = v;
    else {
      std::fprintf(stderr, "stream_ab: unknown argument %s\n", k.c_str());
      return 2;
    }
  }
  edgeprobe::probe::StreamKernels kernels;
  try {
    kernels = edgeprobe::probe::stream_kernels(isa);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "stream_ab: %s\n", e.what());
    return 2;
  }
  const size_t quantum = edgeprobe::probe::kStreamBlockBytes * 64;
  bytes = std::max(quantum, bytes / quantum * quantum);
  auto* probe_buf = static_cast<unsigned char*>(alloc_or_exit(2u << 20, bytes));
  madvise(probe_buf, bytes, MADV_HUGEPAGE);  // as the probe does; the reference does not
  const size_t n = bytes / 2 / sizeof(double);
  auto* x = static_cast<double*>(alloc_or_exit(4096, n * sizeof(double)));
  auto* y = static_cast<double*>(alloc_or_exit(4096, n * sizeof(double)));
  std::memset(probe_buf, 1, bytes);
  for (size_t i = 0; i < n; ++i) x[i] = 1.0, y[i] = 2.0;

  for (int t = 1; t <= threads; ++t) {
    std::barrier go(t + 1), done(t + 1);
    std::atomic<int> which{0};  // 0 probe, 1 reference, 2 stop
    std::vector<std::thread> pool;
    for (int k = 0; k < t; ++k) {
      pool.emplace_back([&, k] {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(k % static_cast<int>(std::thread::hardware_concurrency()), &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
        const size_t slice = bytes / static_cast<size_t>(t) / edgeprobe::probe::kStreamBlockBytes *
                             edgeprobe::probe::kStreamBlockBytes;
        for (;;) {
          go.arrive_and_wait();
          if (which == 2) break;
          if (which == 0)
            g_sink += kernels.read(probe_buf + slice * static_cast<size_t>(k), slice);
          else
            g_sink += static_cast<uint64_t>(ref_sum(x, y, n * static_cast<size_t>(k) / static_cast<size_t>(t),
                                                    n * static_cast<size_t>(k + 1) / static_cast<size_t>(t)));
          done.arrive_and_wait();
        }
      });
    }
    auto pass = [&](int side) {
      which = side;
      const double t0 = now();
      go.arrive_and_wait();
      done.arrive_and_wait();
      return static_cast<double>(bytes) / (now() - t0) / 1e9;
    };
    pass(0), pass(1);  // warm-up: TLBs, page tables
    std::vector<double> probe, ref, ratio;
    for (int p = 0; p < passes; ++p) {
      // ABBA order, so neither side always runs second
      const bool probe_first = p % 2 == 0;
      const double a = pass(probe_first ? 0 : 1), b = pass(probe_first ? 1 : 0);
      probe.push_back(probe_first ? a : b);
      ref.push_back(probe_first ? b : a);
      ratio.push_back(probe.back() / ref.back());
    }
    which = 2;
    go.arrive_and_wait();
    for (auto& th : pool) th.join();
    const double pb = *std::max_element(probe.begin(), probe.end());
    const double rb = *std::max_element(ref.begin(), ref.end());
    std::printf(
        "{\"threads\": %d, \"isa\": \"%s\", \"passes\": %d, \"probe_best_gb_per_s\": %.3f, "
        "\"ref_best_gb_per_s\": %.3f, \"best_ratio\": %.4f, \"paired_median_ratio\": %.4f, "
        "\"probe_median_gb_per_s\": %.3f, \"ref_median_gb_per_s\": %.3f}\n",
        t, kernels.isa.c_str(), passes, pb, rb, pb / rb, median(ratio), median(probe), median(ref));
    std::fflush(stdout);
  }
  std::free(probe_buf);
  std::free(x);
  std::free(y);
  return 0;
}
