#include "runner/session_runner.h"

#include <chrono>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <thread>

#include "core/clock.h"
#include "core/bounded_input.h"
#include "core/error.h"
#include "core/stop_token.h"
#include "runner/bench_runner.h"
#include "runner/request_path.h"
#include "core/context_defaults.h"

namespace edgeprobe::runner {
namespace {


// Waits between rounds, as MELT cools the device between its repetitions.
void cool_down(const std::string& mode, double start_temp_c, const SessionCallbacks& cb) {
  if (mode == "none") return;
  if (mode == "temp") {
    if (!cb.current_max_temp_c || std::isnan(start_temp_c)) {
      if (cb.progress) cb.progress("cool-down by temperature unavailable: no readable thermal zone; not waiting");
      return;
    }
    // Back within 1 °C of where the session started, for at most five minutes.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
    while (std::chrono::steady_clock::now() < deadline) {
      const double t = cb.current_max_temp_c();
      if (std::isnan(t) || t <= start_temp_c + 1.0) return;
      if (cb.progress) cb.progress(fmt::format("cooling down: {:.1f} °C, waiting for {:.1f} °C", t, start_temp_c + 1));
      std::this_thread::sleep_for(std::chrono::seconds(2));
    }
    return;
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(std::stod(mode)));
}

// One configuration's model and context, run conversation by conversation.
class ConfigRun {
 public:
  ConfigRun(const engine::Engine& engine, const engine::LoadedModel& model, engine::Context& ctx, size_t config_index,
            const SessionConfig& config, const SessionOptions& options, const RunClock& clock,
            const SessionCallbacks& cb)
      : engine_(engine), model_(model), ctx_(ctx), ci_(config_index), cfg_(config), options_(options), clock_(clock),
        cb_(cb) {}

  // Turn by turn until the conversation ends, cannot go on, fails, or a stop is requested.
  void run_conversation(int round, const Conversation& conv, const std::string& where) {
    ctx_.clear();
    std::vector<engine::ChatMessage> history;
    size_t formatted_len = 0;  // the history's text already in the KV cache
    for (int ti = 0; ti < static_cast<int>(conv.turns.size()); ++ti) {
      if (cb_.stop.stop_requested()) return;  // after every turn: the one in flight was finished
      if (cb_.progress) cb_.progress(fmt::format("{} turn {}/{}", where, ti + 1, conv.turns.size()));
      TurnResult t;
      t.round = round;
      t.conversation_id = conv.id;
      t.turn_index = ti;
      try {
        history.push_back({"user", conv.turns[static_cast<size_t>(ti)]});
        const std::string full = model_.apply_chat_template(history, true);
        const std::string fresh = full.substr(std::min(formatted_len, full.size()));
        const auto tokens = model_.tokenize(fresh, ctx_.n_past() == 0);

        // A turn an interrupted run already stored: replay it untimed to rebuild the
        // history, then go on with the first turn that is missing.
        if (cb_.completed_turn) {
          if (auto done = cb_.completed_turn(ci_, round, conv.id, ti)) {
            if (!replay(tokens, *done)) return skipped(conv, ti, "the stored turn ended the conversation");
            history.push_back({"assistant", done->reply});
            formatted_len = model_.apply_chat_template(history, false).size();
            continue;
          }
        }
        t.prompt_tokens = static_cast<int>(tokens.size());
        std::string note;
        if (make_room(t.prompt_tokens, note)) {
          measure_turn(tokens, t);
          if (!note.empty() && t.stop_reason != "context_full") t.stop_reason += "," + note;
          history.push_back({"assistant", t.reply});
          formatted_len = model_.apply_chat_template(history, false).size();
        } else {
          t.stop_reason = "context_full";  // not even the prompt fits: nothing was run
          t.context_tokens = ctx_.n_past();
        }
      } catch (const std::exception& e) {
        if (process_stop_now_requested()) return;  // stopped at once: the turn in flight is dropped
        t.stop_reason = "error";
        t.error = to_error_info(e);
        t.context_tokens = ctx_.n_past();
        settle_figures(t);
        if (cb_.turn_done) cb_.turn_done(ci_, t);
        return skipped(conv, ti, "a turn failed");  // the history is broken: the conversation ends here
      }
      settle_figures(t);
      if (cb_.turn_done) cb_.turn_done(ci_, t);
      if (t.stop_reason.starts_with("context_full")) return skipped(conv, ti, "the context is full");
    }
  }

