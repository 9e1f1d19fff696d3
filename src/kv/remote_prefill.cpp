#include "kv/remote_prefill.h"

#include <chrono>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/text.h"
#include "kv/protocol.h"

namespace edgeprobe::kv {
namespace {

using Clock = std::chrono::steady_clock;

// A context whose decode() of a prompt goes to the server. It keeps the sequence's token
// history, so a later turn sends the server what it has not seen (this node's decoded
// reply and the new turn) and a lost connection can be rebuilt from position 0.
class RemotePrefillContext : public engine::Context {
 public:
  RemotePrefillContext(std::unique_ptr<engine::Context> inner, const RemotePrefillOptions& options,
                       Fingerprint fingerprint, std::shared_ptr<PrefillLog> log, bool send_tail)
      : inner_(std::move(inner)),
        options_(options),
        fingerprint_(std::move(fingerprint)),
        log_(std::move(log)),
        send_tail_(send_tail) {}

  void decode(const std::vector<engine::Token>& tokens, bool logits_for_last) override {
    PrefillRecord rec;
    rec.tokens = static_cast<int>(tokens.size());
    std::optional<engine::Token> local_first;
    if (options_.compare_local && history_known_) local_first = prefill_for_comparison(tokens, rec);
    const auto t0 = Clock::now();
    pending_.reset();
    try {
      if (!history_known_)
        throw_environment("the cache was restored from a snapshot whose tokens are unknown");
      remote(tokens, rec);
      rec.mode = "remote";
    } catch (const std::exception& e) {
      client_.reset();
      synced_ = 0;
      const std::string server = options_.client.server.to_string();
      // The reason can hold a peer's own words (its error frame): one bounded, escaped line
      // wherever it goes (stderr, the table, the store).
      const std::string reason = one_line(e.what());
      if (options_.required)
        throw_environment("the remote prefill at {} failed and --prefill-remote-required forbids a local one: {}; {}",
                          server, reason, fallback_advice(reason, server));
      // Whatever the failed attempt had timed is not a figure of this prefill.
      PrefillRecord fallback;
      fallback.tokens = rec.tokens;
      fallback.local_prefill_ms = rec.local_prefill_ms;
      rec = std::move(fallback);
      rec.mode = "local";
      rec.fallback_reason = reason;
      local(tokens, logits_for_last);
    }
    rec.ttft_ms = ms_since(t0);
    if (local_first && pending_) rec.first_token_matches_local = *local_first == *pending_;
    history_.insert(history_.end(), tokens.begin(), tokens.end());
    rec.n_past = inner_->n_past();
    if (log_) log_->add(rec);
  }

  void decode_one(engine::Token token) override {
    pending_.reset();
    inner_->decode_one(token);
    history_.push_back(token);
  }
  void clear() override {
    inner_->clear();
    history_.clear();
    synced_ = 0;  // the next request starts at 0, which clears the server's cache too
    history_known_ = true;
    pending_.reset();
  }
  int32_t n_ctx() const override { return inner_->n_ctx(); }
  int32_t n_past() const override { return inner_->n_past(); }
  engine::Token argmax_last() const override { return pending_ ? *pending_ : inner_->argmax_last(); }
  bool shift(int n_keep, int n_discard) override {
    if (!inner_->shift(n_keep, n_discard)) return false;
    const auto begin = history_.begin() + std::min<size_t>(history_.size(), static_cast<size_t>(n_keep));
    const auto end =
        history_.begin() + std::min<size_t>(history_.size(), static_cast<size_t>(n_keep + n_discard));
    history_.erase(begin, end);
    synced_ = 0;  // the server's positions no longer match: resend from the start
    return true;
  }
  std::vector<uint8_t> save_state() const override {
    auto state = inner_->save_state();
    snapshot_ = {checksum(state.data(), state.size()), history_};
    return state;
  }
  bool restore_state(const std::vector<uint8_t>& state) override {
    if (!inner_->restore_state(state)) return false;
    // The runner restores what it saved (a depth fill): its tokens are known then.
    history_known_ = snapshot_ && snapshot_->first == checksum(state.data(), state.size());
    history_ = history_known_ ? snapshot_->second : std::vector<engine::Token>{};
    synced_ = 0;
    pending_.reset();
    return true;
  }

