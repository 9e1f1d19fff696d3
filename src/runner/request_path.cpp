#include "runner/request_path.h"

#include <fmt/format.h>

#include <random>

#include "core/clock.h"
#include "core/error.h"
#include "runner/bench_runner.h"
#include "runner/process_memory.h"

namespace edgeprobe::runner {
namespace {


// Common short English words: most tokenizers give each (with its leading space) one
// token, so n words come near n tokens; the usage says how many it really was.
constexpr const char* kWords[] = {"the",  "of",   "and", "to",    "in",   "is",    "it",   "that",  "was",
                                  "for",  "on",   "are", "with",  "as",   "at",    "be",   "this",  "have",
                                  "from", "or",   "one", "had",   "by",   "but",   "not",  "what",  "all",
                                  "were", "when", "we",  "there", "can",  "an",    "your", "which", "their",
                                  "said", "if",   "do",  "will",  "each", "about", "how",  "up"};

std::string seeded_words(std::mt19937_64& rng, int n) {
  std::uniform_int_distribution<size_t> pick(0, std::size(kWords) - 1);
  std::string text;
  for (int i = 0; i < n; ++i) text += (i ? " " : "") + std::string(kWords[pick(rng)]);
  return text;
}

std::string stop_reason(const engine::CompletionResult& r) {
  if (r.finish_reason == "stop") return "end_of_turn";
  if (r.finish_reason == "length") return "max_tokens";
  return r.finish_reason.empty() ? "unknown" : r.finish_reason;
}

}  // namespace

RequestTiming time_request(const engine::CompletionResult& r) {
  if (r.deltas.empty())
    throw_environment("the answer held no content ({} completion tokens, finish reason '{}')",
                      r.completion_tokens, r.finish_reason);
  RequestTiming t;
  t.ttft_ms = ms_between(r.start_ns, r.deltas.front().t_ns);
  t.e2e_ms = ms_between(r.start_ns, r.end_ns);
  for (size_t i = 1; i < r.deltas.size(); ++i)
    t.itl_ms.push_back(ms_between(r.deltas[i - 1].t_ns, r.deltas[i].t_ns));
  t.completion_tokens = r.completion_tokens > 0 ? r.completion_tokens : static_cast<int>(r.deltas.size());
  const double last_ms = ms_between(r.start_ns, r.deltas.back().t_ns);
  t.tpot_ms = t.completion_tokens > 1 ? (last_ms - t.ttft_ms) / (t.completion_tokens - 1) : 0;
  return t;
}

engine::CompletionRequest bench_request(const engine::LoadedModel& model, const workload::TestCase& test,
                                        const std::string& api, uint64_t seed) {
  if (test.n_depth > 0)
    throw_bad_input("a depth (-d) needs the token level; the request path cannot fill a cache");
  std::mt19937_64 rng(seed);
  engine::CompletionRequest req;
  req.api = api.empty() ? "completions" : api;
  req.seed = seed;
  req.max_tokens = std::max(1, test.n_gen);
  req.ignore_eos = true;
  const int n_prompt = std::max(1, test.n_prompt);  // a request needs a prompt: one token for a tg test
  if (req.api == "completions" && model.n_vocab() > 0) {
    std::uniform_int_distribution<engine::Token> dist(0, model.n_vocab() - 1);
    req.prompt_tokens.resize(static_cast<size_t>(n_prompt));
    for (auto& t : req.prompt_tokens) t = dist(rng);
    if (model.adds_bos() && model.bos_token() >= 0) req.prompt_tokens[0] = model.bos_token();
  } else if (req.api == "chat") {
    req.messages = {{"user", seeded_words(rng, n_prompt)}};
  } else {
    req.prompt = seeded_words(rng, n_prompt);
  }
  return req;
}

result::Repetition run_request_repetition(engine::Completer& completer, const engine::LoadedModel& model,
                                          const workload::TestCase& test, const std::string& api,
                                          int repetition, uint64_t seed, const RunClock& clock,
                                          const std::function<void(const PhaseEvent&)>& emit,
                                          bool in_process) {
  const auto req = bench_request(model, test, api, seed);
  result::Repetition rep;
  rep.index = repetition;
  if (in_process) reset_peak_rss();
  const auto r = completer.complete(req, clock);
  const auto t = time_request(r);
  rep.start_ns = r.start_ns;
  rep.end_ns = r.end_ns;
  const int64_t first = r.deltas.front().t_ns, last = r.deltas.back().t_ns;
  const int prompt_tokens =
      r.prompt_tokens > 0 ? r.prompt_tokens : static_cast<int>(req.prompt_tokens.size());
  // TTFT is the prefill as a client sees it (queueing, transfer and the first pick included).
  rep.ttft_ms = rep.prefill_ms = t.ttft_ms;
  rep.prefill_tokens_per_s = prompt_tokens > 0 && t.ttft_ms > 0 ? prompt_tokens / (t.ttft_ms / 1e3) : 0;
  rep.decode_step_ms = t.itl_ms;
  rep.decode_ms = ms_between(first, last);
  rep.decode_tokens_per_s =
      t.completion_tokens > 1 && rep.decode_ms > 0 ? (t.completion_tokens - 1) / (rep.decode_ms / 1e3) : 0;
  // A server's memory is not this process's: unknown (-1) rather than the client's.
  rep.peak_rss_bytes = in_process ? peak_rss_bytes() : -1;
  rep.request = {
      {"api", req.api},
      {"prompt_tokens", r.prompt_tokens < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.prompt_tokens)},
      {"completion_tokens",
       r.completion_tokens < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.completion_tokens)},
      {"finish_reason", r.finish_reason},
      {"e2e_ms", t.e2e_ms},
      {"tpot_ms", t.tpot_ms},
      {"server", r.server.is_null() ? nlohmann::json::object() : r.server}};
  if (emit) {
    const std::string name = test.name();
    emit({"prefill", "phase", r.start_ns, first, prompt_tokens, repetition, name});
    emit({"decode", "phase", first, last, t.completion_tokens - 1, repetition, name});
    for (size_t i = 1; i < r.deltas.size(); ++i)
      emit({"token", "token", r.deltas[i - 1].t_ns, r.deltas[i].t_ns, std::max(1, r.deltas[i].tokens),
            repetition, name});
  }
  return rep;
}

