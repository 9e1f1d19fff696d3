// stream_ref: a STREAM-like memory bandwidth reference, written for edgeprobe's
// bench/bandwidth-check.sh and independent of edgeprobe's own kernels. It follows
// McCalpin's STREAM conventions (https://www.cs.virginia.edu/stream/ref.html): double
// arrays, Copy/Scale/Add/Triad, the first of NTIMES repetitions not counted, the best
// repetition reported, bytes counted as the kernel names them (no write-allocate). A Sum
// kernel (read only, not part of STREAM) stands next to edgeprobe's read kernel. Not
// "STREAM" results: the code is not McCalpin's. Built -O3 -march=native -ffast-math
// (bench/CMakeLists.txt): plain loops that the compiler vectorizes for this very CPU, the
// strongest reference a user's own code would be.
//
// usage: stream_ref --bytes B [--threads N] [--reps R] [--no-pin]
//   B: bytes per array (edgeprobe's copy moves B/2 onto B/2; pass its buffer_bytes / 2).
//   Prints one JSON object per kernel and thread count on stdout.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Args {
  size_t bytes = 256u << 20;
  int threads = 1;
  int reps = 10;
  bool pin = true;
};

double* alloc_array(size_t n) {
  void* p = std::aligned_alloc(4096, n * sizeof(double));
  if (!p) {
    std::fprintf(stderr, "stream_ref: cannot allocate %zu MiB\n", (n * sizeof(double)) >> 20);
    std::exit(3);
  }
  return static_cast<double*>(p);
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

volatile double g_sink = 0;

// Runs body(begin, end, thread) on `threads` pinned threads per repetition; returns the
// best time of reps 1..R-1.
double best_time(int threads, int reps, size_t n, bool pin,
                 const std::function<void(size_t, size_t, int)>& body) {
  std::barrier go(threads + 1), done(threads + 1);
  std::atomic<bool> stop{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      if (pin) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(t % static_cast<int>(std::thread::hardware_concurrency()), &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
      }
      const size_t begin = n * static_cast<size_t>(t) / static_cast<size_t>(threads);
      const size_t end = n * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
      for (;;) {
        go.arrive_and_wait();
        if (stop) break;
        body(begin, end, t);
        done.arrive_and_wait();
      }
    });
  }
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now();
    go.arrive_and_wait();
    done.arrive_and_wait();
    const double dt = now() - t0;
    if (r > 0) best = std::min(best, dt);
  }
  stop = true;
  go.arrive_and_wait();
  for (auto& th : pool) th.join();
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "stream_ref: %s needs a value\n", k.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (k == "--bytes") a.bytes = std::strtoull(next(), nullptr, 10);
    else if (k == "--threads") a.threads = std::atoi(next());
    else if (k == "--reps") a.reps = std::max(2, std::atoi(next()));
    else if (k == "--no-pin") a.pin = false;
    else {
      std::fprintf(stderr, "usage: stream_ref --bytes B [--threads N] [--reps R] [--no-pin]\n");
      return 2;
    }
  }
  const size_t n = a.bytes / sizeof(double);
  double* x = alloc_array(n);
  double* y = alloc_array(n);
  double* z = alloc_array(n);
  // First touch by the threads that will use each part (NUMA placement, no page faults later).
  best_time(a.threads, 2, n, a.pin, [&](size_t b, size_t e, int) {
    for (size_t i = b; i < e; ++i) {
      x[i] = 1.0;
      y[i] = 2.0;
      z[i] = 0.0;
    }
  });
  const double s = 3.0;
  const double array_bytes = static_cast<double>(n * sizeof(double));
  struct Kernel {
    const char* name;
    double arrays;  // bytes moved per repetition = arrays x array_bytes
    std::function<void(size_t, size_t, int)> body;
  };
  std::vector<double> partial(static_cast<size_t>(a.threads) * 8);
  const std::vector<Kernel> kernels = {
      {"copy", 2, [&](size_t b, size_t e, int) { for (size_t i = b; i < e; ++i) z[i] = x[i]; }},
      {"scale", 2, [&](size_t b, size_t e, int) { for (size_t i = b; i < e; ++i) y[i] = s * z[i]; }},
      {"add", 3, [&](size_t b, size_t e, int) { for (size_t i = b; i < e; ++i) z[i] = x[i] + y[i]; }},
      {"triad", 3, [&](size_t b, size_t e, int) { for (size_t i = b; i < e; ++i) x[i] = y[i] + s * z[i]; }},
      // Read only: both x and y, so it streams as many bytes as copy does.
      {"sum", 2, [&](size_t b, size_t e, int t) {
         double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
         size_t i = b;
         for (; i + 4 <= e; i += 4) {
           s0 += x[i] + y[i];
           s1 += x[i + 1] + y[i + 1];
           s2 += x[i + 2] + y[i + 2];
           s3 += x[i + 3] + y[i + 3];
         }
         for (; i < e; ++i) s0 += x[i] + y[i];
         partial[static_cast<size_t>(t) * 8] = s0 + s1 + s2 + s3;  // one cache line per thread
       }},
  };
  for (int t = 1; t <= a.threads; ++t) {
    for (const auto& k : kernels) {
      const double dt = best_time(t, a.reps, n, a.pin, k.body);
      std::printf("{\"kernel\": \"%s\", \"threads\": %d, \"array_bytes\": %zu, \"best_gb_per_s\": %.3f}\n", k.name, t,
                  n * sizeof(double), k.arrays * array_bytes / dt / 1e9);
      std::fflush(stdout);
    }
  }
  for (double v : partial) g_sink = g_sink + v;
  std::free(x);
  std::free(y);
  std::free(z);
  return 0;
}
