#include "kv/client.h"

#include <chrono>

#include "core/clock.h"
#include "core/error.h"
#include "core/text.h"

namespace edgeprobe::kv {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

uint64_t max_state_bytes(const Fingerprint& f, int n_tokens) {
  const auto per_token = static_cast<uint64_t>(2 * f.n_layer * f.n_embd * 4 + 64);
  return (1u << 20) + per_token * static_cast<uint64_t>(std::max(1, n_tokens));
}

KvClient::KvClient(ClientOptions options, const Fingerprint& mine)
    : options_(std::move(options)), mine_(mine) {
  const auto t0 = Clock::now();
  socket_ = connect_tcp(options_.server, options_.connect_timeout_ms);
  const Limits limits;
  const auto welcome = receive_json(socket_, FrameType::kWelcome, limits, options_.timeout_ms);
  if (!welcome.contains("protocol") || welcome["protocol"] != kProtocolVersion)
    throw_environment("the kv server at {} speaks kv protocol {}, this edgeprobe {}: use the same edgeprobe on both nodes",
                      options_.server.to_string(),
                      welcome.contains("protocol") && welcome["protocol"].is_number() ? welcome["protocol"].dump() : "(none)",
                      kProtocolVersion);
  if (!welcome.contains("nonce") || !welcome["nonce"].is_string() || welcome["nonce"].get<std::string>().size() != 64)
    throw_environment("the kv server at {} sent a malformed welcome", options_.server.to_string());
  const std::string my_nonce = new_nonce();
  send_json(socket_, FrameType::kAuth,
            {{"protocol", kProtocolVersion},
             {"mac", token_mac(options_.token, "client", welcome["nonce"].get<std::string>(), mine_)},
             {"nonce", my_nonce},
             {"fingerprint", mine_.to_json()}},
            options_.timeout_ms);
  const auto ready = receive_json(socket_, FrameType::kReady, limits, options_.timeout_ms);
  server_ = Fingerprint::from_json(ready.value("fingerprint", nlohmann::json::object()));
  // The MAC covers the server's fingerprint: one a relay rewrote does not pass.
  if (!ready.contains("mac") || !ready["mac"].is_string() ||
      !same_mac(ready["mac"].get<std::string>(), token_mac(options_.token, "server", my_nonce, server_)))
    throw_environment(
        "the kv server at {} does not know the token (or its fingerprint was altered on the way)",
        options_.server.to_string());
  // The server checked; this side checks too, trusting nobody's word on compatibility.
  if (const auto mismatch = fingerprint_mismatch(server_, mine_); !mismatch.empty())
    throw_environment("the nodes' states are not interchangeable: {}", mismatch);
  connect_ms_ = ms_between(t0, Clock::now());
}

PrefillReply KvClient::prefill(int start, const std::vector<engine::Token>& tokens, bool tail) {
  PrefillReply r;
  const auto t0 = Clock::now();
  nlohmann::json request = {{"start", start}, {"tokens", tokens}};
  if (tail) request["tail"] = true;
  send_json(socket_, FrameType::kPrefill, request, options_.timeout_ms);
  const Limits limits;
  const auto head = receive_json(socket_, FrameType::kPrefilled, limits, options_.prefill_timeout_ms);
  const auto t1 = Clock::now();
  const int expect_past = start + static_cast<int>(tokens.size());
  uint64_t state_bytes = 0;
  try {
    r.n_past = head.at("n_past").get<int>();
    r.argmax = head.at("argmax").get<engine::Token>();
    r.remote_prefill_ms = head.at("prefill_ms").get<double>();
    r.serialize_ms = head.at("serialize_ms").get<double>();
    state_bytes = head.at("state_bytes").get<uint64_t>();
    if (head.contains("tail_from")) r.tail_from = head.at("tail_from").get<int>();
  } catch (const nlohmann::json::exception& e) {
    throw_environment("the kv server sent a malformed prefill answer: {}", e.what());
  }
  if (r.n_past != expect_past)
    throw_environment("the kv server's cache holds {} tokens after the prefill, {} expected", r.n_past,
                      expect_past);
  if (r.argmax < 0 || r.argmax >= mine_.n_vocab)
    throw_environment("the kv server picked token {}, outside the vocabulary", r.argmax);
  if (r.tail_from && (!tail || *r.tail_from != start))
    throw_environment("the kv server sent a tail from position {}, this node asked for {}", *r.tail_from,
                      tail ? std::to_string(start) : "the whole state");
  const int state_tokens = r.tail_from ? static_cast<int>(tokens.size()) : expect_past;  // a tail: this request's
  Limits state_limits;
  state_limits.max_state_bytes = max_state_bytes(mine_, state_tokens);
  if (state_bytes > state_limits.max_state_bytes)
    throw_environment("the kv server announces a {} of {} bytes for {} tokens, more than the {} possible",
                      r.tail_from ? "tail" : "state", state_bytes, state_tokens, state_limits.max_state_bytes);
  Frame state = receive_frame(socket_, state_limits, options_.timeout_ms, std::move(buffer_));
  const auto t2 = Clock::now();
  if (state.type != FrameType::kState)
    throw_environment("the kv server sent a {} frame, not the state", frame_type_name(state.type));
  if (state.payload.size() != state_bytes)
    throw_environment("the kv server announced {} state bytes and sent {}", state_bytes,
                      state.payload.size());
  r.state = std::move(state.payload);
  r.round_trip_ms = ms_between(t0, t2);
  r.state_receive_ms = ms_between(t1, t2);
  return r;
}

}  // namespace edgeprobe::kv
