#include "engine/engine.h"

#include <sched.h>

#include <algorithm>
#include <cctype>

#include "core/error.h"
#include "engine/cpu_mask.h"

namespace edgeprobe::engine {

nlohmann::json Capabilities::to_json() const {
  return {{"kv_state", kv_state},
          {"kv_tail", kv_tail},
          {"context_shift", context_shift},
          {"cpu_placement", cpu_placement},
          {"per_token_timing", per_token_timing},
          {"token_level", token_level},
          {"requests", requests},
          {"in_process", in_process},
          {"speculative", speculative}};
}

namespace {

// The request level on top of the token level: what a server does with one request.
class TokenCompleter : public Completer {
 public:
  TokenCompleter(const LoadedModel& model, std::unique_ptr<Context> ctx) : model_(model), ctx_(std::move(ctx)) {}

  CompletionResult complete(const CompletionRequest& request, const RunClock& clock,
                            const DeltaCallback& on_delta) override {
    CompletionResult r;
    r.start_ns = clock.now_ns();
    std::vector<Token> prompt = request.prompt_tokens;
    if (request.api == "chat") {
      prompt = model_.tokenize(model_.apply_chat_template(request.messages, true), true);
    } else if (prompt.empty()) {
      prompt = model_.tokenize(request.prompt, true);
    }
    if (prompt.empty()) throw_bad_input("a completion request needs a prompt");
    if (static_cast<int>(prompt.size()) + request.max_tokens > ctx_->n_ctx())
      throw_bad_input("the prompt ({} tokens) and {} new tokens do not fit a context of {}", prompt.size(),
                      request.max_tokens, ctx_->n_ctx());
    ctx_->clear();
    ctx_->decode(prompt, true);
    r.prompt_tokens = static_cast<int>(prompt.size());
    r.finish_reason = "length";
    for (int i = 0; i < request.max_tokens; ++i) {
      if (i > 0) ctx_->decode_one(r.completion_token_ids.back());
      const Token token = ctx_->argmax_last();
      const bool eog = model_.is_end_of_generation(token);
      if (eog && !request.ignore_eos) {
        r.finish_reason = "stop";
        break;
      }
      r.completion_token_ids.push_back(token);
      ContentDelta d{clock.now_ns(), eog ? std::string() : model_.token_to_piece(token), 1};
      r.text += d.text;
      if (on_delta) on_delta(d);
      r.deltas.push_back(std::move(d));
    }
    r.completion_tokens = static_cast<int>(r.completion_token_ids.size());
    r.end_ns = clock.now_ns();
    return r;
  }

 private:
  const LoadedModel& model_;
  std::unique_ptr<Context> ctx_;
};

}  // namespace

std::unique_ptr<Completer> LoadedModel::new_completer(const ContextOptions& options) const {
  return std::make_unique<TokenCompleter>(*this, new_context(options));
}

std::string plain_chat_text(const std::vector<ChatMessage>& messages, bool add_assistant) {
  std::string text;
  for (const auto& m : messages) text += m.role + ": " + m.content + "\n";
  if (add_assistant) text += "assistant: ";
  return text;
}

std::vector<bool> parse_cpu_mask(const std::string& text) {
  std::string hex = text;
  if (hex.starts_with("0x") || hex.starts_with("0X")) hex = hex.substr(2);
  if (hex.empty() || hex.size() > kMaxCpus / 4)
    throw_bad_input("invalid CPU mask '{}': expected a hex number such as 0x3", text);
  std::vector<bool> mask(hex.size() * 4, false);
  for (size_t i = 0; i < hex.size(); ++i) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(hex[hex.size() - 1 - i])));
    int v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else throw_bad_input("invalid CPU mask '{}': '{}' is not a hex digit", text, c);
    for (int b = 0; b < 4; ++b) mask[i * 4 + b] = (v >> b) & 1;
  }
  if (std::none_of(mask.begin(), mask.end(), [](bool b) { return b; }))
    throw_bad_input("CPU mask '{}' selects no CPU", text);
  return mask;
}

void check_cpu_mask_usable(const std::string& hex) {
  const auto mask = parse_cpu_mask(hex);
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;  // unknown: nothing to check against
  std::string usable;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed)) usable += (usable.empty() ? "" : ",") + std::to_string(cpu);
  for (size_t cpu = 0; cpu < mask.size(); ++cpu)
    if (mask[cpu] && (cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed)))
      throw_bad_input("CPU mask '{}' names CPU {}, which this process cannot run on (it may use CPUs {}); "
                      "name only those",
                      hex, cpu, usable);
}

}  // namespace edgeprobe::engine
