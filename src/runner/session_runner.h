#pragma once
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/context_defaults.h"

#include "core/clock.h"
#include "core/events.h"
#include "core/stop_token.h"
#include "engine/engine.h"
#include "result/result.h"
#include "result/session.h"

namespace edgeprobe::runner {

// A multi-turn conversation of the prompt set (data/conversations.jsonl format):
// {"id": "c01", "lang": "en", "turns": ["...", "..."]}
struct Conversation {
  std::string id;
  std::string lang;
  std::vector<std::string> turns;
};
// Throws Error(kBadInput) naming the line of a malformed entry.
std::vector<Conversation> load_conversations(const std::string& path);
std::string default_conversations_path();

// One configuration of a session sweep: the type sessions' results hold too.
using SessionConfig = result::SessionConfig;

struct SessionOptions {
  int rounds = 3;           // MELT repeats its conversations 3 times
  int conversations = 50;   // the first N of the prompt set
  std::string on_overflow = "stop";  // "stop" the conversation, or "shift" the context
  std::string cooldown = "none";     // "none", seconds ("30"), or "temp" (back near start)
  uint64_t seed = 42;
  // "" = the token level; "chat" or "completions": each turn is one completion request
  // with the history (runner/request_path.h), the only path of an HTTP endpoint.
  std::string api;
};

// One user turn, measured: what the user lives through. The runner fills the figures it
// reaches; result::Turn is the one type the job, the store and the reports read.
using TurnResult = result::Turn;

struct SessionCallbacks {
  std::function<void(const std::string&)> progress;
  std::function<void(const PhaseEvent&)> event;
  // Called once a turn is complete (or failed), to add telemetry and store it before the
  // next turn.
  std::function<void(size_t config_index, TurnResult&)> turn_done;
  // A configuration that could not run at all: its model did not load, or the engine
  // refused its context. The sweep goes on with the next configuration.
  std::function<void(size_t config_index, const result::ErrorInfo&)> config_failed;
  // A conversation ended before its last turn (a failed turn, a full context): its
  // `n_turns` remaining turns will not run, so progress can count them as settled.
  std::function<void(size_t config_index, size_t n_turns, const std::string& why)> turns_skipped;
  // Turns already stored by an interrupted run: (config, round, conversation, turn) ->
  // the stored result, replayed untimed to rebuild the history.
  std::function<std::optional<TurnResult>(size_t, int, const std::string&, int)> completed_turn;
  std::function<double()> current_max_temp_c;  // for --cooldown temp; nullopt-like NaN when unknown
  // Asked to stop, the session ends after the turn in flight.
  StopToken stop;
};

// Runs every configuration on `engine`: rounds x conversations, turn by turn through the
// chat template, keeping each conversation's history in the KV cache so a turn prefills
// only its new tokens. Nothing that fails stops the sweep: a configuration that cannot
// run goes to config_failed, a failing turn ends its conversation with the error in its
// TurnResult. After every turn a stop request (callbacks.stop) ends the session; every
// finished turn has been handed to turn_done by then.
void run_session(engine::Engine& engine, const std::vector<SessionConfig>& configs,
                 const std::vector<Conversation>& conversations, const SessionOptions& options,
                 const RunClock& clock, const SessionCallbacks& callbacks);

}  // namespace edgeprobe::runner
