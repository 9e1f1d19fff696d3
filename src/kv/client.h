#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "kv/handshake.h"
#include "kv/net.h"

// The decode node's side of the link: connects, proves the token, checks the server's
// fingerprint against its own, then asks for prefills.
namespace edgeprobe::kv {

struct ClientOptions {
  Endpoint server;
  std::string token;
  int connect_timeout_ms = 3000;
  int timeout_ms = 10000;  // within a frame; a prefill may take longer (prefill_timeout_ms)
  int prefill_timeout_ms = 300000;
};

struct PrefillReply {
  int n_past = 0;
  engine::Token argmax = 0;
  double remote_prefill_ms = 0;  // the server's own timings
  double serialize_ms = 0;
  double round_trip_ms = 0;     // request sent -> state received and checked, on this node
  double state_receive_ms = 0;  // the state frame alone: what the link's throughput is measured on
  std::optional<int> tail_from;  // the state holds positions from here on only (a tail)
  std::vector<uint8_t> state;
};

class KvClient {
 public:
  // Connects and handshakes; throws Error(kEnvironment) with the reason.
  KvClient(ClientOptions options, const Fingerprint& mine);
  const Fingerprint& server_fingerprint() const { return server_; }
  double connect_ms() const { return connect_ms_; }
  // The server's cache must hold exactly `start` tokens of this sequence (0 clears it).
  // With `tail`, this node holds those `start` positions and asks for the cells after them
  // only; a server that cannot cut a tail sends the whole state (tail_from unset).
  PrefillReply prefill(int start, const std::vector<engine::Token>& tokens, bool tail = false);
  // Hands a reply's state buffer back once restored: the next state is received into it.
  void recycle(std::vector<uint8_t>&& buffer) { buffer_ = std::move(buffer); }

 private:
  ClientOptions options_;
  Fingerprint mine_, server_;
  Socket socket_;
  double connect_ms_ = 0;
  std::vector<uint8_t> buffer_;
};

// The most bytes a state of n tokens of this model can take (f32 K and V in every layer,
// plus the per-cell bookkeeping): the bound a client puts on the server's state frame.
uint64_t max_state_bytes(const Fingerprint& f, int n_tokens);

}  // namespace edgeprobe::kv