 private:
  // The conversation ends at turn `ti`: the turns after it will not run.
  void skipped(const Conversation& conv, int ti, const char* why) {
    const size_t left = conv.turns.size() - static_cast<size_t>(ti) - 1;
    if (left > 0 && cb_.turns_skipped) cb_.turns_skipped(ci_, left, why);
  }

  // Rebuilds a stored turn's part of the cache; false when the conversation ended there.
  bool replay(const std::vector<engine::Token>& tokens, const TurnResult& done) {
    if (done.stop_reason == "context_full" || done.stop_reason == "error") return false;
    // The cache as the measured turn left it: the prompt and every reply token but an
    // end-of-generation one (picked, never decoded; see measure_turn).
    auto reply_tokens = done.reply_tokens;
    if (!reply_tokens.empty() && model_.is_end_of_generation(reply_tokens.back())) reply_tokens.pop_back();
    if (ctx_.n_past() + static_cast<int>(tokens.size() + reply_tokens.size()) >= ctx_.n_ctx()) return false;
    ctx_.decode(tokens);
    if (!reply_tokens.empty()) ctx_.decode(reply_tokens);
    return true;
  }

  // Room for the prompt and a full reply: false when there is none (the conversation
  // stops there); with --on-overflow shift, the oldest half of the history is dropped.
  bool make_room(int prompt_tokens, std::string& note) {
    const int n_ctx = ctx_.n_ctx();
    if (ctx_.n_past() + prompt_tokens + cfg_.max_tokens <= n_ctx) return true;
    const int needed = prompt_tokens + cfg_.max_tokens;
    if (options_.on_overflow != "shift" || needed >= n_ctx / 2 || ctx_.n_past() <= 1) return false;
    // Keep the first token (BOS), drop the oldest half of the rest, as llama.cpp does.
    const int n_discard = (ctx_.n_past() - 1) / 2;
    if (!engine_.capabilities().context_shift || !ctx_.shift(1, n_discard))
      throw_environment("the {} engine cannot shift this model's context; use --on-overflow stop", engine_.name());
    note = "context_shifted";
    return true;
  }

