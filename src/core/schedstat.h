#pragma once
#include <map>
#include <optional>

namespace edgeprobe {

// Time on a CPU and time runnable but waiting for one, from schedstat (proc(5), ns). The
// wait is exactly what other threads and processes took from these threads; CPU time over
// wall time, by contrast, also drops when a thread merely sleeps at a barrier waiting for a
// slower sibling, which on an uneven host reads as "disturbed" when nothing competed.
struct SchedTimes {
  double run_s = 0;
  double wait_s = 0;
};

// The calling thread (/proc/thread-self/schedstat); nullopt where the kernel has none.
std::optional<SchedTimes> thread_sched_times();

// Every thread of this process, by tid (/proc/self/task/*/schedstat).
std::map<int, SchedTimes> process_sched_times();

// Share of the CPU time the threads wanted that they got between two readings:
// run / (run + wait), over the threads present in both; nullopt when none ran or waited.
std::optional<double> cpu_share_between(const std::map<int, SchedTimes>& before,
                                        const std::map<int, SchedTimes>& after);
std::optional<double> cpu_share_between(const SchedTimes& before, const SchedTimes& after);

}  // namespace edgeprobe
