#include "kv/break_even.h"

#include "core/error.h"

namespace edgeprobe::kv {
namespace {

double link_bytes_per_ms(const DisaggInputs& in) { return in.link_mbit_s * 1e6 / 8 / 1e3; }

void check(const DisaggInputs& in) {
  if (!(in.local_tokens_per_s > 0) || !(in.remote_tokens_per_s > 0))
    throw_bad_input("prefill rates must be positive (got local {}, remote {} tokens/s)", in.local_tokens_per_s,
                    in.remote_tokens_per_s);
  if (!(in.link_mbit_s > 0)) throw_bad_input("the link rate must be positive (got {} Mbit/s)", in.link_mbit_s);
  if (!(in.kv_bytes_per_token > 0)) throw_bad_input("KV bytes per token must be positive (got {})", in.kv_bytes_per_token);
  if (in.fixed_ms < 0 || in.per_token_overhead_ms < 0)
    throw_bad_input("overheads cannot be negative (got {} ms fixed, {} ms per token)", in.fixed_ms,
                    in.per_token_overhead_ms);
}

}  // namespace

double local_ttft_ms(const DisaggInputs& in, double n) { return n / in.local_tokens_per_s * 1e3; }

double remote_ttft_ms(const DisaggInputs& in, double n) {
  return in.fixed_ms + n / in.remote_tokens_per_s * 1e3 + n * in.kv_bytes_per_token / link_bytes_per_ms(in) +
         n * in.per_token_overhead_ms;
}

BreakEven break_even(const DisaggInputs& in) {
  check(in);
  // Milliseconds saved per token by prefilling remotely, before paying for the link.
  const double gain_ms = 1e3 / in.local_tokens_per_s - 1e3 / in.remote_tokens_per_s - in.per_token_overhead_ms;
  const double link_ms = in.kv_bytes_per_token / link_bytes_per_ms(in);
  BreakEven out;
  if (gain_ms > 0) out.min_link_mbit = in.kv_bytes_per_token / gain_ms * 8 / 1e3;
  if (gain_ms - link_ms > 0) out.prompt_tokens = in.fixed_ms / (gain_ms - link_ms);
  return out;
}

nlohmann::json BreakEven::to_json() const {
  return {{"prompt_tokens", prompt_tokens ? nlohmann::json(*prompt_tokens) : nlohmann::json(nullptr)},
          {"min_link_mbit", min_link_mbit ? nlohmann::json(*min_link_mbit) : nlohmann::json(nullptr)}};
}

}  // namespace edgeprobe::kv
