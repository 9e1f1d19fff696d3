// What a ratio B/A means for a person: the verdict rule (minimum samples, significance,
// interval, practical threshold) of analysis/compare.h.
#include <fmt/format.h>

#include <cmath>
#include <string>

#include "analysis/compare.h"

namespace edgeprobe::analysis {

namespace {
// +1: larger is better (throughput), -1: smaller is better (latency, memory), 0: unknown.
int better_direction(const std::string& metric) {
  if (metric.find("per_s") != std::string::npos) return 1;
  if (metric.ends_with("_ms") || metric.ends_with("_bytes") || metric.ends_with("_j")) return -1;
  return 0;
}
}  // namespace

double significance_level(double confidence) {
  // Rounded: 1 - 0.95 is 0.05000000000000004 in binary, which would let p = 0.05 pass.
  return std::round((1 - confidence) * 1e9) / 1e9;
}

double practical_threshold(const std::string& metric) {
  if (metric.find("per_s") != std::string::npos || metric.ends_with("_ms")) return 0.03;
  if (metric.ends_with("_bytes")) return 0.05;
  if (metric.ends_with("_j")) return 0.10;
  return 0.05;
}

const char* verdict_kind_name(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::kTooFewSamples:
      return "too_few_samples";
    case VerdictKind::kNoDifferenceShown:
      return "no_difference_shown";
    case VerdictKind::kNoPracticalDifference:
      return "no_practical_difference";
    case VerdictKind::kBetter:
      return "better";
    case VerdictKind::kWorse:
      return "worse";
    case VerdictKind::kHigher:
      return "higher";
    case VerdictKind::kLower:
      return "lower";
  }
  return "";
}

Verdict judge(const std::string& metric, const RatioEstimate& e) {
  const std::string n = fmt::format("n={}/{}", e.n_a, e.n_b);
  if (e.n_a < kMinSamplesPerSide || e.n_b < kMinSamplesPerSide)
    return {VerdictKind::kTooFewSamples,
            fmt::format("no difference shown ({}; a verdict needs {} per side)", n, kMinSamplesPerSide),
            fmt::format("fewer than {} samples on a side: the exact test cannot reach p < {:g}",
                        kMinSamplesPerSide, significance_level(e.confidence))};
  const double alpha = significance_level(e.confidence);
  if (!(e.p_value < alpha))
    return {VerdictKind::kNoDifferenceShown, fmt::format("no difference shown ({})", n),
            fmt::format("p = {:.3g}, not below {:g}", e.p_value, alpha)};
  if (!e.ci || e.ci->contains(1.0))
    return {VerdictKind::kNoDifferenceShown, fmt::format("no difference shown ({})", n),
            fmt::format("the {:.0f}% interval of B/A holds 1", 100 * e.confidence)};
  const double threshold = practical_threshold(metric);
  // A hair of slack so that exactly ±threshold (1.03 from 103/100) counts as within it.
  if (std::fabs(e.ratio - 1) <= threshold + 1e-9)
    return {VerdictKind::kNoPracticalDifference,
            fmt::format("no practical difference (within ±{:g} %)", 100 * threshold),
            fmt::format("B/A = {:.3f} is within ±{:g} % of 1", e.ratio, 100 * threshold)};
  const int dir = better_direction(metric);
  if (dir == 0)
    return e.ratio > 1 ? Verdict{VerdictKind::kHigher, "B higher", ""}
                       : Verdict{VerdictKind::kLower, "B lower", ""};
  return (e.ratio > 1) == (dir > 0) ? Verdict{VerdictKind::kBetter, "B better", ""}
                                    : Verdict{VerdictKind::kWorse, "B worse", ""};
}

}  // namespace edgeprobe::analysis
