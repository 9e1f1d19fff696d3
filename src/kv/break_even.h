#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

// When remote prefill pays. Time to first token for a prompt of n tokens:
//   local(n)  = local_fixed + n / local_rate
//   remote(n) = fixed + n / remote_rate + n * kv_bytes_per_token / link_rate + n * per_token_overhead
// (local_fixed: a prefill call's own cost here; fixed: a request's round trip and framing;
// per_token_overhead: serializing and restoring a token's state). Remote wins above
// n* = (fixed - local_fixed) / (1/local - 1/remote - b/link - overhead) and never when that
// denominator is not positive, i.e. below the link rate
// b / (1/local - 1/remote - overhead). Prefill rates are taken as constant over n, which
// holds while attention is a small share of a prefill (short and mid-length prompts).
namespace edgeprobe::kv {

struct DisaggInputs {
  double local_tokens_per_s = 0;   // the decode node's own prefill rate
  double remote_tokens_per_s = 0;  // the prefill node's
  double kv_bytes_per_token = 0;
  double link_mbit_s = 0;
  double fixed_ms = 0;
  double local_fixed_ms = 0;
  double per_token_overhead_ms = 0;
};

struct BreakEven {
  std::optional<double> prompt_tokens;  // remote wins above this; nullopt: never at this link rate
  std::optional<double>
      min_link_mbit;  // at or below this link rate remote never wins; nullopt: it never wins at all
  nlohmann::json to_json() const;
};

// Throws Error(kBadInput) for a non-positive rate or a negative overhead.
BreakEven break_even(const DisaggInputs& in);
double local_ttft_ms(const DisaggInputs& in, double n_tokens);
double remote_ttft_ms(const DisaggInputs& in, double n_tokens);

// The inputs from measured prefills: PrefillRecord JSON objects ("prefill_remote" in a
// bench repetition or session turn) taken with --prefill-compare-local, so each holds both
// paths. Each prompt length's repetitions are reduced to medians; the local and the remote
// prefill are then lines fitted by least squares over the lengths (rates through 0 when
// there is one length), the local line's intercept kept whatever its sign. Bytes per token
// are a median, the link rate byte-weighted (all state bytes over all their receive time),
// the per-token overhead token-weighted, and the remote fixed cost the mean of what each
// length's TTFT leaves once the per-token terms are paid (at least 0). Throws
// Error(kBadInput) when no record was a remote prefill with a local one beside it.
DisaggInputs fit_inputs(const std::vector<nlohmann::json>& records);
// Every "prefill_remote" object anywhere in a result document.
std::vector<nlohmann::json> prefill_records(const nlohmann::json& result);

}  // namespace edgeprobe::kv