  // Prefill, greedy pick, decode steps to the end of the turn. Throws on a failure, with
  // what was measured so far left in `t`.
  void measure_turn(const std::vector<engine::Token>& tokens, TurnResult& t) {
    const std::string tag = t.conversation_id + "#" + std::to_string(t.turn_index);
    t.start_ns = clock_.now_ns();
    ctx_.decode(tokens, true);
    engine::Token token = ctx_.argmax_last();
    t.prefill_end_ns = clock_.now_ns();
    const double prefill_ms = ms_between(t.start_ns, t.prefill_end_ns);
    t.prefill_ms = prefill_ms;
    t.prefill_tokens_per_s = t.prompt_tokens / (prefill_ms / 1e3);
    t.ttft_ms = prefill_ms;  // greedy pick included: the first token is known here
    if (cb_.event) cb_.event({"prefill", "phase", t.start_ns, t.prefill_end_ns, t.prompt_tokens, t.round, tag});
    t.generated_tokens = 1;
    t.reply = model_.token_to_piece(token);
    t.reply_tokens.push_back(token);
    t.stop_reason = model_.is_end_of_generation(token) ? "end_of_turn" : "max_tokens";
    int64_t step_start = t.prefill_end_ns;
    while (t.stop_reason == "max_tokens" && t.generated_tokens < cfg_.max_tokens) {
      if (ctx_.n_past() >= ctx_.n_ctx()) {
        t.stop_reason = "context_full";
        break;
      }
      ctx_.decode_one(token);
      token = ctx_.argmax_last();
      t.reply_tokens.push_back(token);
      const int64_t step_end = clock_.now_ns();
      t.decode_step_ms.push_back(ms_between(step_start, step_end));
      step_start = step_end;
      ++t.generated_tokens;
      if (model_.is_end_of_generation(token)) t.stop_reason = "end_of_turn";
      else t.reply += model_.token_to_piece(token);
    }
    t.end_ns = step_start;
    // A reply cut at max_tokens has its last token picked but not decoded; the history
    // counts its text as said, so it goes into the cache too (untimed), as a resumed
    // run's replay puts it there.
    if (t.stop_reason == "max_tokens" && ctx_.n_past() < ctx_.n_ctx()) ctx_.decode_one(token);
    t.e2e_ms = ms_between(t.start_ns, t.end_ns);
    double decode_ms = 0;
    for (double ms : t.decode_step_ms) decode_ms += ms;
    t.decode_tokens_per_s = decode_ms > 0 ? static_cast<double>(t.decode_step_ms.size()) / (decode_ms / 1e3) : 0;
    t.context_tokens = ctx_.n_past();
    if (cb_.event) cb_.event({"decode", "phase", t.prefill_end_ns, t.end_ns, t.generated_tokens - 1, t.round, tag});
  }

