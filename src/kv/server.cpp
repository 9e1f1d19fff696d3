#include "kv/server.h"

#include <algorithm>
#include <chrono>
#include <list>
#include <thread>

#include "core/error.h"

namespace edgeprobe::kv {
namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

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
}

void KvServer::log(const std::string& line) {
  std::lock_guard lock(log_mutex_);
  log_(line);
}

void KvServer::serve(const std::function<bool()>& stop) {
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
  int served = 0;
  while (!stop() && (options_.max_connections < 0 || served < options_.max_connections)) {
    Socket socket = listener_.accept(200);
    reap();
    if (!socket.valid()) continue;
    ++served;
    if (static_cast<int>(workers.size()) >= options_.max_clients) {
      // Told at once, so the decode node falls back now instead of at its read deadline.
      const std::string why = fmt::format("the kv server is busy: it serves {} clients already (--max-clients)",
                                          options_.max_clients);
      log(fmt::format("connection {}: refused, {}", served, why));
      try {
        send_json(socket, FrameType::kError, {{"message", why}}, 1000);
      } catch (const std::exception&) {
      }
      continue;
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    workers.push_back({std::thread([this, s = std::move(socket), served, done, &stop]() mutable {
                         serve_connection(s, served, stop);
                         done->store(true);
                       }),
                       done});
  }
  for (auto& w : workers) w.thread.join();  // each ends at its client's close, an error or `stop`
}

void KvServer::serve_connection(Socket& socket, int number, const std::function<bool()>& stop) {
  try {
    handle(socket, stop);
  } catch (const std::exception& e) {
    // The peer is told why when the socket still works; the server goes on either way.
    log(fmt::format("connection {}: {}", number, e.what()));
    try {
      send_json(socket, FrameType::kError, {{"message", e.what()}}, 1000);
    } catch (const std::exception&) {
    }
  }
}

void KvServer::handle(Socket& socket, const std::function<bool()>& stop) {
  const int timeout = options_.timeout_ms;
  const std::string nonce = new_nonce();
  send_json(socket, FrameType::kWelcome, {{"protocol", kProtocolVersion}, {"nonce", nonce}}, timeout);
  const auto auth = receive_json(socket, FrameType::kAuth, options_.limits, timeout);
  if (!auth.contains("mac") || !auth["mac"].is_string() ||
      !same_mac(auth["mac"].get<std::string>(), token_mac(options_.token, "client", nonce)))
    throw_bad_input("authentication failed: wrong token");
  if (!auth.contains("nonce") || !auth["nonce"].is_string() || auth["nonce"].get<std::string>().size() != 64)
    throw_bad_input("authentication failed: the client sent no nonce");
  const Fingerprint client = Fingerprint::from_json(auth.value("fingerprint", nlohmann::json::object()));
  if (const auto mismatch = fingerprint_mismatch(fingerprint_, client); !mismatch.empty())
    throw_bad_input("the nodes' states are not interchangeable: {}", mismatch);
  if (client.n_ctx < 1) throw_bad_input("the client asked for a context of {} tokens", client.n_ctx);
  send_json(socket, FrameType::kReady,
            {{"mac", token_mac(options_.token, "server", auth["nonce"].get<std::string>())},
             {"fingerprint", fingerprint_.to_json()}},
            timeout);
  log(fmt::format("client authenticated, context of {} tokens", client.n_ctx));
  serve_requests(socket, client.n_ctx, stop);
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
