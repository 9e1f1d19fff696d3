#pragma once
#include <atomic>
#include <functional>
#include <mutex>
#include <memory>
#include <optional>
#include <string>

#include "engine/engine.h"
#include "kv/handshake.h"
#include "kv/net.h"

// The prefill node: one loaded model; per connection a context of the client's size,
// fed the client's new tokens, answering each request with the greedy next token and the
// sequence state (whole, or the tail the client lacks). Up to max_clients decode nodes are
// served at once, each on its own thread and context (a lab's phones sharing one prefill
// box); one more is told the server is busy and falls back to its own prefill. Every read
// has a deadline, so a stalled or hostile peer only costs its own connection.
// Handshakes take no slot: one thread runs every connection's handshake at once (up to
// kMaxPendingHandshakes, each bounded in bytes and in time from its accept), so
// connections that trickle or sit silent cannot keep an honest client from its place.
namespace edgeprobe::kv {

struct ServerOptions {
  Endpoint listen{"127.0.0.1", 0};
  std::string token;
  engine::ContextOptions
      context;  // threads, placement, KV types, flash attention; n_ctx = the largest a client may ask
  int timeout_ms = 10000;        // within a frame; and the whole handshake, from the accept
  int idle_timeout_ms = 600000;  // between a client's requests
  Limits limits;
  int max_connections = -1;  // -1: serve until stopped
  int max_clients = 4;       // connections served at once; each holds a context of its size
};

// Beyond: the oldest is dropped. Fewer where the process may open fewer descriptors
// (a soft `nofile` limit of 1024 is common), so accepting never runs out of them.
inline constexpr size_t kMaxPendingHandshakes = 1024;
inline constexpr uint64_t kMaxAuthBytes = 16 << 10;      // an auth frame is a few hundred bytes

class KvServer {
 public:
  // `fingerprint` is the model's (make_fingerprint); the server's context settings are
  // filled in from options.context.
  KvServer(const engine::LoadedModel& model, const Fingerprint& fingerprint, ServerOptions options,
           std::function<void(const std::string&)> log);
  int port() const { return listener_.port(); }
  // Serves until `stop` is set or max_connections have been served.
  void serve(const std::function<bool()>& stop);

 private:
  struct Handshake;  // a connection between its accept and its auth frame
  struct Authenticated {
    int n_ctx = 0;
    std::string client_nonce;
  };
  Handshake start_handshake(Socket socket, int number);
  // Reads what arrived; the client's settings once its auth frame checked out, nullopt
  // while it is incomplete. Throws for anything else.
  std::optional<Authenticated> read_auth(Handshake& h);
  void refuse(Socket& socket, int number, const std::string& why);
  void serve_requests(Socket& socket, int n_ctx, const std::function<bool()>& stop);
  void log(const std::string& line);

  const engine::LoadedModel& model_;
  Fingerprint fingerprint_;
  ServerOptions options_;
  std::function<void(const std::string&)> log_;
  std::mutex log_mutex_;  // connections log from their own threads
  Listener listener_;
  size_t max_pending_ = kMaxPendingHandshakes;  // handshakes at once, within the descriptors
};

}  // namespace edgeprobe::kv
