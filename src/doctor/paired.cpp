#include "doctor/paired.h"

#include <algorithm>
#include <cmath>

namespace edgeprobe::doctor {
namespace {

// P(Binomial(n, 1/2) <= k).
double binomial_cdf_half(int n, int k) {
  double sum = 0, term = std::pow(0.5, n);  // C(n, 0) / 2^n
  for (int i = 0; i <= k; ++i) {
    sum += term;
    term = term * (n - i) / (i + 1);
  }
  return sum;
}

}  // namespace

std::optional<PairedEstimate> estimate_pairs(std::vector<double> ratios, double confidence) {
  if (ratios.empty()) return std::nullopt;
  std::sort(ratios.begin(), ratios.end());
  const int n = static_cast<int>(ratios.size());
  PairedEstimate e;
  e.n = n;
  e.median = n % 2 ? ratios[n / 2] : (ratios[n / 2 - 1] + ratios[n / 2]) / 2;
  // [x_k, x_(n-k+1)] (1-based) misses the median when k-1 or fewer ratios lie below it,
  // or above it: coverage 1 - 2 P(B <= k-1). The largest k that still reaches `confidence`.
  int k = 1;
  while (k + 1 <= (n + 1) / 2 && 1 - 2 * binomial_cdf_half(n, k) >= confidence) ++k;
  e.low = ratios[k - 1];
  e.high = ratios[n - k];
  e.coverage = 1 - 2 * binomial_cdf_half(n, k - 1);
  return e;
}

PairVerdict decide(const std::optional<PairedEstimate>& e, const StopRule& rule, bool out_of_time) {
  const bool enough = e && e->n >= rule.min_pairs;
  if (enough && e->low > 1) return PairVerdict::kFaster;
  if (enough && e->high < 1) return PairVerdict::kSlower;
  if (enough && e->low >= 1 / (1 + rule.same_margin) && e->high <= 1 + rule.same_margin) return PairVerdict::kSame;
  if (out_of_time || (e && e->n >= rule.max_pairs)) return PairVerdict::kInconclusive;
  return PairVerdict::kContinue;
}

double speed_variation(const std::vector<double>& s) {
  if (s.size() < 2) return 0;
  const auto [lo, hi] = std::minmax_element(s.begin(), s.end());
  return *hi > 0 ? (*hi - *lo) / *hi : 0;
}


}  // namespace edgeprobe::doctor
