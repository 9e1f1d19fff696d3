#include "analysis/cpu_time_cost.h"

#include <algorithm>
#include <cmath>

namespace edgeprobe::analysis {

double contention_cost(double threads, double usable_cpus, double other_cpus) {
  if (!(threads > 0) || !(usable_cpus > 0) || !(other_cpus > 0)) return 1;
  const double need = std::min(threads, usable_cpus);
  const double others = std::min(other_cpus, usable_cpus);
  return std::max(1.0, (need + others) / usable_cpus);
}

double lockstep_contention_cost(double threads, double usable_cpus, double other_cpus) {
  const double fair = contention_cost(threads, usable_cpus, other_cpus);
  if (fair <= 1) return 1;
  return std::pow(fair, std::max(1.0, std::min(threads, usable_cpus)));
}

double quota_cost(double threads, double usable_cpus, double quota_cpus) {
  if (!(threads > 0) || !(usable_cpus > 0) || !(quota_cpus > 0)) return 1;
  return std::max(1.0, std::min(threads, usable_cpus) / quota_cpus);
}

double lost_time_cost(double share) { return 1 / (1 - std::clamp(share, 0.0, 0.9)); }

}  // namespace edgeprobe::analysis