 private:
  void remote(const std::vector<engine::Token>& tokens, PrefillRecord& rec) {
    if (!client_) {
      const auto c0 = Clock::now();
      Fingerprint mine = fingerprint_;
      mine.n_ctx = inner_->n_ctx();
      client_ = std::make_unique<KvClient>(options_.client, mine);
      rec.connect_ms = ms_since(c0);
      synced_ = 0;
    }
    if (synced_ > history_.size()) synced_ = 0;  // never trust a stale position: resend all
    std::vector<engine::Token> send(history_.begin() + static_cast<std::ptrdiff_t>(synced_), history_.end());
    send.insert(send.end(), tokens.begin(), tokens.end());
    rec.tokens_sent = static_cast<int>(send.size());
    const bool ask_tail = send_tail_ && synced_ > 0;
    PrefillReply reply = client_->prefill(static_cast<int>(synced_), send, ask_tail);
    synced_ = history_.size() + tokens.size();
    const auto r0 = Clock::now();
    if (reply.tail_from) {
      if (!inner_->restore_tail(reply.state, *reply.tail_from))
        throw_environment("the engine refused to append the server's cells from position {}", *reply.tail_from);
    } else if (!inner_->restore_state(reply.state)) {
      throw_environment("llama.cpp refused the restored sequence state");
    }
    rec.restore_ms = ms_since(r0);
    rec.transfer = reply.tail_from ? "tail" : "whole";
    const size_t state_bytes = reply.state.size();
    if (inner_->n_past() != reply.n_past)
      throw_environment("the restored cache holds {} tokens, the server's {}", inner_->n_past(),
                        reply.n_past);
    // The first token comes with the state: the server's greedy pick on its logits.
    const auto f0 = Clock::now();
    pending_ = reply.argmax;
    rec.first_token_ms = ms_since(f0);
    rec.remote_prefill_ms = reply.remote_prefill_ms;
    rec.serialize_ms = reply.serialize_ms;
    rec.transfer_ms = std::max(0.0, reply.round_trip_ms - reply.remote_prefill_ms - reply.serialize_ms);
    rec.state_bytes = state_bytes;
    const int cells = reply.n_past - reply.tail_from.value_or(0);
    if (cells > 0) rec.kv_bytes_per_token = static_cast<double>(state_bytes) / cells;
    if (reply.state_receive_ms > 0)
      rec.link_mbit_s = static_cast<double>(state_bytes) * 8 / 1e6 / (reply.state_receive_ms / 1e3);
    client_->recycle(std::move(reply.state));
  }

  // After a failed remote path the local cache may hold a half-restored state: it is
  // rebuilt from the history before this call's tokens are prefilled here.
  void local(const std::vector<engine::Token>& tokens, bool logits_for_last) {
    if (history_known_ && inner_->n_past() != static_cast<int32_t>(history_.size())) {
      inner_->clear();
      if (!history_.empty()) inner_->decode(history_);
    }
    inner_->decode(tokens, logits_for_last);
  }

  // The same tokens prefilled here first, timed apart; the remote state then replaces
  // this cache whole. Returns the local greedy pick.
  engine::Token prefill_for_comparison(const std::vector<engine::Token>& tokens, PrefillRecord& rec) {
    const auto t0 = Clock::now();
    local(tokens, true);
    const engine::Token first = inner_->argmax_last();
    rec.local_prefill_ms = ms_since(t0);
    return first;
  }

  std::unique_ptr<engine::Context> inner_;
  const RemotePrefillOptions& options_;
  Fingerprint fingerprint_;
  std::shared_ptr<PrefillLog> log_;
  std::unique_ptr<KvClient> client_;
  std::vector<engine::Token> history_;
  bool history_known_ = true;
  size_t synced_ = 0;  // history tokens the server's cache holds
  std::optional<engine::Token> pending_;
  mutable std::optional<std::pair<uint32_t, std::vector<engine::Token>>> snapshot_;
  bool send_tail_;  // asked for and appendable here (the inner engine has kv_tail)
};

class RemotePrefillModel : public engine::LoadedModel {
 public:
  RemotePrefillModel(std::unique_ptr<engine::LoadedModel> inner, const RemotePrefillOptions& options,
                     std::shared_ptr<PrefillLog> log, bool inner_has_tail)
      : inner_(std::move(inner)),
        options_(options),
        log_(std::move(log)),
        send_tail_(options.send_tail && inner_has_tail) {}

