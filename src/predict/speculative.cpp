#include "predict/speculative.h"

#include <cmath>

namespace edgeprobe::predict {

double expected_tokens(double alpha, int k) {
  if (k <= 0 || alpha <= 0) return 1;
  if (alpha >= 1) return k + 1;
  return (1 - std::pow(alpha, k + 1)) / (1 - alpha);
}

double expected_tokens(const std::vector<double>& position_rates) {
  double e = 1;
  for (double r : position_rates) e += r;
  return e;
}

double speed_up(double expected, int k, const SpecCosts& c) {
  const double step_ms = k * c.draft_token_ms + c.verify_ms;
  if (c.target_token_ms <= 0 || step_ms <= 0) return 0;
  return expected * c.target_token_ms / step_ms;
}

double acceptance_for_tokens(double expected, int k) {
  if (k <= 0 || expected <= 1) return 0;
  if (expected >= k + 1) return 1;
  double lo = 0, hi = 1;
  for (int i = 0; i < 60; ++i) {  // bisection: E is increasing in alpha; 60 halvings exhaust a double
    const double mid = (lo + hi) / 2;
    (expected_tokens(mid, k) < expected ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

std::optional<double> break_even_acceptance(int k, const SpecCosts& c) {
  if (k <= 0 || c.target_token_ms <= 0) return std::nullopt;
  // Speed-up 1 where E(k) = the step's cost in target steps; E grows from 1 at alpha 0 to
  // k + 1 at alpha 1, so the root is in between or there is none.
  const double needed = (k * c.draft_token_ms + c.verify_ms) / c.target_token_ms;
  if (needed > k + 1) return std::nullopt;
  return acceptance_for_tokens(needed, k);
}

}  // namespace edgeprobe::predict
