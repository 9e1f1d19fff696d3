#pragma once
// Paired comparisons: how doctor measures "is B faster than A" on a machine whose speed
// moves. A and B run as short children back to back, in ABBA order (A B, B A, A B, ...),
// so that a drift hits both sides of every pair alike; each pair gives one ratio (A's
// seconds over B's: > 1 = B is faster). The estimate is the median of the ratios with a
// distribution-free interval from their order statistics (the sign-test interval for a
// median: it assumes nothing about the noise but that pairs are independent).
#include "result/doctor.h"

#include <optional>
#include <string>
#include <vector>

namespace edgeprobe::doctor {

using result::PairedEstimate;  // the document keeps it (result/doctor.h)

// The narrowest order-statistic interval whose coverage reaches `confidence`; with too
// few pairs for that, [min, max] and its smaller coverage (1 - 2 * 0.5^n).
// nullopt when `ratios` is empty.
std::optional<PairedEstimate> estimate_pairs(std::vector<double> ratios, double confidence = 0.875);

// Where a comparison stands after its pairs so far: continue, faster, slower, the same,
// or inconclusive once out of pairs or time.
using result::PairVerdict;
using result::verdict_name;

struct StopRule {
  int min_pairs = 4;        // [min, max] of 4 ratios covers the median with 87.5 %
  int max_pairs = 10;
  double same_margin = 0.05;  // an interval within [1/1.05, 1.05] is "no difference"
};

// The verdict on `estimate` (nullopt = nothing measured yet); `out_of_time`: the budget
// allows no further pair.
PairVerdict decide(const std::optional<PairedEstimate>& estimate, const StopRule& rule, bool out_of_time);

// How much the machine's speed moved over a set of readings of the reference kernel's
// speed factor (1 = its best): (max - min) / max, 0 when fewer than two.
double speed_variation(const std::vector<double>& speed_factors);

}  // namespace edgeprobe::doctor