  const engine::ModelOptions& options() const override { return inner_->options(); }
  std::vector<engine::Token> tokenize(const std::string& text, bool add_special) const override {
    return inner_->tokenize(text, add_special);
  }
  std::string token_to_piece(engine::Token token) const override { return inner_->token_to_piece(token); }
  bool is_end_of_generation(engine::Token token) const override {
    return inner_->is_end_of_generation(token);
  }
  int32_t n_vocab() const override { return inner_->n_vocab(); }
  engine::Token bos_token() const override { return inner_->bos_token(); }
  bool adds_bos() const override { return inner_->adds_bos(); }
  std::string description() const override { return inner_->description(); }
  uint64_t size_bytes() const override { return inner_->size_bytes(); }
  uint64_t n_params() const override { return inner_->n_params(); }
  std::string chat_template() const override { return inner_->chat_template(); }
  std::string apply_chat_template(const std::vector<engine::ChatMessage>& messages, bool add_assistant,
                                  bool* used_fallback) const override {
    return inner_->apply_chat_template(messages, add_assistant, used_fallback);
  }
  std::unique_ptr<engine::Context> new_context(const engine::ContextOptions& options) const override {
    // Hashing the file once per model, on the first context: the fingerprint's costliest part.
    if (!fingerprint_)
      fingerprint_ =
          options_.fingerprint ? *options_.fingerprint : make_fingerprint(inner_->options().path, options);
    engine::ContextOptions mine = options;
    mine.tail_states = send_tail_;  // room to append a tail (save_tail/restore_tail)
    return std::make_unique<RemotePrefillContext>(inner_->new_context(mine), options_,
                                                  with_context(*fingerprint_, options), log_, send_tail_);
  }

 private:
  std::unique_ptr<engine::LoadedModel> inner_;
  const RemotePrefillOptions& options_;
  std::shared_ptr<PrefillLog> log_;
  bool send_tail_;
  mutable std::optional<Fingerprint> fingerprint_;
};

}  // namespace

nlohmann::json PrefillRecord::to_json() const {
  nlohmann::json j = {{"mode", mode}, {"tokens", tokens}, {"n_past", n_past}, {"ttft_ms", ttft_ms}};
  auto put = [&j](const char* key, const auto& value) {
    if (value) j[key] = *value;
  };
  put("transfer", transfer);
  put("tokens_sent", tokens_sent);
  put("connect_ms", connect_ms);
  put("remote_prefill_ms", remote_prefill_ms);
  put("serialize_ms", serialize_ms);
  put("transfer_ms", transfer_ms);
  put("restore_ms", restore_ms);
  put("first_token_ms", first_token_ms);
  put("state_bytes", state_bytes);
  put("kv_bytes_per_token", kv_bytes_per_token);
  put("link_mbit_s", link_mbit_s);
  if (!fallback_reason.empty()) j["fallback_reason"] = fallback_reason;
  put("local_prefill_ms", local_prefill_ms);
  put("first_token_matches_local", first_token_matches_local);
  return j;
}

std::string fallback_advice(const std::string& reason, const std::string& server) {
  auto has = [&reason](const char* s) { return reason.find(s) != std::string::npos; };
  if (has("cannot connect") || has("cannot resolve"))
    return fmt::format("is kv-serve running there? start it with `edgeprobe kv-serve -m MODEL --listen {}`", server);
  if (has("token"))
    return "check the token: both nodes need the same one (EDGEPROBE_KV_TOKEN or --prefill-token-file here, "
           "--token-file on kv-serve)";
  if (has("not interchangeable"))
    return "give both nodes the same model file and the same -ctk/-ctv/-fa";
  if (has("busy")) return "the server is serving --max-clients decode nodes already; start it with a higher --max-clients";
  return "kv-serve's own log on that node says more";
}

void PrefillLog::add(PrefillRecord record) {
  std::lock_guard lock(mutex_);
  last_ = std::move(record);
}

std::optional<PrefillRecord> PrefillLog::take_last() {
  std::lock_guard lock(mutex_);
  auto out = std::move(last_);
  last_.reset();
  return out;
}

nlohmann::json RemotePrefillEngine::provenance() const {
  auto p = inner_.provenance();
  p["prefill_remote"] = options_.client.server.to_string();
  return p;
}

std::unique_ptr<engine::LoadedModel> RemotePrefillEngine::load(const engine::ModelOptions& options) {
  return std::make_unique<RemotePrefillModel>(inner_.load(options), options_, log_, inner_.capabilities().kv_tail);
}

}  // namespace edgeprobe::kv
