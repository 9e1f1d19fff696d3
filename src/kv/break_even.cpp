#include "kv/break_even.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"

namespace edgeprobe::kv {
namespace {

double link_bytes_per_ms(const DisaggInputs& in) { return in.link_mbit_s * 1e6 / 8 / 1e3; }

void check(const DisaggInputs& in) {
  if (!(in.local_tokens_per_s > 0) || !(in.remote_tokens_per_s > 0))
    throw_bad_input("prefill rates must be positive (got local {}, remote {} tokens/s)",
                    in.local_tokens_per_s, in.remote_tokens_per_s);
  if (!(in.link_mbit_s > 0))
    throw_bad_input("the link rate must be positive (got {} Mbit/s)", in.link_mbit_s);
  if (!(in.kv_bytes_per_token > 0))
    throw_bad_input("KV bytes per token must be positive (got {})", in.kv_bytes_per_token);
  if (in.fixed_ms < 0 || in.per_token_overhead_ms < 0)
    throw_bad_input("overheads cannot be negative (got {} ms fixed, {} ms per token)", in.fixed_ms,
                    in.per_token_overhead_ms);
  if (in.local_ms_per_token_squared < 0 || in.remote_ms_per_token_squared < 0)
    throw_bad_input("attention terms cannot be negative (got {} and {} ms per token^2)",
                    in.local_ms_per_token_squared, in.remote_ms_per_token_squared);
}

// Least squares y = a + b x; nullopt with fewer than two distinct x.
std::optional<std::pair<double, double>> fit_line(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  const double den = n * sxx - sx * sx;
  if (x.size() < 2 || den <= 1e-9 * n * sxx) return std::nullopt;
  const double b = (n * sxy - sx * sy) / den;
  return std::make_pair((sy - b * sx) / n, b);
}

// Least squares y = a + b x + c x^2 (normal equations on x scaled to [0, 1], which keeps
// them well conditioned for prompt lengths in the thousands); nullopt with fewer than three
// distinct x.
struct Quadratic {
  double a, b, c;
};
std::optional<Quadratic> fit_quadratic(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() < 3) return std::nullopt;
  const double scale = *std::max_element(x.begin(), x.end());
  if (!(scale > 0)) return std::nullopt;
  double s[5] = {}, t[3] = {};  // sums of u^k and of y u^k
  for (size_t i = 0; i < x.size(); ++i) {
    const double u = x[i] / scale;
    double p = 1;
    for (int k = 0; k < 5; ++k, p *= u) {
      s[k] += p;
      if (k < 3) t[k] += y[i] * p;
    }
  }
  // Cramer's rule on [[s0 s1 s2] [s1 s2 s3] [s2 s3 s4]] (a b c)' = t.
  auto det3 = [](double m00, double m01, double m02, double m10, double m11, double m12, double m20, double m21,
                 double m22) {
    return m00 * (m11 * m22 - m12 * m21) - m01 * (m10 * m22 - m12 * m20) + m02 * (m10 * m21 - m11 * m20);
  };
  const double d = det3(s[0], s[1], s[2], s[1], s[2], s[3], s[2], s[3], s[4]);
  if (!(std::abs(d) > 1e-12 * s[0] * s[2] * s[4])) return std::nullopt;
  const double a = det3(t[0], s[1], s[2], t[1], s[2], s[3], t[2], s[3], s[4]) / d;
  const double b = det3(s[0], t[0], s[2], s[1], t[1], s[3], s[2], t[2], s[4]) / d;
  const double c = det3(s[0], s[1], t[0], s[1], s[2], t[1], s[2], s[3], t[2]) / d;
  return Quadratic{a, b / scale, c / (scale * scale)};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

double local_ttft_ms(const DisaggInputs& in, double n) {
  return in.local_fixed_ms + n / in.local_tokens_per_s * 1e3 + in.local_ms_per_token_squared * n * n;
}

double remote_ttft_ms(const DisaggInputs& in, double n) {
  return in.fixed_ms + n / in.remote_tokens_per_s * 1e3 + in.remote_ms_per_token_squared * n * n +
         n * in.kv_bytes_per_token / link_bytes_per_ms(in) + n * in.per_token_overhead_ms;
}

BreakEven break_even(const DisaggInputs& in) {
  check(in);
  // Milliseconds saved per token by prefilling remotely, before paying for the link.
  const double gain_ms =
      1e3 / in.local_tokens_per_s - 1e3 / in.remote_tokens_per_s - in.per_token_overhead_ms;
  const double link_ms = in.kv_bytes_per_token / link_bytes_per_ms(in);
  BreakEven out;
  if (gain_ms > 0) out.min_link_mbit = in.kv_bytes_per_token / gain_ms * 8 / 1e3;
  // remote - local = A + B n + C n^2; its first root above 0, written 2A / (-B + sqrt(B^2 -
  // 4AC)) so that C -> 0 gives the linear A / -B without cancelling (and no root when the
  // denominator is not positive: B >= 0 without attention, or the parabola never dips).
  const double a = std::max(0.0, in.fixed_ms - in.local_fixed_ms);
  const double b = link_ms - gain_ms;
  const double c = in.remote_ms_per_token_squared - in.local_ms_per_token_squared;
  const double disc = b * b - 4 * a * c;
  if (disc >= 0 && -b + std::sqrt(disc) > 0) out.prompt_tokens = 2 * a / (-b + std::sqrt(disc));
  return out;
}

DisaggInputs fit_inputs(const std::vector<nlohmann::json>& records) {
  // Each prompt length's repetitions, reduced to medians: a host's slow moment hits one
  // repetition, not the lines fitted through the lengths.
  struct Length {
    std::vector<double> local_ms, remote_ms, ttft_ms;
  };
  std::map<double, Length> lengths;
  double tokens = 0, overhead_ms = 0, link_bytes = 0, link_ms = 0;
  std::vector<double> bytes_per_token;
  for (const auto& r : records) {
    if (r.value("mode", "") != "remote" || !r.contains("local_prefill_ms")) continue;
    const double n = r.value("tokens_sent", 0.0);
    if (n <= 0) continue;
    tokens += n;
    auto& at = lengths[n];
    at.local_ms.push_back(r.value("local_prefill_ms", 0.0));
    at.remote_ms.push_back(r.value("remote_prefill_ms", 0.0));
    at.ttft_ms.push_back(r.value("ttft_ms", 0.0));
    overhead_ms += r.value("serialize_ms", 0.0) + r.value("restore_ms", 0.0);
    bytes_per_token.push_back(r.value("kv_bytes_per_token", 0.0));
    const double bytes = r.value("state_bytes", 0.0), mbit = r.value("link_mbit_s", 0.0);
    if (bytes > 0 && mbit > 0) {
      link_bytes += bytes;
      link_ms += bytes * 8 / 1e3 / mbit;
    }
  }
  if (tokens <= 0)
    throw_bad_input(
        "no remote prefill with a local one beside it: measure with --prefill-remote and "
        "--prefill-compare-local, or give the rates as flags");
  std::vector<double> xs, local_ys, remote_ys;
  for (const auto& [n, at] : lengths) {
    xs.push_back(n);
    local_ys.push_back(median(at.local_ms));
    remote_ys.push_back(median(at.remote_ms));
  }
  // A prefill is its own cost, plus 1/rate per token, plus attention's growth per token^2.
  // A line through lengths where attention matters has a negative intercept and a slope
  // too steep for the short prompts: on a 20 ms link the lines' crossing came out at 53-58
  // tokens where the measured one was 37-43 (CI, 2026-12-01). So: the quadratic with three
  // lengths or more while its terms are physical (slope and n^2 term positive), else the
  // line (its intercept kept whatever its sign: clamping it moved the crossing by a
  // quarter), else, with one length, the rate through 0.
  auto rate_through_zero = [&](const std::vector<double>& ys) {
    double ms = 0, n = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      ms += ys[i];
      n += xs[i];
    }
    return ms > 0 ? n / (ms / 1e3) : 0;
  };
  struct Prefill {
    double fixed_ms = 0, tokens_per_s = 0, ms_per_token_squared = 0;
  };
  auto fit_prefill = [&](const std::vector<double>& ys) {
    Prefill p;
    p.tokens_per_s = rate_through_zero(ys);
    if (const auto q = fit_quadratic(xs, ys); q && q->b > 0 && q->c > 0)
      p = {q->a, 1e3 / q->b, q->c};
    else if (const auto line = fit_line(xs, ys); line && line->second > 0)
      p = {line->first, 1e3 / line->second, 0};
    return p;
  };
  DisaggInputs in;
  const Prefill local = fit_prefill(local_ys), remote = fit_prefill(remote_ys);
  in.local_fixed_ms = local.fixed_ms;
  in.local_tokens_per_s = local.tokens_per_s;
  in.local_ms_per_token_squared = local.ms_per_token_squared;
  in.remote_tokens_per_s = remote.tokens_per_s;  // its intercept joins the fixed cost below
  in.remote_ms_per_token_squared = remote.ms_per_token_squared;
  in.kv_bytes_per_token = median(bytes_per_token);
  // All bytes over all their time: a rate limiter's burst lets a small state through at
  // line speed, and only the large ones show the sustained rate.
  in.link_mbit_s = link_ms > 0 ? link_bytes * 8 / 1e3 / link_ms : 0;
  in.per_token_overhead_ms = overhead_ms / tokens;
  // The remote line's intercept given its slope (least squares: the mean of what is left
  // of each length's TTFT once the per-token terms are paid). A request costs at least
  // nothing: a negative fit (no link latency, a prefill faster than linear) is taken as 0.
  double left = 0;
  for (const auto& [n, at] : lengths) left += median(at.ttft_ms) - remote_ttft_ms(in, n);  // fixed_ms is still 0
  in.fixed_ms = std::max(0.0, left / static_cast<double>(lengths.size()));
  return in;
}

std::vector<nlohmann::json> prefill_records(const nlohmann::json& doc) {
  std::vector<nlohmann::json> out;
  if (doc.is_object()) {
    for (const auto& [key, value] : doc.items()) {
      if (key == "prefill_remote" && value.is_object())
        out.push_back(value);
      else
        for (auto& r : prefill_records(value)) out.push_back(std::move(r));
    }
  } else if (doc.is_array()) {
    for (const auto& value : doc)
      for (auto& r : prefill_records(value)) out.push_back(std::move(r));
  }
  return out;
}

nlohmann::json BreakEven::to_json() const {
  return {{"prompt_tokens", prompt_tokens ? nlohmann::json(*prompt_tokens) : nlohmann::json(nullptr)},
          {"min_link_mbit", min_link_mbit ? nlohmann::json(*min_link_mbit) : nlohmann::json(nullptr)}};
}

}  // namespace edgeprobe::kv
