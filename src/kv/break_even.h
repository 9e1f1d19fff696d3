#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

// When remote prefill pays. Time to first token for a prompt of n tokens:
//   local(n)  = local_fixed + n / local_rate + local_q * n^2
//   remote(n) = fixed + n / remote_rate + remote_q * n^2 + n * kv_bytes_per_token / link_rate
//               + n * per_token_overhead
// (local_fixed: a prefill call's own cost here; fixed: a request's round trip and framing;
// per_token_overhead: serializing and restoring a token's state; the n^2 terms: attention,
// each token's cost growing with the tokens before it). Remote wins from the first n where
// remote(n) - local(n) = A + B n + C n^2 turns negative, A = fixed - local_fixed,
// B = b/link + overhead + 1/remote - 1/local, C = remote_q - local_q. Without the n^2 terms
// that is n* = A / -B, never when B >= 0, i.e. at or below the link rate
// b / (1/local - 1/remote - overhead). With a slower node's attention growing faster
// (C < 0) a long enough prompt wins even below that rate; min_link_mbit stays the linear
// terms' figure, the rate below which only attention's growth can make remote pay.
namespace edgeprobe::kv {

struct DisaggInputs {
  double local_tokens_per_s = 0;   // the decode node's own prefill rate
  double remote_tokens_per_s = 0;  // the prefill node's
  double kv_bytes_per_token = 0;
  double link_mbit_s = 0;
  double fixed_ms = 0;
  double local_fixed_ms = 0;
  double per_token_overhead_ms = 0;
  double local_ms_per_token_squared = 0;   // attention's growth here, ms per token^2
  double remote_ms_per_token_squared = 0;  // and on the prefill node
};

struct BreakEven {
  std::optional<double> prompt_tokens;  // remote wins above this; nullopt: never at this link rate
  // At or below this link rate remote does not win from the per-token gain (only
  // attention's growth, if the local node's grows faster); nullopt: the remote node's
  // per-token prefill is not faster.
  std::optional<double> min_link_mbit;
  nlohmann::json to_json() const;
};

// Throws Error(kBadInput) for a non-positive rate or a negative overhead or n^2 term.
BreakEven break_even(const DisaggInputs& in);
double local_ttft_ms(const DisaggInputs& in, double n_tokens);
double remote_ttft_ms(const DisaggInputs& in, double n_tokens);

// The inputs from measured prefills: PrefillRecord JSON objects ("prefill_remote" in a
// bench repetition or session turn) taken with --prefill-compare-local, so each holds both
// paths. Each prompt length's repetitions are reduced to medians; the local and the remote
// prefill are then fitted by least squares over the lengths: a quadratic (fixed + n/rate +
// q n^2) with three lengths or more when its n and n^2 terms come out positive, else a line
// (its intercept kept whatever its sign), else a rate through 0 with one length. Bytes per token
// are a median, the link rate byte-weighted (all state bytes over all their receive time),
// the per-token overhead token-weighted, and the remote fixed cost the mean of what each
// length's TTFT leaves once the per-token terms are paid (at least 0). Throws
// Error(kBadInput) when no record was a remote prefill with a local one beside it.
DisaggInputs fit_inputs(const std::vector<nlohmann::json>& records);
// Every "prefill_remote" object anywhere in a result document.
std::vector<nlohmann::json> prefill_records(const nlohmann::json& result);

}  // namespace edgeprobe::kv