void run_request_conversation(engine::Completer& completer, size_t ci, const SessionConfig& cfg,
                              const std::string& api, int round, const Conversation& conv,
                              const std::string& where, const RunClock& clock, const SessionCallbacks& cb) {
  std::vector<engine::ChatMessage> history;
  for (int ti = 0; ti < static_cast<int>(conv.turns.size()); ++ti) {
    if (cb.stop.stop_requested()) return;
    if (cb.progress) cb.progress(fmt::format("{} turn {}/{}", where, ti + 1, conv.turns.size()));
    TurnResult t;
    t.round = round;
    t.conversation_id = conv.id;
    t.turn_index = ti;
    try {
      history.push_back({"user", conv.turns[static_cast<size_t>(ti)]});
      engine::CompletionRequest req;
      req.api = api.empty() ? "chat" : api;
      if (req.api == "chat")
        req.messages = history;
      else
        req.prompt = engine::plain_chat_text(history, true);
      req.max_tokens = cfg.max_tokens;
      req.cache_prompt = true;
      const auto r = completer.complete(req, clock);
      const auto timing = time_request(r);
      t.start_ns = r.start_ns;
      t.prefill_end_ns = r.deltas.front().t_ns;
      t.end_ns = r.deltas.back().t_ns;
      t.ttft_ms = t.prefill_ms = timing.ttft_ms;
      // The whole history is the prompt of a request (a server may serve part from cache).
      t.prompt_tokens = std::max(0, r.prompt_tokens);
      t.prefill_tokens_per_s = t.prompt_tokens > 0 ? t.prompt_tokens / (timing.ttft_ms / 1e3) : 0;
      t.generated_tokens = timing.completion_tokens;
      t.decode_step_ms = timing.itl_ms;
      const double decode_ms = ms_between(t.prefill_end_ns, t.end_ns);
      t.decode_tokens_per_s =
          t.generated_tokens > 1 && decode_ms > 0 ? (t.generated_tokens - 1) / (decode_ms / 1e3) : 0;
      t.e2e_ms = timing.e2e_ms;
      t.reply = r.text;
      t.stop_reason = stop_reason(r);
      t.context_tokens = t.prompt_tokens + t.generated_tokens;
      t.request = {{"api", req.api},
                   {"finish_reason", r.finish_reason},
                   {"tpot_ms", timing.tpot_ms},
                   {"server", r.server.is_null() ? nlohmann::json::object() : r.server}};
      if (cb.event) {
        const std::string tag = conv.id + "#" + std::to_string(ti);
        cb.event({"prefill", "phase", t.start_ns, t.prefill_end_ns, t.prompt_tokens, round, tag});
        cb.event({"decode", "phase", t.prefill_end_ns, t.end_ns, t.generated_tokens - 1, round, tag});
      }
      history.push_back({"assistant", t.reply});
    } catch (const std::exception& e) {
      t.stop_reason = "error";
      t.error = to_error_info(e);
      settle_figures(t);
      if (cb.turn_done) cb.turn_done(ci, t);
      return;  // the history is broken: the conversation ends here
    }
    settle_figures(t);
    if (cb.turn_done) cb.turn_done(ci, t);
  }
}

}  // namespace edgeprobe::runner
