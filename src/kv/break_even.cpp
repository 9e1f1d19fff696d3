#include "kv/break_even.h"

#include <algorithm>
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

double local_ttft_ms(const DisaggInputs& in, double n) {
  return in.local_fixed_ms + n / in.local_tokens_per_s * 1e3;
}

double remote_ttft_ms(const DisaggInputs& in, double n) {
  return in.fixed_ms + n / in.remote_tokens_per_s * 1e3 + n * in.kv_bytes_per_token / link_bytes_per_ms(in) +
         n * in.per_token_overhead_ms;
}

BreakEven break_even(const DisaggInputs& in) {
  check(in);
  // Milliseconds saved per token by prefilling remotely, before paying for the link.
  const double gain_ms =
      1e3 / in.local_tokens_per_s - 1e3 / in.remote_tokens_per_s - in.per_token_overhead_ms;
  const double link_ms = in.kv_bytes_per_token / link_bytes_per_ms(in);
  BreakEven out;
  if (gain_ms > 0) out.min_link_mbit = in.kv_bytes_per_token / gain_ms * 8 / 1e3;
  if (gain_ms - link_ms > 0) out.prompt_tokens = std::max(0.0, in.fixed_ms - in.local_fixed_ms) / (gain_ms - link_ms);
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
  // A prefill is a line in n: slope 1/rate, intercept its own cost. With one length, the
  // rate goes through 0. A prefill that grows faster than linearly over the lengths
  // measured (attention) fits a line with a negative intercept; it is kept, because the
  // prediction is the crossing of two lines fitted over the same lengths, and clamping
  // one intercept moves that crossing (by a quarter, measured on a 20 ms link).
  auto rate_through_zero = [&](const std::vector<double>& ys) {
    double ms = 0, n = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      ms += ys[i];
      n += xs[i];
    }
    return ms > 0 ? n / (ms / 1e3) : 0;
  };
  DisaggInputs in;
  in.local_tokens_per_s = rate_through_zero(local_ys);
  if (const auto line = fit_line(xs, local_ys); line && line->second > 0) {
    in.local_fixed_ms = line->first;
    in.local_tokens_per_s = 1e3 / line->second;
  }
  in.remote_tokens_per_s = rate_through_zero(remote_ys);
  if (const auto line = fit_line(xs, remote_ys); line && line->second > 0)
    in.remote_tokens_per_s = 1e3 / line->second;  // its intercept joins the fixed cost below
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