  const engine::Engine& engine_;
  const engine::LoadedModel& model_;
  engine::Context& ctx_;
  const size_t ci_;
  const SessionConfig& cfg_;
  const SessionOptions& options_;
  const RunClock& clock_;
  const SessionCallbacks& cb_;
};

}  // namespace

void settle_figures(TurnResult& t) {
  for (auto* figure : {&t.ttft_ms, &t.prefill_ms, &t.prefill_tokens_per_s, &t.e2e_ms}) {
    if (!t.error) *figure = figure->value_or(0);
    else if (figure->value_or(0) <= 0) figure->reset();
  }
  if (t.generated_tokens <= 1 || !(t.decode_tokens_per_s.value_or(0) > 0)) t.decode_tokens_per_s.reset();
}

std::string default_conversations_path() {
  if (const char* env = std::getenv("EDGEPROBE_DATA_DIR"); env && *env) return std::string(env) + "/conversations.jsonl";
  return std::string(EDGEPROBE_DATA_DIR) + "/conversations.jsonl";
}

// A prompt set is read up to this many bytes: a file that never ends (/dev/zero, a FIFO)
// is refused there instead of read to 2 GB; no line may nest deeper than 16 levels.
constexpr size_t kMaxPromptSetBytes = 64u << 20;

std::vector<Conversation> load_conversations(const std::string& path) {
  const std::string text = read_bounded(path, kMaxPromptSetBytes, "prompt set");
  const std::string name = source_name(path);
  std::vector<Conversation> conversations;
  int line_no = 0;
  for (size_t start = 0; start < text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line(text.data() + start, end - start);
    start = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("{}:{}", name, line_no);
    const nlohmann::json j = parse_json_bounded(line, name, "conversation", 16, line_no);
    if (!j.is_object() || !j.contains("turns") || !j["turns"].is_array() || j["turns"].empty())
      throw_bad_input("{}: expected {{\"id\": ..., \"turns\": [\"...\"]}} with at least one turn", where);
    for (const char* key : {"id", "lang"})
      if (j.contains(key) && !j[key].is_string()) throw_bad_input("{}: \"{}\" must be a string", where, key);
    Conversation c;
    c.id = j.value("id", fmt::format("line{}", line_no));
    c.lang = j.value("lang", "");
    for (const auto& t : j["turns"]) {
      if (!t.is_string() || t.get<std::string>().empty()) throw_bad_input("{}: every turn must be a non-empty string", where);
      c.turns.push_back(t.get<std::string>());
    }
    conversations.push_back(std::move(c));
  }
  if (conversations.empty()) throw_bad_input("the prompt set '{}' holds no conversation", name);
  return conversations;
}

void run_session(engine::Engine& engine, const std::vector<SessionConfig>& configs,
                 const std::vector<Conversation>& conversations, const SessionOptions& options,
                 const RunClock& clock, const SessionCallbacks& cb) {
  const size_t n_conv = std::min(conversations.size(), static_cast<size_t>(std::max(1, options.conversations)));
  const double start_temp_c = cb.current_max_temp_c ? cb.current_max_temp_c() : NAN;
  // The model stays loaded across consecutive configurations that share it; so does
  // the reason it did not load.
  std::unique_ptr<engine::LoadedModel> model;
  std::optional<result::ErrorInfo> load_error;
  for (size_t ci = 0; ci < configs.size(); ++ci) {
    if (cb.stop.stop_requested()) return;
    const SessionConfig& cfg = configs[ci];
    const auto& prev = configs[ci > 0 ? ci - 1 : 0];
    if (ci == 0 || cfg.model_path != prev.model_path || cfg.n_gpu_layers != prev.n_gpu_layers ||
        cfg.devices != prev.devices) {
      model.reset();
      load_error.reset();
      if (cb.progress) cb.progress("loading " + cfg.model_path);
      try {
        engine::ModelOptions load;
        load.path = cfg.model_path;
        load.n_gpu_layers = cfg.n_gpu_layers;
        load.devices = cfg.devices;
        model = engine.load(load);
      } catch (const std::exception& e) {
        load_error = to_error_info(e);
      }
    }
    const bool requests = !engine.capabilities().token_level || !options.api.empty();
    std::unique_ptr<engine::Context> ctx;
    std::unique_ptr<engine::Completer> completer;
    std::optional<result::ErrorInfo> error = load_error;
    if (model) {
      engine::ContextOptions co;
      co.n_ctx = cfg.n_ctx;
      co.n_batch = cfg.n_batch;
      co.n_ubatch = std::min(cfg.n_batch, kDefaultUbatch);
      co.n_threads = cfg.n_threads;
      co.op_offload = cfg.op_offload;
      try {
        if (requests) completer = model->new_completer(co);
        else ctx = model->new_context(co);
      } catch (const std::exception& e) {
        error = to_error_info(e);
      }
    }
    if (!ctx && !completer) {
      if (cb.config_failed) cb.config_failed(ci, *error);
      continue;
    }
    if (requests) {
      for (int round = 0; round < options.rounds; ++round) {
        if (cb.stop.stop_requested()) return;
        if (round > 0) cool_down(options.cooldown, start_temp_c, cb);
        for (size_t k = 0; k < n_conv && !cb.stop.stop_requested(); ++k)
          run_request_conversation(*completer, ci, cfg, options.api, round, conversations[k],
                                   fmt::format("config {}/{} round {}/{} conversation {}/{} ({})", ci + 1,
                                               configs.size(), round + 1, options.rounds, k + 1, n_conv,
                                               conversations[k].id),
                                   clock, cb);
      }
      continue;
    }

    ConfigRun run(engine, *model, *ctx, ci, cfg, options, clock, cb);
    for (int round = 0; round < options.rounds; ++round) {
      if (cb.stop.stop_requested()) return;
      if (round > 0) cool_down(options.cooldown, start_temp_c, cb);
      for (size_t k = 0; k < n_conv; ++k) {
        if (cb.stop.stop_requested()) return;
        const Conversation& conv = conversations[k];
        run.run_conversation(round, conv, fmt::format("config {}/{} round {}/{} conversation {}/{} ({})", ci + 1,
                                                      configs.size(), round + 1, options.rounds, k + 1, n_conv,
                                                      conv.id));
      }
    }
  }
}

}  // namespace edgeprobe::runner
