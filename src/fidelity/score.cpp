#include "fidelity/score.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace edgeprobe::fidelity {
namespace {

// The largest logit and the first index that holds it.
std::pair<float, int> max_first(const float* row, int n) {
  float best = row[0];
  int at = 0;
  for (int i = 1; i < n; ++i) {
    if (row[i] > best) {
      best = row[i];
      at = i;
    }
  }
  return {best, at};
}

// ln(sum exp(row - max)): float exponentials summed in double.
double log_sum_exp(const float* row, int n, float max) {
  double sum = 0;
  for (int i = 0; i < n; ++i) sum += std::exp(row[i] - max);
  return std::log(sum);
}

struct Moments {
  double sum = 0, sum2 = 0;
  void add(double v) {
    sum += v;
    sum2 += v * v;
  }
};

// llama-perplexity's mean_and_uncertainty.
Estimate mean_err(const Moments& m, int64_t n) {
  if (n < 1) return {};
  const double mean = m.sum / static_cast<double>(n);
  const double var = m.sum2 / static_cast<double>(n) - mean * mean;
  return {mean, var > 0 && n > 10 ? std::sqrt(var / static_cast<double>(n - 1)) : 0.0};
}

}  // namespace

PositionScore score_full(const float* ref, const float* model, int n_vocab, int32_t next) {
  const auto [mr, top_r] = max_first(ref, n_vocab);
  const auto [mq, top_q] = max_first(model, n_vocab);
  // KL = sum P_i (r_i - q_i) + (lse_q - lse_r), with lse the full log-normalizers: one pass
  // for P's weights, no log-probability row kept.
  double sr = 0, weighted = 0;
  for (int i = 0; i < n_vocab; ++i) {
    const double e = std::exp(ref[i] - mr);
    sr += e;
    weighted += e * (static_cast<double>(ref[i]) - model[i]);
  }
  const double lse_r = mr + std::log(sr);
  const double lse_q = mq + log_sum_exp(model, n_vocab, mq);
  PositionScore s;
  s.kld = weighted / sr + (lse_q - lse_r);
  s.kld_sampled = s.kld;
  s.same_top = top_r == top_q;
  s.nll = lse_q - model[next];
  s.nll_ref = lse_r - ref[next];
  return s;
}

CompactRow compact_row(const float* ref, int n_vocab, int top_k, int32_t next, int samples, uint64_t seed) {
  const int k = std::clamp(top_k, 1, n_vocab);
  const auto [mr, top] = max_first(ref, n_vocab);
  (void)top;
  const double lse = mr + log_sum_exp(ref, n_vocab, mr);
  std::vector<int32_t> order(static_cast<size_t>(n_vocab));
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [ref](int32_t a, int32_t b) { return ref[a] > ref[b] || (ref[a] == ref[b] && a < b); });
  CompactRow row;
  row.ids.assign(order.begin(), order.begin() + k);
  row.logp.reserve(static_cast<size_t>(k));
  for (const int32_t id : row.ids) row.logp.push_back(static_cast<float>(ref[id] - lse));
  double rest = 0;
  for (auto it = order.begin() + k; it != order.end(); ++it) rest += std::exp(ref[*it] - lse);
  row.rest = static_cast<float>(std::min(1.0, rest));
  row.next_logp = static_cast<float>(ref[next] - lse);
  if (samples > 0 && rest > 0 && k < n_vocab) {
    // Sorted uniforms over [0, rest), walked once along the rest's cumulative mass.
    uint64_t state = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    auto next_u = [&state] {  // splitmix64
      uint64_t z = (state += 0x9E3779B97F4A7C15ull);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
    };
    std::vector<double> u(static_cast<size_t>(samples));
    for (auto& x : u) x = next_u() * rest;
    std::sort(u.begin(), u.end());
    double cum = 0;
    size_t j = 0;
    auto it = order.begin() + k;
    int32_t last = *it;
    for (; it != order.end() && j < u.size(); ++it) {
      cum += std::exp(ref[*it] - lse);
      last = *it;
      while (j < u.size() && u[j] < cum) {
        row.sample_ids.push_back(*it);
        row.sample_logp.push_back(static_cast<float>(ref[*it] - lse));
        ++j;
      }
    }
    for (; j < u.size(); ++j) {  // rounding left the last uniforms past the sum
      row.sample_ids.push_back(last);
      row.sample_logp.push_back(static_cast<float>(ref[last] - lse));
    }
  }
  return row;
}

