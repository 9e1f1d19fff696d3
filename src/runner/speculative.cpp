#include "runner/speculative.h"

#include <fmt/format.h>

#include <algorithm>

#include "analysis/greedy_check.h"
#include "core/error.h"

namespace edgeprobe::runner {

using engine::Token;

int accepted_prefix(const std::vector<Token>& proposals, const std::vector<Token>& picks) {
  const size_t n = std::min(proposals.size(), picks.size());
  size_t k = 0;
  while (k < n && proposals[k] == picks[k]) ++k;
  return static_cast<int>(k);
}

void tally_step(result::Speculative& spec, int drafted, int accepted) {
  if (drafted < 0 || accepted < 0 || accepted > drafted)
    throw Error(ErrorKind::kBug,
                fmt::format("a verify step accepted {} of {} draft tokens", accepted, drafted));
  if (spec.positions.size() < static_cast<size_t>(drafted))
    spec.positions.resize(static_cast<size_t>(drafted));
  for (int j = 0; j < drafted; ++j) {
    ++spec.positions[static_cast<size_t>(j)].drafted;
    if (j < accepted) ++spec.positions[static_cast<size_t>(j)].accepted;
  }
  ++spec.verify_steps;
  spec.drafted += drafted;
  spec.accepted += accepted;
}

namespace {

// The first generated token comes from the prompt's logits; the prefill is timed apart.
void prefill(engine::Context& ctx, const std::vector<Token>& prompt, const RunClock& clock, double& ms) {
  ctx.clear();
  const int64_t t0 = clock.now_ns();
  ctx.decode(prompt, true);
  ms = ms_between(t0, clock.now_ns());
}

void drop_after(engine::Context& ctx, int32_t n_keep, const char* which) {
  if (!ctx.truncate(n_keep))
    throw_environment(
        "the {} model's cache cannot drop rejected draft tokens (a recurrent model?): "
        "speculative decoding needs an attention cache",
        which);
}

// The draft's cache holds a prefix of `seq` (what both agree on); it decodes the rest,
// which leaves it the logits of seq's last token, then proposes n tokens one at a time.
// The last proposal is not decoded: the next step decodes it if the target accepts it.
std::vector<Token> propose(engine::Context& draft, const std::vector<Token>& seq, int n) {
  const auto have = static_cast<size_t>(draft.n_past());
  if (have >= seq.size())
    throw Error(ErrorKind::kBug,
                fmt::format("the draft's cache ({}) is not behind the sequence ({})", have, seq.size()));
  draft.decode(std::vector<Token>(seq.begin() + static_cast<std::ptrdiff_t>(have), seq.end()), true);
  std::vector<Token> proposals;
  for (int j = 0; j < n; ++j) {
    proposals.push_back(draft.argmax_last());
    if (j + 1 < n) draft.decode_one(proposals.back());
  }
  return proposals;
}

}  // namespace

DecodeRun plain_decode(engine::Context& target, const std::vector<Token>& prompt, int n_gen,
                       const RunClock& clock) {
  DecodeRun run;
  prefill(target, prompt, clock, run.prefill_ms);
  run.tokens.push_back(target.argmax_last());
  const int64_t d0 = clock.now_ns();
  while (static_cast<int>(run.tokens.size()) < n_gen) {
    target.decode_one(run.tokens.back());
    run.tokens.push_back(target.argmax_last());
  }
  run.decode_ms = ms_between(d0, clock.now_ns());
  run.verify_ms = run.decode_ms;
  return run;
}

// Invariant at the top of each step: `seq` is the prompt and the tokens so far; the
// target's cache holds all of seq but its last token, the draft's a shorter prefix.
DecodeRun speculative_decode(engine::Context& target, engine::Context& draft,
                             const std::vector<Token>& prompt, int n_gen, const SpecOptions& options,
                             const RunClock& clock, result::Speculative* spec) {
  DecodeRun run;
  prefill(target, prompt, clock, run.prefill_ms);
  prefill(draft, prompt, clock, run.draft_prefill_ms);
  std::vector<Token> seq = prompt;
  seq.push_back(target.argmax_last());
  const auto generated = [&] { return static_cast<int>(seq.size() - prompt.size()); };
  const int64_t d0 = clock.now_ns();
  while (generated() < n_gen) {
    // A step yields its accepted tokens and one of the target's: at most n + 1.
    const int n = std::min(options.draft_max, n_gen - generated() - 1);
    const int64_t t0 = clock.now_ns();
    if (n < std::max(1, options.draft_min)) {  // no draft worth verifying: one plain step
      target.decode_one(seq.back());
      seq.push_back(target.argmax_last());
      run.verify_ms += ms_between(t0, clock.now_ns());
      if (spec) ++spec->plain_steps;
      continue;
    }
    const std::vector<Token> proposals = propose(draft, seq, n);
    const int64_t t1 = clock.now_ns();
    std::vector<Token> batch{seq.back()};
    batch.insert(batch.end(), proposals.begin(), proposals.end());
    const std::vector<Token> picks = target.decode_greedy_all(batch);
    const int64_t t2 = clock.now_ns();
    if (picks.size() != batch.size()) throw_environment("the engine cannot verify a draft in one batch");
    const int accepted = accepted_prefix(proposals, picks);
    const auto kept = static_cast<int32_t>(seq.size()) + accepted;  // cells both caches may keep
    seq.insert(seq.end(), proposals.begin(), proposals.begin() + accepted);
    seq.push_back(picks[static_cast<size_t>(accepted)]);
    drop_after(target, kept, "target");
    drop_after(draft, std::min(kept, draft.n_past()), "draft");
    if (spec) tally_step(*spec, n, accepted);
    const int64_t t3 = clock.now_ns();
    run.draft_ms += ms_between(t0, t1);
    run.verify_ms += ms_between(t1, t2);
    run.overhead_ms += ms_between(t2, t3);
  }
  run.decode_ms = ms_between(d0, clock.now_ns());
  // n_gen tokens exactly: a step's draft is cut so that its accepted tokens and the
  // target's own never pass the test's length.
  run.tokens.assign(seq.begin() + static_cast<std::ptrdiff_t>(prompt.size()), seq.end());
  return run;
}

result::Speculative measure_speculative(engine::Context& target, engine::Context& draft,
                                        const std::vector<std::vector<Token>>& prompts, int n_gen,
                                        const SpecOptions& options, int repetitions, bool warmup,
                                        const RunClock& clock, const StopToken& stop) {
  if (prompts.empty()) throw Error(ErrorKind::kBug, "speculative pairs without a prompt");
  result::Speculative spec;
  spec.draft.path = options.draft;
  spec.draft_max = options.draft_max;
  spec.draft_min = options.draft_min;
  if (warmup) {
    plain_decode(target, prompts.front(), n_gen, clock);
    speculative_decode(target, draft, prompts.front(), n_gen, options, clock, nullptr);
  }
  for (int r = 0; r < repetitions && !stop.stop_requested(); ++r) {
    const auto& prompt = prompts[static_cast<size_t>(r) % prompts.size()];
    const DecodeRun plain = plain_decode(target, prompt, n_gen, clock);
    const DecodeRun fast = speculative_decode(target, draft, prompt, n_gen, options, clock, &spec);
    result::SpeculativePair pair;
    pair.index = r;
    pair.tokens = static_cast<int>(fast.tokens.size());
    pair.plain_ms = plain.decode_ms;
    pair.spec_ms = fast.decode_ms;
    pair.draft_ms = fast.draft_ms;
    pair.verify_ms = fast.verify_ms;
    pair.overhead_ms = fast.overhead_ms;
    pair.target_prefill_ms = fast.prefill_ms;
    pair.draft_prefill_ms = fast.draft_prefill_ms;
    pair.identical = fast.tokens == plain.tokens;
    if (r == 0) {
      result::GreedyCheck reference;
      reference.prompt = prompt;
      reference.tokens = plain.tokens;
      spec.check = {};
      spec.check.prompt = prompt;
      spec.check.tokens = fast.tokens;
      analysis::compare_continuation(spec.check, {reference}, "plain decoding");
    }
    spec.pairs.push_back(pair);
  }
  return spec;
}

std::string vocabulary_mismatch(const engine::LoadedModel& target, const engine::LoadedModel& draft) {
  if (target.n_vocab() != draft.n_vocab())
    return fmt::format("{} tokens against the target's {}", draft.n_vocab(), target.n_vocab());
  if (target.bos_token() != draft.bos_token())
    return fmt::format("BOS token {} against the target's {}", draft.bos_token(), target.bos_token());
  for (Token t = 0; t < target.n_vocab(); ++t)
    if (target.token_text(t) != draft.token_text(t))
      return fmt::format("token {} is '{}' against the target's '{}'", t, draft.token_text(t).substr(0, 40),
                         target.token_text(t).substr(0, 40));
  return "";
}

}  // namespace edgeprobe::runner
