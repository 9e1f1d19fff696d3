#pragma once
#include <functional>
#include <string>

#include "core/clock.h"
#include "core/events.h"
#include "engine/engine.h"
#include "result/result.h"
#include "runner/session_runner.h"

// The request path of the runners: a bench repetition or a session turn run as one
// completion request (engine::Completer). An HTTP endpoint has only this path; the
// in-process engine takes it with --api, so both run the same workload code.
namespace edgeprobe::runner {

// Client-side figures of one streamed request (vLLM's benchmark definitions): TTFT to the
// first content chunk, ITL between content chunks, TPOT = (E2E - TTFT) / (tokens - 1).
struct RequestTiming {
  double ttft_ms = 0, e2e_ms = 0, tpot_ms = 0;
  std::vector<double> itl_ms;  // one per chunk after the first
  int completion_tokens = 0;   // the usage's count, else the chunk count
};
// Throws Error(kEnvironment) when the answer held no content at all.
RequestTiming time_request(const engine::CompletionResult& result);

// A bench test as a request: the prompt is n_prompt random token ids (as the token path
// draws them) where the API takes ids and the model's vocabulary is known, else as many
// seeded words of text; max_tokens = n_gen (1 for a prompt-only test), ignore_eos.
engine::CompletionRequest bench_request(const engine::LoadedModel& model, const workload::TestCase& test,
                                        const std::string& api, uint64_t seed);

// One timed repetition through `completer`; phase and token events go to `emit`. The
// peak RSS is this process's only when the model runs `in_process` (else unknown).
result::Repetition run_request_repetition(engine::Completer& completer, const engine::LoadedModel& model,
                                          const workload::TestCase& test, const std::string& api,
                                          int repetition, uint64_t seed, const RunClock& clock,
                                          const std::function<void(const PhaseEvent&)>& emit,
                                          bool in_process = true);

// One conversation of a session through `completer`: each turn sends the history so far
// (chat messages, or plain text for the completions API) with cache_prompt, so a server
// may reuse the cached prefix as the in-process session keeps it. Turns go to turn_done.
void run_request_conversation(engine::Completer& completer, size_t config_index, const SessionConfig& config,
                              const std::string& api, int round, const Conversation& conversation,
                              const std::string& where, const RunClock& clock, const SessionCallbacks& cb);

// A turn's figures as its document keeps them, set before it goes to turn_done. Not
// measured is not zero: a failed turn's figures that it never reached are absent, and so
// is the decode rate of a turn that generated at most one token (the first comes from the
// prefill); a turn that finished without running (a full context) has zeros.
void settle_figures(TurnResult& t);

}  // namespace edgeprobe::runner
