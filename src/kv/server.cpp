#include "kv/server.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <list>
#include <thread>
#include <utility>

#include "core/clock.h"
#include "core/error.h"
#include "core/text.h"
#include "core/stop_token.h"

namespace edgeprobe::kv {
namespace {


// What the client asked to prefill, checked against the context before llama.cpp sees it.
struct PrefillRequest {
  int start = 0;
  std::vector<engine::Token> tokens;
  bool tail = false;  // the client holds the first `start` positions: send only the rest
};

PrefillRequest parse_request(const nlohmann::json& j, int n_vocab, int n_ctx) {
  PrefillRequest r;
  try {
    r.start = j.at("start").get<int>();
    r.tokens = j.at("tokens").get<std::vector<engine::Token>>();
    r.tail = j.value("tail", false);
  } catch (const nlohmann::json::exception& e) {
    throw_bad_input("malformed prefill request: {}", e.what());
  }
  if (r.tokens.empty()) throw_bad_input("a prefill request needs at least one token");
  if (r.start < 0 || static_cast<int64_t>(r.start) + static_cast<int64_t>(r.tokens.size()) > n_ctx)
    throw_bad_input("prefill of {} tokens at {} does not fit the context of {}", r.tokens.size(), r.start,
                    n_ctx);
  for (const auto t : r.tokens)
    if (t < 0 || t >= n_vocab) throw_bad_input("token {} is outside the vocabulary of {}", t, n_vocab);
  return r;
}

}  // namespace

KvServer::KvServer(const engine::LoadedModel& model, const Fingerprint& fingerprint, ServerOptions options,
                   std::function<void(const std::string&)> log)
    : model_(model),
      fingerprint_(with_context(fingerprint, options.context)),
      options_(std::move(options)),
      log_(std::move(log)),
      listener_(options_.listen) {
  if (options_.token.empty()) throw_bad_input("the kv server needs a shared-secret token");
  if (options_.max_clients < 1) throw_bad_input("--max-clients {} must be at least 1", options_.max_clients);
  // Every pending handshake and served client holds a descriptor; a reserve stays for the
  // clients' sockets and anything else that opens a file (a log, a library), so that an
  // accept does not fail while handshakes hold them all.
  const size_t available = raise_descriptor_limit();
  const size_t reserve = static_cast<size_t>(options_.max_clients) + 16;
  max_pending_ = std::clamp<size_t>(available > reserve ? available - reserve : 1, 1, kMaxPendingHandshakes);
  if (max_pending_ < kMaxPendingHandshakes)
    this->log(fmt::format("at most {} handshakes at once: {} more descriptors may be opened (ulimit -n)", max_pending_,
                          available));
}

void KvServer::log(const std::string& line) {
  std::lock_guard lock(log_mutex_);
  log_(line);
}

struct KvServer::Handshake {
  Socket socket;
  int number = 0;
  std::string nonce;
  FrameParser parser;
  std::chrono::steady_clock::time_point deadline;
};

KvServer::Handshake KvServer::start_handshake(Socket socket, int number) {
  Limits auth_limits = options_.limits;
  auth_limits.max_control_bytes = std::min<uint64_t>(auth_limits.max_control_bytes, kMaxAuthBytes);
  Handshake h{std::move(socket), number, new_nonce(), FrameParser(auth_limits),
              std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.timeout_ms)};
  // A fresh connection's send buffer takes the small welcome at once.
  send_json(h.socket, FrameType::kWelcome, {{"protocol", kProtocolVersion}, {"nonce", h.nonce}}, 1000);
  return h;
}

