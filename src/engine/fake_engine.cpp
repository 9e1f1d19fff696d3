#include "engine/fake_engine.h"

#include <chrono>
#include <cstring>
#include <mutex>
#include <thread>

namespace edgeprobe::engine {

struct FakeEngine::State {
  FakeScript script;
  FakeCounters counters;
  std::mutex mutex;  // guards counters: contexts may run on several threads (load tests)
};

namespace {

using State = FakeEngine::State;

// Sleeping only ever overshoots, so a runner's clock never sees less than the script.
void wait_ms(double ms) {
  if (ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
}

// The state blob: a tag, then the cached tokens and the picks since the last prefill.
constexpr char kStateTag[8] = {'f', 'a', 'k', 'e', 'k', 'v', '0', '1'};

class FakeContext : public Context {
 public:
  FakeContext(std::shared_ptr<State> state, int32_t n_ctx, bool tail_states)
      : state_(std::move(state)), n_ctx_(n_ctx), tail_states_(tail_states) {}

  void decode(const std::vector<Token>& tokens, bool /*logits_for_last*/) override {
    {
      std::lock_guard lock(state_->mutex);
      auto& c = state_->counters;
      ++c.prefills;
      c.prefill_sizes.push_back(static_cast<int>(tokens.size()));
      if (c.prefills == state_->script.fail_prefill_at)
        throw_environment("fake engine: scripted failure of prefill {}", c.prefills);
    }
    admit(tokens.size());
    wait_ms(state_->script.prefill_ms_per_token * static_cast<double>(tokens.size()));
    cache_.insert(cache_.end(), tokens.begin(), tokens.end());
    steps_since_prefill_ = 0;
  }

  void decode_one(Token token) override {
    {
      std::lock_guard lock(state_->mutex);
      auto& c = state_->counters;
      ++c.decode_steps;
      if (c.decode_steps == state_->script.fail_step_at)
        throw_environment("fake engine: scripted failure of decode step {}", c.decode_steps);
    }
    admit(1);
    check_token(token);
    wait_ms(state_->script.decode_ms_per_step);
    cache_.push_back(token);
    ++steps_since_prefill_;
  }

  void clear() override {
    cache_.clear();
    steps_since_prefill_ = 0;
  }
  int32_t n_ctx() const override { return n_ctx_; }
  int32_t n_past() const override { return static_cast<int32_t>(cache_.size()); }

  Token argmax_last() const override {
    const FakeScript& s = state_->script;
    if (s.eog_after >= 0 && steps_since_prefill_ >= s.eog_after) return FakeScript::kEndOfGeneration;
    if (s.reply.empty()) return FakeScript::kEndOfGeneration;
    return static_cast<unsigned char>(s.reply[static_cast<size_t>(steps_since_prefill_) % s.reply.size()]);
  }

  bool shift(int n_keep, int n_discard) override {
    if (!state_->script.context_shift) return false;
    if (n_keep < 0 || n_discard < 0 || n_keep + n_discard > n_past()) return false;
    cache_.erase(cache_.begin() + n_keep, cache_.begin() + n_keep + n_discard);
    return true;
  }

  std::vector<uint8_t> save_state() const override {
    if (!state_->script.kv_state) return {};
    {
      std::lock_guard lock(state_->mutex);  // contexts may run on several threads (a kv server's)
      ++state_->counters.saves;
    }
    std::vector<uint8_t> bytes(kStateTag, kStateTag + sizeof(kStateTag));
    append(bytes, static_cast<Token>(steps_since_prefill_));
    for (Token t : cache_) append(bytes, t);
    return bytes;
  }

  bool restore_state(const std::vector<uint8_t>& bytes) override {
    if (!state_->script.kv_state) return false;
    {
      std::lock_guard lock(state_->mutex);
      ++state_->counters.restores;
    }
    const size_t header = sizeof(kStateTag) + sizeof(Token);
    if (bytes.size() < header || (bytes.size() - header) % sizeof(Token) != 0 ||
        std::memcmp(bytes.data(), kStateTag, sizeof(kStateTag)) != 0)
      return false;
    std::vector<Token> tokens((bytes.size() - header) / sizeof(Token));
    if (static_cast<int64_t>(tokens.size()) > n_ctx_) return false;
    Token steps;
    std::memcpy(&steps, bytes.data() + sizeof(kStateTag), sizeof(Token));
    if (!tokens.empty()) std::memcpy(tokens.data(), bytes.data() + header, tokens.size() * sizeof(Token));
    cache_ = std::move(tokens);
    steps_since_prefill_ = steps;
    return true;
  }

  // A tail is a state of the cache's tokens from `from` on, appended after the first
  // `from` on restore (the same bytes a whole state has, so the parsing is shared).
  std::vector<uint8_t> save_tail(int32_t from) const override {
    if (!tail_states_ || from < 0 || from >= n_past()) return {};
    FakeContext copy(state_, n_ctx_, true);
    copy.cache_.assign(cache_.begin() + from, cache_.end());
    copy.steps_since_prefill_ = steps_since_prefill_;
    return copy.save_state();
  }

  bool restore_tail(const std::vector<uint8_t>& tail, int32_t from) override {
    if (!tail_states_ || from < 0 || from > n_past()) return false;
    FakeContext part(state_, n_ctx_, true);
    if (!part.restore_state(tail) || from + part.n_past() > n_ctx_) return false;
    cache_.resize(static_cast<size_t>(from));
    cache_.insert(cache_.end(), part.cache_.begin(), part.cache_.end());
    steps_since_prefill_ = part.steps_since_prefill_;
    return true;
  }

 private:
  // As llama_decode does: a cache that cannot take the tokens is an error, not a wrap.
  void admit(size_t n) const {
    if (cache_.size() + n > static_cast<size_t>(n_ctx_))
      throw_environment("fake engine: the KV cache is full ({} + {} tokens > {})", cache_.size(), n, n_ctx_);
  }
  static void check_token(Token t) {
    if (t < 0 || t >= FakeScript::kVocab) throw_environment("fake engine: token {} is outside the vocabulary", t);
  }
  static void append(std::vector<uint8_t>& bytes, Token t) {
    uint8_t raw[sizeof(Token)];
    std::memcpy(raw, &t, sizeof(Token));
    bytes.insert(bytes.end(), raw, raw + sizeof(Token));
  }

  std::shared_ptr<State> state_;
  int32_t n_ctx_;
  bool tail_states_;
  std::vector<Token> cache_;
  int steps_since_prefill_ = 0;
};

class FakeModel : public LoadedModel {
 public:
  FakeModel(std::shared_ptr<State> state, ModelOptions options) : state_(std::move(state)), options_(std::move(options)) {}

  const ModelOptions& options() const override { return options_; }
  std::vector<Token> tokenize(const std::string& text, bool add_special) const override {
    std::vector<Token> tokens;
    if (add_special) tokens.push_back(FakeScript::kBos);
    for (char c : text) tokens.push_back(static_cast<unsigned char>(c));
    return tokens;
  }
  std::string token_to_piece(Token token) const override {
    return token >= 0 && token < 256 ? std::string(1, static_cast<char>(token)) : std::string();
  }
  bool is_end_of_generation(Token token) const override { return token == FakeScript::kEndOfGeneration; }
  int32_t n_vocab() const override { return FakeScript::kVocab; }
  Token bos_token() const override { return FakeScript::kBos; }
  bool adds_bos() const override { return true; }
  std::string description() const override { return "fake byte-level model"; }
  uint64_t size_bytes() const override { return 0; }
  uint64_t n_params() const override { return 0; }
  std::string chat_template() const override { return "fake: <|role|>content, one line a message"; }

  std::string apply_chat_template(const std::vector<ChatMessage>& messages, bool add_assistant,
                                  bool* used_fallback) const override {
    std::string text;
    for (const auto& m : messages) text += "<|" + m.role + "|>" + m.content + "\n";
    if (add_assistant) text += "<|assistant|>";
    if (used_fallback) *used_fallback = false;
    return text;
  }

  std::unique_ptr<Context> new_context(const ContextOptions& o) const override {
    std::lock_guard lock(state_->mutex);
    auto& c = state_->counters;
    ++c.contexts;
    c.last_context_options = o;
    if (c.contexts == state_->script.fail_context_at)
      throw_bad_input("fake engine: scripted failure of context {}", c.contexts);
    if (o.n_ctx < 0 || o.n_threads < 1 || o.n_batch < 1 || o.n_ubatch < 1)
      throw_bad_input("fake engine: invalid context options (n_ctx {}, threads {}, batch {}/{})", o.n_ctx,
                      o.n_threads, o.n_batch, o.n_ubatch);
    if (!state_->script.cpu_placement && (!o.cpu_mask.empty() || o.cpu_strict))
      throw_bad_input("fake engine: asked to place threads though it says it cannot");
    return std::make_unique<FakeContext>(state_, o.n_ctx > 0 ? o.n_ctx : state_->script.n_ctx_train, o.tail_states);
  }

 private:
  std::shared_ptr<State> state_;
  ModelOptions options_;
};

}  // namespace

FakeEngine::FakeEngine(FakeScript script) : state_(std::make_shared<State>()) { state_->script = std::move(script); }

Capabilities FakeEngine::capabilities() const {
  Capabilities c;
  c.kv_state = state_->script.kv_state;
  c.kv_tail = state_->script.kv_state;
  c.context_shift = state_->script.context_shift;
  c.cpu_placement = state_->script.cpu_placement;
  c.per_token_timing = true;
  return c;
}

nlohmann::json FakeEngine::provenance() const {
  return {{"name", name()},
          {"kind", "scripted"},
          {"prefill_ms_per_token", state_->script.prefill_ms_per_token},
          {"decode_ms_per_step", state_->script.decode_ms_per_step},
          {"capabilities", capabilities().to_json()}};
}

std::unique_ptr<LoadedModel> FakeEngine::load(const ModelOptions& options) {
  ++state_->counters.loads;
  if (auto it = state_->script.fail_load.find(options.path); it != state_->script.fail_load.end())
    throw Error(it->second.kind, it->second.message);
  return std::make_unique<FakeModel>(state_, options);
}

const FakeCounters& FakeEngine::counters() const { return state_->counters; }

}  // namespace edgeprobe::engine