PositionScore score_compact(const CompactRow& ref, const float* model, int n_vocab, int32_t next) {
  const auto [mq, top_q] = max_first(model, n_vocab);
  const double lse_q = mq + log_sum_exp(model, n_vocab, mq);
  PositionScore s;
  double kld = 0;
  for (size_t j = 0; j < ref.ids.size(); ++j) {
    const double lq = model[ref.ids[j]] - lse_q;
    kld += std::exp(static_cast<double>(ref.logp[j])) * (ref.logp[j] - lq);
  }
  double sampled = kld;
  if (ref.rest > 0) {
    // Q(rest) summed over the tokens outside the reference's top k, not 1 - Q(top k): a
    // rest of 1e-9 would be lost in that difference.
    double q_rest = 0;
    std::vector<char> in_top(static_cast<size_t>(n_vocab), 0);
    for (const int32_t id : ref.ids) in_top[static_cast<size_t>(id)] = 1;
    for (int i = 0; i < n_vocab; ++i)
      if (!in_top[static_cast<size_t>(i)]) q_rest += std::exp(model[i] - lse_q);
    q_rest = std::max(q_rest, 1e-300);
    kld += ref.rest * (std::log(static_cast<double>(ref.rest)) - std::log(q_rest));
    if (ref.sample_ids.empty()) {
      sampled = kld;
    } else {
      // P(rest) E_{i ~ P|rest}[ln P_i - ln Q_i], the expectation by the samples' mean.
      double mean = 0;
      for (size_t j = 0; j < ref.sample_ids.size(); ++j)
        mean += ref.sample_logp[j] - (model[ref.sample_ids[j]] - lse_q);
      sampled += ref.rest * mean / static_cast<double>(ref.sample_ids.size());
    }
  }
  s.kld = kld;
  s.kld_sampled = sampled;
  s.same_top = !ref.ids.empty() && ref.ids[0] == top_q;
  s.nll = lse_q - model[next];
  s.nll_ref = -static_cast<double>(ref.next_logp);
  return s;
}

double percentile(const std::vector<double>& sorted, double fraction) {
  if (sorted.empty()) return 0;
  if (fraction <= 0) return sorted.front();
  if (fraction >= 1) return sorted.back();
  const double p = fraction * static_cast<double>(sorted.size() - 1);
  const auto ip = static_cast<size_t>(p);
  const double f = p - static_cast<double>(ip);
  return (1 - f) * sorted[ip] + f * sorted[std::min(ip + 1, sorted.size() - 1)];
}

Summary summarize(const std::vector<PositionScore>& scores) {
  Summary out;
  const auto n = static_cast<int64_t>(scores.size());
  out.positions = n;
  if (n == 0) return out;
  Moments kld, kld_sampled, nll, nll_ref, dp;
  double nll_cross = 0;
  int64_t same = 0;
  std::vector<double> klds;
  klds.reserve(scores.size());
  for (const auto& s : scores) {
    kld.add(s.kld);
    kld_sampled.add(s.kld_sampled);
    nll.add(s.nll);
    nll_ref.add(s.nll_ref);
    nll_cross += s.nll * s.nll_ref;
    dp.add(std::exp(-s.nll) - std::exp(-s.nll_ref));
    same += s.same_top ? 1 : 0;
    klds.push_back(s.kld);
  }
  std::sort(klds.begin(), klds.end());
  const double dn = static_cast<double>(n);
  out.kld = mean_err(kld, n);
  out.kld_sampled = mean_err(kld_sampled, n);
  out.kld_median = klds.size() % 2 == 0 ? 0.5 * (klds[klds.size() / 2] + klds[klds.size() / 2 - 1])
                                        : klds[klds.size() / 2];
  out.kld_p99 = percentile(klds, 0.99);
  out.kld_max = klds.back();
  const double p = static_cast<double>(same) / dn;
  out.same_top = {p, n > 1 ? std::sqrt(p * (1 - p) / (dn - 1)) : 0.0};
  out.delta_p = mean_err(dp, n);
  const Estimate l = mean_err(nll, n), lr = mean_err(nll_ref, n);
  const double cov = n < 10 ? 0.0 : (nll_cross / dn - l.value * lr.value) / (dn - 1);
  out.ln_ppl_ratio = {l.value - lr.value,
                      std::sqrt(std::max(0.0, l.err * l.err + lr.err * lr.err - 2 * cov))};
  out.ppl = {std::exp(l.value), std::exp(l.value) * l.err};
  out.ppl_ref = {std::exp(lr.value), std::exp(lr.value) * lr.err};
  return out;
}

}  // namespace edgeprobe::fidelity