std::optional<KvServer::Authenticated> KvServer::read_auth(Handshake& h) {
  uint8_t buf[4096];
  const ssize_t n = ::recv(h.socket.fd(), buf, sizeof(buf), MSG_DONTWAIT);
  if (n == 0) throw_environment("kv peer closed the connection during the handshake");
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return std::nullopt;
    throw_environment("kv connection lost during the handshake: {}", std::strerror(errno));
  }
  h.parser.feed(buf, static_cast<size_t>(n));
  const auto frame = h.parser.next();  // the header is checked (magic, version, length) as soon as it is in
  if (!frame) return std::nullopt;
  if (frame->type == FrameType::kError) throw_environment("kv peer refused: {}", error_message(*frame));
  if (frame->type != FrameType::kAuth)
    throw_bad_input("expected an auth frame, got a {} frame", frame_type_name(frame->type));
  if (h.parser.buffered() > 0) throw_bad_input("the client sent more than its auth frame before the server's ready");
  const auto auth = frame->json();
  if (!auth.contains("protocol") || auth["protocol"] != kProtocolVersion)
    throw_bad_input("the client speaks kv protocol {}, this server {}: use the same edgeprobe on both nodes",
                    auth.contains("protocol") && auth["protocol"].is_number() ? auth["protocol"].dump() : "(none)",
                    kProtocolVersion);
  if (!auth.contains("nonce") || !auth["nonce"].is_string() || auth["nonce"].get<std::string>().size() != 64)
    throw_bad_input("authentication failed: the client sent no nonce");
  const Fingerprint client = Fingerprint::from_json(auth.value("fingerprint", nlohmann::json::object()));
  if (!auth.contains("mac") || !auth["mac"].is_string() ||
      !same_mac(auth["mac"].get<std::string>(), token_mac(options_.token, "client", h.nonce, client)))
    throw_bad_input("authentication failed: wrong token (or the client's fingerprint was altered on the way)");
  if (const auto mismatch = fingerprint_mismatch(fingerprint_, client); !mismatch.empty())
    throw_bad_input("the nodes' states are not interchangeable: {}", mismatch);
  if (client.n_ctx < 1) throw_bad_input("the client asked for a context of {} tokens", client.n_ctx);
  return Authenticated{client.n_ctx, auth["nonce"].get<std::string>()};
}

void KvServer::refuse(Socket& socket, int number, const std::string& why) {
  // The peer is told why when the socket still works; the server goes on either way.
  log(fmt::format("connection {}: {}", number, one_line(why, 400)));
  try {
    send_json(socket, FrameType::kError, {{"message", one_line(why, 400)}}, 100);
  } catch (const std::exception&) {
  }
}

void KvServer::serve(const std::function<bool()>& stop) {
  const ProcessStopWatch watching;  // the loop sees a Ctrl-C within its 200 ms poll
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::list<Worker> workers;
  auto reap = [&workers] {
    for (auto it = workers.begin(); it != workers.end();) {
      if (!it->done->load()) {
        ++it;
        continue;
      }
      it->thread.join();
      it = workers.erase(it);
    }
  };
  std::list<Handshake> handshakes;
  auto drop_oldest = [&](const std::string& why) {
    refuse(handshakes.front().socket, handshakes.front().number, why);
    handshakes.pop_front();
  };
  int served = 0;
  // Out of descriptors with no handshake to drop (clients hold them all): the queued
  // connection would keep the listener readable, so it is left unpolled a while instead
  // of polled in a spin.
  auto accept_paused_until = std::chrono::steady_clock::time_point{};
  bool starved = false;  // said once per episode, not every 100 ms
  for (;;) {
    reap();
    if (stop()) break;  // handshakes in progress are dropped (their sockets close)
    const bool more = options_.max_connections < 0 || served < options_.max_connections;
    if (!more && handshakes.empty()) break;
    const bool accepting = more && std::chrono::steady_clock::now() >= accept_paused_until;
    // One poll for the listener and every handshake; it wakes for the nearest deadline too.
    std::vector<pollfd> fds;
    if (accepting) fds.push_back({listener_.fd(), POLLIN, 0});
    auto wake = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    for (const auto& h : handshakes) {
      fds.push_back({h.socket.fd(), POLLIN, 0});
      wake = std::min(wake, h.deadline);
    }
    const auto wait_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(wake - std::chrono::steady_clock::now()).count();
    ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<int64_t>(wait_ms + 1, 1, 200)));
    size_t k = accepting ? 1 : 0;
    const auto now = std::chrono::steady_clock::now();
    for (auto it = handshakes.begin(); it != handshakes.end(); ++k) {
      bool finished = true;
      try {
        std::optional<Authenticated> a;
        if (fds[k].revents) a = read_auth(*it);
        if (a) {
          if (static_cast<int>(workers.size()) >= options_.max_clients)
            throw_environment("the kv server is busy: it serves {} clients already (--max-clients)",
                              options_.max_clients);
          send_json(it->socket, FrameType::kReady,
                    {{"mac", token_mac(options_.token, "server", a->client_nonce, fingerprint_)},
                     {"fingerprint", fingerprint_.to_json()}},
                    options_.timeout_ms);
          log(fmt::format("client authenticated, context of {} tokens", a->n_ctx));
          auto done = std::make_shared<std::atomic<bool>>(false);
          workers.push_back({std::thread([this, s = std::move(it->socket), number = it->number, n_ctx = a->n_ctx,
                                          done, &stop]() mutable {
                               try {
                                 serve_requests(s, n_ctx, stop);
                               } catch (const std::exception& e) {
                                 refuse(s, number, e.what());
                               }
                               done->store(true);
                             }),
                             done});
        } else if (now >= it->deadline) {
          throw_environment("the client stalled: no complete auth frame within {} ms of connecting; closed",
                            options_.timeout_ms);
        } else {
          finished = false;
        }
      } catch (const std::exception& e) {
        refuse(it->socket, it->number, e.what());
      }
      it = finished ? handshakes.erase(it) : std::next(it);
    }
    if (accepting && (fds[0].revents & POLLIN)) {
      // Everything waiting, so that a flood of connections does not overflow the backlog.
      while (options_.max_connections < 0 || served < options_.max_connections) {
        int error = 0;
        Socket socket = listener_.accept(0, &error);
        if (!socket.valid() && (error == EMFILE || error == ENFILE)) {
          if (handshakes.empty()) {
            if (!std::exchange(starved, true)) log("out of descriptors, all held by clients: new connections wait");
            accept_paused_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
            break;
          }
          drop_oldest("dropped: the server is out of descriptors (ulimit -n)");
          continue;
        }
        if (!socket.valid()) break;
        starved = false;
        const int number = ++served;
        if (handshakes.size() >= max_pending_)
          drop_oldest(fmt::format("dropped: {} handshakes in progress at once", max_pending_));
        try {
          handshakes.push_back(start_handshake(std::move(socket), number));
        } catch (const std::exception& e) {
          log(fmt::format("connection {}: {}", number, one_line(e.what(), 400)));
        }
      }
    }
  }
  for (auto& w : workers) w.thread.join();  // each ends at its client's close, an error or `stop`
}

