#pragma once
#include <chrono>
#include <thread>
#include <utility>

namespace edgeprobe::probe {

// A ceiling belongs to the device, not to the machine at a busy moment. A figure whose
// threads got less than this share of the CPU time they wanted (other processes, steal or a
// cgroup quota took the rest) is measured again; if it stays contended it is kept for the
// record, marked, and never used as a ceiling: a low ceiling would make every efficiency
// read high (issue 24 saw 6166 % from a kernel point probed at 24 % of the CPU).
inline constexpr double kContendedShare = 0.9;
inline constexpr int kContendedRetries = 2;

// 0 means the share was not recorded (caches written before it was): not judged.
inline bool is_contended(double cpu_share) { return cpu_share > 0 && cpu_share < kContendedShare; }

// Runs `measure` until its point is not contended, at most 1 + kContendedRetries times with a
// pause between tries (a neighbour's burst often passes), and returns the least contended.
template <class Measure>
auto measure_uncontended(Measure&& measure) {
  auto best = measure();
  for (int i = 0; i < kContendedRetries && is_contended(best.cpu_share); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto again = measure();
    if (again.cpu_share > best.cpu_share) best = std::move(again);
  }
  return best;
}

}  // namespace edgeprobe::probe
