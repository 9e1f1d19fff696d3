#include "core/schedstat.h"

#include <dirent.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace edgeprobe {
namespace {

std::optional<SchedTimes> read_schedstat(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "re");
  if (!f) return std::nullopt;
  unsigned long long run_ns = 0, wait_ns = 0;
  const int got = std::fscanf(f, "%llu %llu", &run_ns, &wait_ns);
  std::fclose(f);
  if (got != 2) return std::nullopt;
  return SchedTimes{static_cast<double>(run_ns) * 1e-9, static_cast<double>(wait_ns) * 1e-9};
}

}  // namespace

std::optional<SchedTimes> thread_sched_times() { return read_schedstat("/proc/thread-self/schedstat"); }

std::map<int, SchedTimes> process_sched_times() {
  std::map<int, SchedTimes> out;
  DIR* dir = opendir("/proc/self/task");
  if (!dir) return out;
  while (const dirent* e = readdir(dir)) {
    const int tid = std::atoi(e->d_name);
    if (tid <= 0) continue;
    if (auto t = read_schedstat(std::string("/proc/self/task/") + e->d_name + "/schedstat")) out[tid] = *t;
  }
  closedir(dir);
  return out;
}

std::optional<double> cpu_share_between(const SchedTimes& before, const SchedTimes& after) {
  const double run = after.run_s - before.run_s, wait = after.wait_s - before.wait_s;
  if (run < 0 || wait < 0 || run + wait <= 0) return std::nullopt;
  return run / (run + wait);
}

std::optional<double> cpu_share_between(const std::map<int, SchedTimes>& before,
                                        const std::map<int, SchedTimes>& after) {
  SchedTimes sum_before, sum_after;
  for (const auto& [tid, b] : before) {
    const auto a = after.find(tid);
    if (a == after.end()) continue;  // a thread that exited: its last figures are gone
    sum_before.run_s += b.run_s;
    sum_before.wait_s += b.wait_s;
    sum_after.run_s += a->second.run_s;
    sum_after.wait_s += a->second.wait_s;
  }
  return cpu_share_between(sum_before, sum_after);
}

}  // namespace edgeprobe