void KvServer::serve_requests(Socket& socket, int n_ctx, const std::function<bool()>& stop) {
  engine::ContextOptions co = options_.context;
  co.n_ctx = n_ctx;
  co.tail_states = true;  // a later turn's cells alone can be sent (save_tail)
  const auto ctx = model_.new_context(co);
  for (;;) {
    // The first byte of the next request may take a whole turn's decoding; the rest of
    // it must come promptly. The wait is cut in slices so that a stop ends it.
    auto wait = Socket::Wait::kTimeout;
    for (int waited = 0; wait == Socket::Wait::kTimeout && waited < options_.idle_timeout_ms; waited += 200) {
      if (stop()) return;
      wait = socket.wait_readable(std::min(200, options_.idle_timeout_ms - waited));
    }
    if (wait == Socket::Wait::kClosed) return;
    if (wait == Socket::Wait::kTimeout)
      throw_environment("the client sent no request for {} ms; closing", options_.idle_timeout_ms);
    const Frame frame = receive_frame(socket, options_.limits, options_.timeout_ms);
    if (frame.type != FrameType::kPrefill)
      throw_bad_input("expected a prefill frame, got a {} frame", frame_type_name(frame.type));
    const auto request = parse_request(frame.json(), model_.n_vocab(), n_ctx);
    if (request.start == 0) ctx->clear();
    if (request.start != ctx->n_past())
      throw_bad_input("out of sync: the request continues at {}, this cache holds {} tokens", request.start,
                      ctx->n_past());

    const auto t0 = std::chrono::steady_clock::now();
    ctx->decode(request.tokens, true);
    const engine::Token next = ctx->argmax_last();
    const double prefill_ms = ms_since(t0);
    const auto t1 = std::chrono::steady_clock::now();
    // A tail when asked and possible (an engine without it sends the whole state, and
    // says so by leaving out tail_from).
    std::vector<uint8_t> state;
    const bool tail = request.tail && request.start > 0;
    if (tail) state = ctx->save_tail(request.start);
    const bool sent_tail = !state.empty();
    if (!sent_tail) state = ctx->save_state();
    const uint32_t crc = checksum(state.data(), state.size());
    const double serialize_ms = ms_since(t1);
    if (state.empty()) throw_environment("the engine returned an empty sequence state");
    nlohmann::json head = {{"n_past", ctx->n_past()},
                           {"argmax", next},
                           {"prefill_ms", prefill_ms},
                           {"serialize_ms", serialize_ms},
                           {"state_bytes", state.size()}};
    if (sent_tail) head["tail_from"] = request.start;
    send_json(socket, FrameType::kPrefilled, head, options_.timeout_ms);
    send_frame(socket, FrameType::kState, state.data(), state.size(), crc, options_.timeout_ms);
  }
}

}  // namespace edgeprobe::kv
