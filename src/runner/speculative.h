#pragma once
// bench --draft: speculative decoding measured against plain decoding in the same run
// (docs/speculative.md). A draft model proposes up to draft_max tokens greedily, the
// target verifies them in one batch, the longest agreeing prefix and the target's own
// next token are kept, and both caches drop the rest. Greedy throughout, so the tokens
// must be plain decoding's: the pair checks it.
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/stop_token.h"
#include "engine/engine.h"
#include "result/result.h"

namespace edgeprobe::runner {

struct SpecOptions {
  std::string draft;  // the draft model ("" = off): a spec in a plan, a path once resolved
  int draft_max = 8;  // tokens a draft proposes at most
  int draft_min = 0;  // a draft shorter than this (the run's end is near) is not verified
  bool enabled() const { return !draft.empty(); }
  bool operator==(const SpecOptions&) const = default;
};

// The bookkeeping, apart from any model so a unit test can drive it.
// How many proposals the target agrees with: the length of the common prefix of
// `proposals` and `picks` (picks[j]: the target's token after proposals[0..j), with the
// draft's input token first).
int accepted_prefix(const std::vector<engine::Token>& proposals, const std::vector<engine::Token>& picks);
// Counts one verify step that drafted `drafted` tokens and accepted the first `accepted`.
void tally_step(result::Speculative& spec, int drafted, int accepted);

// One decode of `prompt` continued to n_gen tokens, greedy, in `target` (and `draft`).
struct DecodeRun {
  std::vector<engine::Token> tokens;  // n_gen, the first from the prefill
  double prefill_ms = 0, draft_prefill_ms = 0;
  double decode_ms = 0;  // after the first token
  double draft_ms = 0, verify_ms = 0, overhead_ms = 0;
};
DecodeRun plain_decode(engine::Context& target, const std::vector<engine::Token>& prompt, int n_gen,
                       const RunClock& clock);
// Speculative decoding; its verify steps and draft positions are counted into `spec` when
// not null. Throws Error(kEnvironment) when a cache cannot drop rejected tokens.
DecodeRun speculative_decode(engine::Context& target, engine::Context& draft,
                             const std::vector<engine::Token>& prompt, int n_gen, const SpecOptions& options,
                             const RunClock& clock, result::Speculative* spec);

// The pairs of one test: an untimed warm-up pair when `warmup`, then `repetitions` pairs
// (plain, then speculative, on the same prompt), pair r on prompts[r % size] so that the
// acceptance is not one text's; stops between pairs when asked.
result::Speculative measure_speculative(engine::Context& target, engine::Context& draft,
                                        const std::vector<std::vector<engine::Token>>& prompts, int n_gen,
                                        const SpecOptions& options, int repetitions, bool warmup,
                                        const RunClock& clock, const StopToken& stop);

// The second model's vocabulary against the first's: "" when they are the same (size,
// every token's text, BOS), else what differs, in a few words.
std::string vocabulary_mismatch(const engine::LoadedModel& target, const engine::LoadedModel& draft);

}  // namespace edgeprobe::runner
