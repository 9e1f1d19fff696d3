#include "analysis/stability.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "core/stats.h"

namespace edgeprobe::analysis {
namespace {

double median_of(std::vector<double> values) { return stats::quantile(values, 0.5); }

// Prefix sums of x and x^2 (centred on the series mean to keep the difference of squares
// well conditioned) give any segment's cost in O(1).
class SegmentCost {
 public:
  SegmentCost(std::span<const double> xs, double sigma) : inv_var_(1.0 / (sigma * sigma)) {
    const double centre = stats::mean(xs);
    sum_.assign(xs.size() + 1, 0);
    sum_sq_.assign(xs.size() + 1, 0);
    for (size_t i = 0; i < xs.size(); ++i) {
      const double v = xs[i] - centre;
      sum_[i + 1] = sum_[i] + v;
      sum_sq_[i + 1] = sum_sq_[i] + v * v;
    }
  }
  // Cost of points [begin, end).
  double operator()(size_t begin, size_t end) const {
    const double n = static_cast<double>(end - begin);
    const double s = sum_[end] - sum_[begin];
    const double sq = sum_sq_[end] - sum_sq_[begin];
    return std::max(0.0, sq - s * s / n) * inv_var_;
  }

 private:
  double inv_var_;
  std::vector<double> sum_, sum_sq_;
};

// Returns the segment starts (excluding 0) of the optimal penalised segmentation.
std::vector<size_t> pelt(std::span<const double> xs, double sigma, double penalty, size_t min_segment) {
  const size_t n = xs.size();
  const SegmentCost cost(xs, sigma);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // best[t]: minimal penalised cost of xs[0, t); last[t]: start of its final segment.
  std::vector<double> best(n + 1, kInf);
  std::vector<size_t> last(n + 1, 0);
  best[0] = -penalty;
  std::vector<size_t> candidates;  // the pruned set R of Killick et al.
  for (size_t t = min_segment; t <= n; ++t) {
    // t - min_segment becomes admissible as a last change now (0 at the first step).
    const size_t fresh = t - min_segment;
    if (fresh == 0 || fresh >= min_segment) candidates.push_back(fresh);
    std::vector<double> with_cost(candidates.size());
    for (size_t k = 0; k < candidates.size(); ++k) {
      const size_t tau = candidates[k];
      with_cost[k] = best[tau] + cost(tau, t);
      if (with_cost[k] + penalty < best[t]) {
        best[t] = with_cost[k] + penalty;
        last[t] = tau;
      }
    }
    // Pruning (K = 0 holds for this cost): a tau that cannot beat best[t] now never
    // will, since adding points to a segment never lowers its cost.
    std::vector<size_t> kept;
    kept.reserve(candidates.size());
    for (size_t k = 0; k < candidates.size(); ++k)
      if (with_cost[k] <= best[t]) kept.push_back(candidates[k]);
    candidates.swap(kept);
  }
  std::vector<size_t> starts;
  for (size_t t = n; t > 0 && last[t] > 0; t = last[t]) starts.push_back(last[t]);
  std::reverse(starts.begin(), starts.end());
  return starts;
}

// sd of the points around their own segment's mean, with n - segments degrees of freedom.
std::optional<double> pooled_sd(std::span<const double> xs, const std::vector<size_t>& starts) {
  std::vector<size_t> bounds{0};
  bounds.insert(bounds.end(), starts.begin(), starts.end());
  bounds.push_back(xs.size());
  const size_t segments = bounds.size() - 1;
  if (xs.size() <= segments) return std::nullopt;
  double sq = 0;
  for (size_t k = 0; k + 1 < bounds.size(); ++k) {
    const auto seg = xs.subspan(bounds[k], bounds[k + 1] - bounds[k]);
    const double m = stats::mean(seg);
    for (double v : seg) sq += (v - m) * (v - m);
  }
  return std::sqrt(sq / static_cast<double>(xs.size() - segments));
}

bool all_finite(std::span<const double> xs) {
  return std::all_of(xs.begin(), xs.end(), [](double x) { return std::isfinite(x); });
}

}  // namespace

std::optional<double> coefficient_of_variation(std::span<const double> series) {
  if (series.size() < 2 || !all_finite(series)) return std::nullopt;
  const double m = stats::mean(series);
  if (m == 0) return std::nullopt;
  return stats::stddev(series) / std::fabs(m);
}

std::optional<Drift> drift(std::span<const double> series) {
  if (series.size() < 2 || !all_finite(series)) return std::nullopt;
  Drift d;
  d.window = std::max<size_t>(1, series.size() / 10);
  d.first_mean = stats::mean(series.first(d.window));
  d.last_mean = stats::mean(series.last(d.window));
  if (d.first_mean == 0) return std::nullopt;
  d.ratio = d.last_mean / d.first_mean;
  return d;
}

std::vector<Spike> detect_spikes(std::span<const double> series, const SpikeOptions& options) {
  std::vector<Spike> spikes;
  const size_t k = std::max<size_t>(2, options.neighbours);
  if (series.size() < k + 2 || !all_finite(series)) return spikes;
  const std::optional<double> sigma = robust_sigma(series);
  if (!sigma) return spikes;
  // sd of (x - median of k neighbours) for normal noise: sigma * sqrt(1 + pi / (2k)),
  // pi / (2k) being the large-sample variance factor of a median of k points.
  const double scale = *sigma * std::sqrt(1.0 + std::numbers::pi / (2.0 * static_cast<double>(k)));
  const auto n = static_cast<ptrdiff_t>(series.size());
  const auto kk = static_cast<ptrdiff_t>(k);
  for (ptrdiff_t i = 0; i < n; ++i) {
    // A point is a spike only when it disagrees with both sides: at a level shift it
    // agrees with one of them.
    std::optional<double> best_residual, best_baseline;
    for (const auto& [lo, hi] : {std::pair{std::max<ptrdiff_t>(0, i - kk), i},
                                 std::pair{i + 1, std::min(n, i + 1 + kk)}}) {
      if (hi - lo < 2) continue;  // too few neighbours on this side to judge
      const double base = median_of(std::vector<double>(series.begin() + lo, series.begin() + hi));
      const double r = series[static_cast<size_t>(i)] - base;
      if (!best_residual || std::fabs(r) < std::fabs(*best_residual)) {
        best_residual = r;
        best_baseline = base;
      }
    }
    if (!best_residual) continue;
    const double z = *best_residual / scale;
    if (std::fabs(z) > options.threshold)
      spikes.push_back({static_cast<size_t>(i), series[static_cast<size_t>(i)], *best_baseline, z});
  }
  return spikes;
}

std::optional<double> robust_sigma(std::span<const double> series) {
  if (series.size() < 3 || !all_finite(series)) return std::nullopt;
  std::vector<double> diffs(series.size() - 1);
  for (size_t i = 1; i < series.size(); ++i) diffs[i - 1] = series[i] - series[i - 1];
  const double centre = median_of(diffs);
  std::vector<double> abs_dev(diffs.size());
  for (size_t i = 0; i < diffs.size(); ++i) abs_dev[i] = std::fabs(diffs[i] - centre);
  // A difference of two independent N(0, s^2) points has sd s*sqrt(2); MAD = 0.6745 sd.
  const double sigma = median_of(abs_dev) / (0.6745 * std::sqrt(2.0));
  if (sigma > 0) return sigma;
  return std::nullopt;
}

namespace {

struct Segmentation {
  std::vector<ChangePoint> points;
  std::optional<double> sigma;  // the noise sd the final search used
};

Segmentation segment_series(std::span<const double> series, const ChangePointOptions& options) {
  Segmentation result;
  std::vector<ChangePoint>& points = result.points;
  const size_t min_segment = std::max<size_t>(1, options.min_segment);
  if (series.size() < 2 * min_segment || !all_finite(series)) return result;
  std::vector<double> xs(series.begin(), series.end());
  if (options.remove_spikes) {
    for (const Spike& s : detect_spikes(series, options.spikes)) xs[s.index] = s.baseline;
  }
  std::optional<double> sigma = options.sigma ? options.sigma : robust_sigma(xs);
  if (!sigma || *sigma <= 0) return result;  // no noise scale: a flat series has no changes
  const double penalty = options.penalty.value_or(4.0 * std::log(static_cast<double>(xs.size())));
  std::vector<size_t> starts = pelt(xs, *sigma, penalty, min_segment);
  if (!options.sigma) {
    // The MAD of differences is robust but noisy (37 % efficiency), and an sd guessed
    // 20 % low inflates every cost by half again and invents change points. Re-estimate
    // it as the pooled within-segment sd of the segmentation found, and segment again,
    // until the segmentation stops changing (it settles in one or two rounds).
    for (int round = 0; round < 4; ++round) {
      const std::optional<double> pooled = pooled_sd(xs, starts);
      if (!pooled || *pooled <= 0) break;
      std::vector<size_t> again = pelt(xs, *pooled, penalty, min_segment);
      sigma = pooled;
      if (again == starts) break;
      starts = std::move(again);
    }
  }
  std::vector<size_t> bounds{0};
  bounds.insert(bounds.end(), starts.begin(), starts.end());
  bounds.push_back(xs.size());
  auto segment_mean = [&](size_t b, size_t e) {
    return stats::mean(std::span<const double>(xs).subspan(b, e - b));
  };
  for (size_t k = 1; k + 1 < bounds.size(); ++k) {
    points.push_back({bounds[k], segment_mean(bounds[k - 1], bounds[k]), segment_mean(bounds[k], bounds[k + 1])});
  }
  result.sigma = sigma;
  return result;
}

}  // namespace

std::vector<ChangePoint> detect_change_points(std::span<const double> series,
                                              const ChangePointOptions& options) {
  return segment_series(series, options).points;
}

StabilityReport analyse_stability(std::span<const double> series, const ChangePointOptions& options) {
  StabilityReport r;
  r.n = series.size();
  if (series.empty()) return r;
  r.mean = stats::mean(series);
  r.median = stats::quantile(series, 0.5);
  r.cv = coefficient_of_variation(series);
  r.drift = drift(series);
  r.spikes = detect_spikes(series, options.spikes);
  Segmentation seg = segment_series(series, options);
  r.change_points = std::move(seg.points);
  r.sigma = seg.sigma;
  return r;
}

nlohmann::json to_json(const StabilityReport& r) {
  nlohmann::json j;
  j["n"] = r.n;
  j["mean"] = r.mean;
  j["median"] = r.median;
  j["cv"] = r.cv ? nlohmann::json(*r.cv) : nlohmann::json(nullptr);
  if (r.drift) {
    j["drift"] = {{"window", r.drift->window},
                  {"first_mean", r.drift->first_mean},
                  {"last_mean", r.drift->last_mean},
                  {"ratio", r.drift->ratio}};
  } else {
    j["drift"] = nullptr;
  }
  j["change_points"] = nlohmann::json::array();
  for (const ChangePoint& c : r.change_points)
    j["change_points"].push_back({{"index", c.index},
                                  {"mean_before", c.mean_before},
                                  {"mean_after", c.mean_after},
                                  {"relative_change", c.relative_change()}});
  j["spikes"] = nlohmann::json::array();
  for (const Spike& s : r.spikes)
    j["spikes"].push_back(
        {{"index", s.index}, {"value", s.value}, {"baseline", s.baseline}, {"robust_z", s.robust_z}});
  j["sigma"] = r.sigma ? nlohmann::json(*r.sigma) : nlohmann::json(nullptr);
  j["method"] = "PELT (Killick et al. 2012), normal mean-change cost, penalty 4 log n unless set; "
                "spikes: robust z > 3.5 against the median of 3 neighbours on the closer side";
  return j;
}

}  // namespace edgeprobe::analysis
