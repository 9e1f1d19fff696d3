#pragma once
// When speculative decoding pays (docs/speculative.md, "When it pays"): the standard
// expected-accepted-length model, as pure arithmetic so that predict and doctor share it and
// unit tests can hold it to hand-computed figures.
//
// One verify step with a draft of k tokens costs k draft steps (the draft catches up on the
// accepted text and proposes) and one target batch of k + 1 tokens with logits for each; it
// yields the accepted prefix of the draft and one token of the target's own. Plain decoding
// yields one token per target step. So
//   speed-up = E(k) * target_token_ms / (k * draft_token_ms + verify_ms(k + 1))
// with E(k) the expected tokens per verify step.
#include <optional>
#include <vector>

namespace edgeprobe::predict {

// E(k) when each proposal is accepted with probability alpha given that the ones before it
// were: 1 + alpha + ... + alpha^k = (1 - alpha^(k+1)) / (1 - alpha); k + 1 at alpha = 1.
double expected_tokens(double alpha, int k);
// E(k) from measured acceptance per draft position: rates[j] is the share of verify steps
// whose draft reached position j that accepted it (acceptance is a prefix, so that is the
// probability that the first j + 1 proposals were all accepted): 1 + the sum of the rates.
double expected_tokens(const std::vector<double>& position_rates);

// The inverse of E(k): the alpha at which expected_tokens(alpha, k) = expected, clamped to
// 0..1. It puts a measured run on the break-even's scale: a run that accepted 1.31 of 4
// drafted tokens per step (E = 2.31) is alpha = 0.60, though its accepted / drafted is 33 %
// (which counts a late position, reached only after the early ones were accepted, alike).
double acceptance_for_tokens(double expected, int k);

// What one verify step of a draft length costs, in ms.
struct SpecCosts {
  double target_token_ms = 0;  // one plain decode step of the target
  double draft_token_ms = 0;   // one draft step (a proposal)
  double verify_ms = 0;        // the target's batch of k + 1 tokens, logits for each
};

// Speculative decoding's speed over plain decoding's (> 1: faster) at a draft length k
// that yields `expected` tokens per verify step. 0 when the costs are not known.
double speed_up(double expected, int k, const SpecCosts& costs);

// The per-token acceptance alpha at which speed_up = 1 for draft length k: 0 when
// speculation pays even with every proposal rejected (the batch alone is cheaper than a
// step, never on a real device, but a number all the same), nullopt when it cannot pay even
// with every proposal accepted (the draft and the batch cost more than k + 1 steps).
std::optional<double> break_even_acceptance(int k, const SpecCosts& costs);

}  // namespace edgeprobe::predict
