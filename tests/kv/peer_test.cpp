// The prefill server and the decode node's client on loopback, in one process, with the
// scripted fake engine on both sides (no model file): the remote path, the session's
// history sync, the fallback, and hostile peers on either side.
#include <gtest/gtest.h>

#include <functional>
#include <sys/resource.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "core/error.h"
#include "engine/fake_engine.h"
#include "kv/client.h"
#include "kv/protocol.h"
#include "kv/remote_prefill.h"
#include "kv/server.h"
#include "support/run_process.h"

namespace edgeprobe::kv {
namespace {

using Clock = std::chrono::steady_clock;

Fingerprint fake_fingerprint() {
  Fingerprint f;
  f.model_sha256 = std::string(64, 'a');
  f.n_layer = 2;
  f.n_head_kv = 2;
  f.n_embd = 16;
  f.n_vocab = engine::FakeScript::kVocab;
  f.type_k = f.type_v = "f16";
  f.engine_commit = "fake";
  return f;
}

// A KvServer on a free loopback port, serving in a thread until the fixture ends.
class ServerThread {
 public:
  explicit ServerThread(ServerOptions options = {}) {
    options.token = options.token.empty() ? "sesame" : options.token;
    options.context.n_ctx = 1024;
    model_ = engine_.load({"fake.gguf"});
    server_ =
        std::make_unique<KvServer>(*model_, fake_fingerprint(), options, [this](const std::string& line) {
          std::lock_guard lock(mutex_);
          log_.push_back(line);
        });
    thread_ = std::thread([this] { server_->serve([this] { return stop_.load(); }); });
  }
  ~ServerThread() {
    stop_ = true;
    thread_.join();
  }
  Endpoint endpoint() const { return {"127.0.0.1", server_->port()}; }
  std::string log() {
    std::lock_guard lock(mutex_);
    std::string all;
    for (const auto& l : log_) all += l + "\n";
    return all;
  }

 private:
  engine::FakeEngine engine_;
  std::unique_ptr<engine::LoadedModel> model_;
  std::unique_ptr<KvServer> server_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<std::string> log_;
  std::thread thread_;
};

ClientOptions client_options(const Endpoint& server, const std::string& token = "sesame") {
  ClientOptions o;
  o.server = server;
  o.token = token;
  o.timeout_ms = 2000;
  o.prefill_timeout_ms = 5000;
  return o;
}

Fingerprint client_fingerprint() {
  auto f = fake_fingerprint();
  f.n_ctx = 512;
  return f;
}

using test_support::error_message;

// The decode node of these tests: the fake engine behind a remote-prefill decorator whose
// options `tweak` adjusts, logging each prefill; contexts of 512 tokens (within the server's).
struct DecodeNode {
  engine::FakeEngine inner;
  std::shared_ptr<PrefillLog> log = std::make_shared<PrefillLog>();
  std::unique_ptr<RemotePrefillEngine> remote;
  std::unique_ptr<engine::LoadedModel> model;

  DecodeNode(const Endpoint& server, const std::function<void(RemotePrefillOptions&)>& tweak = {}) {
    RemotePrefillOptions o;
    o.client = client_options(server);
    o.fingerprint = fake_fingerprint();
    if (tweak) tweak(o);
    remote = std::make_unique<RemotePrefillEngine>(inner, o, log);
    model = remote->load({"fake.gguf"});
  }
  std::unique_ptr<engine::Context> context() const {
    engine::ContextOptions co;
    co.n_ctx = 512;
    return model->new_context(co);
  }
};

// The state of a local fake context that prefilled these tokens in one call.
std::vector<uint8_t> local_state_of(const std::vector<engine::Token>& tokens) {
  engine::FakeEngine local;
  auto ctx = local.load({"fake.gguf"})->new_context({});
  ctx->decode(tokens, true);
  return ctx->save_state();
}

TEST(KvPeer, PrefillReturnsTheStateAndTheGreedyPick) {
  ServerThread server;
  KvClient client(client_options(server.endpoint()), client_fingerprint());
  const std::vector<engine::Token> prompt{engine::FakeScript::kBos, 'h', 'i'};
  const auto reply = client.prefill(0, prompt);
  EXPECT_EQ(reply.n_past, 3);
  EXPECT_EQ(reply.argmax, 'f');  // the fake's scripted reply starts "fake reply"
  // The state restores into a local context: the same cache the server holds.
  engine::FakeEngine local;
  auto ctx = local.load({"fake.gguf"})->new_context({});
  ASSERT_TRUE(ctx->restore_state(reply.state));
  EXPECT_EQ(ctx->n_past(), 3);
  // A continuation at the right position works; one at the wrong position is refused.
  EXPECT_EQ(client.prefill(3, {'!'}).n_past, 4);
  EXPECT_NE(error_message([&] { client.prefill(2, {'x'}); }).find("out of sync"), std::string::npos);
}

TEST(KvPeer, RemotePrefillEngineMatchesLocalAndSendsOnlyWhatTheServerLacks) {
  ServerThread server;
  DecodeNode node(server.endpoint(), [](RemotePrefillOptions& o) { o.compare_local = true; });
  auto& log = node.log;
  auto ctx = node.context();

  ctx->decode({engine::FakeScript::kBos, 'a', 'b', 'c'}, true);
  auto rec = log->take_last();
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->mode, "remote") << rec->fallback_reason;
  EXPECT_EQ(rec->tokens_sent, 4);
  EXPECT_GT(rec->state_bytes, 0u);
  EXPECT_EQ(rec->transfer, "whole");  // nothing held here yet
  ASSERT_TRUE(rec->state_bytes);
  const uint64_t first_bytes = *rec->state_bytes;
  ASSERT_TRUE(rec->first_token_matches_local);
  EXPECT_TRUE(*rec->first_token_matches_local);
  EXPECT_EQ(ctx->argmax_last(), 'f');
  // A turn: two decoded reply tokens here, then the next user message.
  ctx->decode_one('f');
  ctx->decode_one('a');
  ctx->decode({'d', 'e'}, true);
  rec = log->take_last();
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->mode, "remote") << rec->fallback_reason;
  EXPECT_EQ(rec->tokens_sent, 4);  // the reply the server did not see, then the turn
  EXPECT_EQ(rec->n_past, 8);
  EXPECT_EQ(ctx->n_past(), 8);
  // Only the four new cells came back (the fake's state: a header and 4 bytes a token),
  // appended after the four this node held: the cache is the server's whole sequence.
  EXPECT_EQ(rec->transfer, "tail");
  EXPECT_EQ(rec->state_bytes, first_bytes);
  EXPECT_EQ(ctx->save_state(), local_state_of({engine::FakeScript::kBos, 'a', 'b', 'c', 'f', 'a', 'd', 'e'}));
  // A new repetition on the same context: cleared, prefilled again from position 0.
  ctx->clear();
  ctx->decode({engine::FakeScript::kBos, 'x'}, true);
  rec = log->take_last();
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->mode, "remote") << rec->fallback_reason;
  EXPECT_EQ(rec->tokens_sent, 2);
  EXPECT_FALSE(rec->connect_ms) << "the connection is reused: no connect time to report";
  EXPECT_EQ(ctx->n_past(), 2);
}

TEST(KvPeer, WholeStateTransferSendsEverythingEachTurn) {
  ServerThread server;
  DecodeNode node(server.endpoint(), [](RemotePrefillOptions& o) { o.send_tail = false; });
  auto& log = node.log;
  auto ctx = node.context();
  ctx->decode({engine::FakeScript::kBos, 'a', 'b', 'c'}, true);
  const auto first = log->take_last();
  ctx->decode_one('f');
  ctx->decode({'d', 'e'}, true);
  const auto second = log->take_last();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(second->mode, "remote") << second->fallback_reason;
  EXPECT_EQ(second->transfer, "whole");
  ASSERT_TRUE(first->state_bytes && second->state_bytes);
  EXPECT_EQ(*second->state_bytes, *first->state_bytes + 3 * sizeof(engine::Token));
  EXPECT_EQ(ctx->save_state(), local_state_of({engine::FakeScript::kBos, 'a', 'b', 'c', 'f', 'd', 'e'}));
}

// Several decode nodes at once, each on its own context; one beyond --max-clients is told
// the server is busy at once (not at its read deadline), and a place that frees is taken.
TEST(KvPeer, ServesClientsAtOnceUpToItsLimitAndSaysBusyBeyond) {
  ServerOptions options;
  options.max_clients = 2;
  ServerThread server(options);
  auto first = std::make_unique<KvClient>(client_options(server.endpoint()), client_fingerprint());
  KvClient second(client_options(server.endpoint()), client_fingerprint());
  // Both prefill at the same time, different sequences, each its own cache.
  PrefillReply a, b;
  std::thread ta([&] { a = first->prefill(0, {engine::FakeScript::kBos, 'a', 'b'}); });
  std::thread tb([&] { b = second.prefill(0, {engine::FakeScript::kBos, 'x', 'y', 'z'}); });
  ta.join();
  tb.join();
  EXPECT_EQ(a.n_past, 3);
  EXPECT_EQ(b.n_past, 4);
  EXPECT_EQ(a.state, local_state_of({engine::FakeScript::kBos, 'a', 'b'}));
  EXPECT_EQ(b.state, local_state_of({engine::FakeScript::kBos, 'x', 'y', 'z'}));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string busy =
      error_message([&] { KvClient third(client_options(server.endpoint()), client_fingerprint()); });
  EXPECT_NE(busy.find("busy"), std::string::npos) << busy;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2)) << "refused late";
  // The first leaves; its place is taken (the server notices within its accept slice).
  first.reset();
  std::string error = "not tried";
  for (int i = 0; i < 50 && !error.empty(); ++i) {
    error = error_message([&] {
      KvClient fourth(client_options(server.endpoint()), client_fingerprint());
      EXPECT_EQ(fourth.prefill(0, {engine::FakeScript::kBos, 'q'}).n_past, 2);
    });
    if (!error.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(error, "") << "no place freed after a client left";
  EXPECT_EQ(second.prefill(4, {'!'}).n_past, 5) << "the second client's sequence was disturbed";
}

TEST(KvPeer, NoServerFallsBackToLocalPrefillAndSaysWhy) {
  Endpoint nowhere;
  {
    Listener l({"127.0.0.1", 0});
    nowhere = {"127.0.0.1", l.port()};
  }  // closed: nothing listens there now
  DecodeNode node(nowhere);
  auto& log = node.log;
  auto ctx = node.model->new_context({});
  ctx->decode({engine::FakeScript::kBos, 'a'}, true);
  const auto rec = log->take_last();
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->mode, "local");
  EXPECT_NE(rec->fallback_reason.find("cannot connect"), std::string::npos) << rec->fallback_reason;
  EXPECT_EQ(ctx->n_past(), 2);
  EXPECT_EQ(ctx->argmax_last(), 'f');
  // Nothing crossed a link: the record holds what was measured, no zero for the rest.
  const nlohmann::json j = rec->to_json();
  EXPECT_GT(j["ttft_ms"].get<double>(), 0);
  for (const char* never : {"transfer", "tokens_sent", "connect_ms", "remote_prefill_ms", "serialize_ms", "transfer_ms",
                            "restore_ms", "first_token_ms", "state_bytes", "kv_bytes_per_token", "link_mbit_s"})
    EXPECT_FALSE(j.contains(never)) << never << " in " << j.dump();
  EXPECT_NE(fallback_advice(rec->fallback_reason, nowhere.to_string()).find("kv-serve"), std::string::npos);
}

TEST(KvPeer, RequiredRemotePrefillFailsInsteadOfFallingBack) {
  Endpoint nowhere;
  {
    Listener l({"127.0.0.1", 0});
    nowhere = {"127.0.0.1", l.port()};
  }
  DecodeNode node(nowhere, [](RemotePrefillOptions& o) { o.required = true; });
  auto ctx = node.model->new_context({});
  const std::string why = error_message([&] { ctx->decode({engine::FakeScript::kBos, 'a'}, true); });
  EXPECT_NE(why.find("--prefill-remote-required"), std::string::npos) << why;
  EXPECT_NE(why.find("cannot connect"), std::string::npos) << why;
  EXPECT_FALSE(node.log->take_last()) << "no prefill happened, so there is no record of one";
}

TEST(KvPeer, WrongTokenIsRefusedBothWays) {
  ServerThread server;
  const std::string why =
      error_message([&] { KvClient(client_options(server.endpoint(), "guess"), client_fingerprint()); });
  EXPECT_NE(why.find("authentication failed: wrong token"), std::string::npos) << why;
  EXPECT_NE(server.log().find("wrong token"), std::string::npos);
}

TEST(KvPeer, MismatchedKvTypesAreRefused) {
  ServerThread server;
  auto mine = client_fingerprint();
  mine.type_v = "q8_0";
  const std::string why = error_message([&] { KvClient(client_options(server.endpoint()), mine); });
  EXPECT_NE(why.find("type_v: f16 on the server, q8_0 here"), std::string::npos) << why;
  mine = client_fingerprint();
  mine.model_sha256 = std::string(64, 'b');
  EXPECT_NE(error_message([&] { KvClient(client_options(server.endpoint()), mine); }).find("model_sha256"),
            std::string::npos);
}

// A hostile client: the server drops it with a logged reason, within its deadline, and
// serves the next (honest) client.
void expect_server_survives(const std::function<void(Socket&)>& attack, const std::string& logged) {
  ServerOptions o;
  o.timeout_ms = 300;
  ServerThread server(o);
  {
    Socket s = connect_tcp(server.endpoint(), 1000);
    attack(s);
    // The server answers with an error frame or closes; either way within its deadline.
    const auto t0 = Clock::now();
    char buf[4096];
    while (Clock::now() - t0 < std::chrono::seconds(5)) {
      const auto w = s.wait_readable(100);
      if (w == Socket::Wait::kClosed) break;
      if (w == Socket::Wait::kData && ::recv(s.fd(), buf, sizeof(buf), 0) <= 0) break;
    }
    EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5)) << "the server held a hostile connection";
  }
  for (int i = 0; i < 50 && server.log().find(logged) == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_NE(server.log().find(logged), std::string::npos) << server.log();
  KvClient honest(client_options(server.endpoint()), client_fingerprint());
  EXPECT_EQ(honest.prefill(0, {'o', 'k'}).n_past, 2);
}

void read_welcome(Socket& s) { receive_json(s, FrameType::kWelcome, {}, 1000); }

TEST(KvHostileClient, Garbage) {
  expect_server_survives(
      [](Socket& s) {
        read_welcome(s);
        const std::string junk(64, '\x7f');
        s.write_all(junk.data(), junk.size(), 1000);
      },
      "bad magic");
}

TEST(KvHostileClient, A100GbFrame) {
  expect_server_survives(
      [](Socket& s) {
        read_welcome(s);
        const auto h = encode_header({FrameType::kAuth, 100ull << 30, 0});
        s.write_all(h.data(), h.size(), 1000);
      },
      "claims 107374182400 bytes");
}

TEST(KvHostileClient, TruncatedFrame) {
  expect_server_survives(
      [](Socket& s) {
        read_welcome(s);
        const auto frame = encode_json_frame(FrameType::kAuth, {{"mac", "x"}});
        s.write_all(frame.data(), frame.size() - 3, 1000);
        ::shutdown(s.fd(), SHUT_WR);
      },
      "closed the connection");
}

TEST(KvHostileClient, StalledPeer) {
  expect_server_survives(
      [](Socket& s) {
        read_welcome(s);
        const auto frame = encode_json_frame(FrameType::kAuth, {{"mac", "x"}});
        s.write_all(frame.data(), 10, 1000);  // then nothing
      },
      "stalled");
}

// A hostile server: a raw listener that answers the client's connection with `reply`.
std::string client_error_against(const std::function<void(Socket&)>& reply) {
  Listener l({"127.0.0.1", 0});
  auto served = std::async(std::launch::async, [&] {
    Socket s = l.accept(5000);
    if (s.valid()) reply(s);
    std::this_thread::sleep_for(std::chrono::milliseconds(800));  // hold the connection open, silent
  });
  auto o = client_options({"127.0.0.1", l.port()});
  o.timeout_ms = 300;
  const auto t0 = Clock::now();
  const std::string why = error_message([&] { KvClient(o, client_fingerprint()); });
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
  served.wait();
  return why;
}

TEST(KvHostileServer, Garbage) {
  const auto why = client_error_against([](Socket& s) {
    const std::string http = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";  // more than a header's 24 bytes
    s.write_all(http.data(), http.size(), 1000);
  });
  EXPECT_NE(why.find("bad magic"), std::string::npos) << why;
}

TEST(KvHostileServer, A100GbFrame) {
  const auto why = client_error_against([](Socket& s) {
    const auto h = encode_header({FrameType::kState, 100ull << 30, 0});
    s.write_all(h.data(), h.size(), 1000);
  });
  EXPECT_NE(why.find("claims 107374182400 bytes"), std::string::npos) << why;
}

TEST(KvHostileServer, Stalls) {
  const auto why = client_error_against([](Socket&) {});
  EXPECT_NE(why.find("stalled"), std::string::npos) << why;
}

// A server that passes the handshake (it knows the token) and then answers the first
// prefill request with `head` (and no state).
std::string prefill_error_against(const nlohmann::json& head, bool ask_tail) {
  Listener l({"127.0.0.1", 0});
  auto served = std::async(std::launch::async, [&] {
    Socket s = l.accept(5000);
    if (!s.valid()) return;
    send_json(s, FrameType::kWelcome, {{"protocol", kProtocolVersion}, {"nonce", new_nonce()}}, 1000);
    const auto auth = receive_frame(s, {}, 1000).json();
    send_json(s, FrameType::kReady,
              {{"mac", token_mac("sesame", "server", auth.at("nonce").get<std::string>(), client_fingerprint())},
               {"fingerprint", client_fingerprint().to_json()}},
              1000);
    receive_frame(s, {}, 1000);  // the prefill request
    send_json(s, FrameType::kPrefilled, head, 1000);
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
  });
  auto o = client_options({"127.0.0.1", l.port()});
  o.timeout_ms = 300;
  const std::string why = error_message([&] {
    KvClient client(o, client_fingerprint());
    client.prefill(3, {'a', 'b'}, ask_tail);
  });
  served.wait();
  return why;
}

TEST(KvHostileServer, SendsATailNobodyAskedForOrFromElsewhere) {
  const nlohmann::json head = {{"n_past", 5}, {"argmax", 'f'}, {"prefill_ms", 1.0}, {"serialize_ms", 0.1},
                               {"state_bytes", 16}, {"tail_from", 3}};
  auto why = prefill_error_against(head, false);
  EXPECT_NE(why.find("sent a tail from position 3, this node asked for the whole state"), std::string::npos) << why;
  auto elsewhere = head;
  elsewhere["tail_from"] = 1;
  why = prefill_error_against(elsewhere, true);
  EXPECT_NE(why.find("sent a tail from position 1, this node asked for 3"), std::string::npos) << why;
}

TEST(KvHostileServer, AnnouncesATailLargerThanItsTokensCanHold) {
  // Two tokens of this model's state take at most a few kB; 64 MB is a lie.
  const nlohmann::json head = {{"n_past", 5},        {"argmax", 'f'},        {"prefill_ms", 1.0},
                               {"serialize_ms", 0.1}, {"state_bytes", 64 << 20}, {"tail_from", 3}};
  const auto why = prefill_error_against(head, true);
  EXPECT_NE(why.find("announces a tail of 67108864 bytes for 2 tokens"), std::string::npos) << why;
}

TEST(KvHostileServer, DoesNotKnowTheToken) {
  const auto why = client_error_against([](Socket& s) {
    send_json(s, FrameType::kWelcome, {{"protocol", kProtocolVersion}, {"nonce", new_nonce()}}, 1000);
    receive_frame(s, {}, 1000);
    send_json(s, FrameType::kReady,
              {{"mac", std::string(64, '0')}, {"fingerprint", client_fingerprint().to_json()}}, 1000);
  });
  EXPECT_NE(why.find("does not know the token"), std::string::npos) << why;
}


TEST(KvHostileClient, WrongProtocolVersion) {
  expect_server_survives(
      [](Socket& s) {
        read_welcome(s);
        auto frame = encode_json_frame(FrameType::kAuth, {{"mac", "x"}});
        frame[4] = 1;  // a protocol-1 peer: its MAC did not cover the fingerprint
        s.write_all(frame.data(), frame.size(), 1000);
      },
      "speaks protocol version 1, this edgeprobe speaks 2");
}

TEST(KvHostileClient, BadChecksum) {
  expect_server_survives(
      [](Socket& s) {
        read_welcome(s);
        auto frame = encode_json_frame(FrameType::kAuth, {{"mac", "x"}});
        frame.back() ^= 1;
        s.write_all(frame.data(), frame.size(), 1000);
      },
      "fails its checksum");
}

// Reads and drops what arrives until the peer closes; whether it did within `limit`.
bool closed_within(Socket& s, std::chrono::milliseconds limit) {
  const auto end = Clock::now() + limit;
  char buf[4096];
  while (Clock::now() < end) {
    const auto w = s.wait_readable(50);
    if (w == Socket::Wait::kClosed) return true;
    if (w == Socket::Wait::kData && ::recv(s.fd(), buf, sizeof(buf), MSG_DONTWAIT) == 0) return true;
  }
  return false;
}

// Connections that trickle their handshake (or send nothing) held every --max-clients slot
// without a token; now a handshake holds none, ends at its deadline, and the honest client
// is served at once.
TEST(KvHostileClient, AThousandTricklingConnectionsDoNotKeepAnHonestClientOut) {
  rlimit files{};
  getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = std::max<rlim_t>(files.rlim_cur, std::min<rlim_t>(files.rlim_max, 4096));
  setrlimit(RLIMIT_NOFILE, &files);
  if (files.rlim_cur < 2200) GTEST_SKIP() << "needs 2,200 open files (ulimit -n)";
  ServerOptions o;
  o.timeout_ms = 3000;
  o.max_clients = 2;
  ServerThread server(o);
  std::vector<Socket> bad;
  const auto header = encode_header({FrameType::kAuth, 100, 0});
  for (int i = 0; i < 1000; ++i) {
    bad.push_back(connect_tcp(server.endpoint(), 2000));
    bad.back().write_all(header.data(), 1 + i % 20, 1000);  // a piece of a header, never the rest
  }
  const auto t0 = Clock::now();
  KvClient first(client_options(server.endpoint()), client_fingerprint());
  KvClient second(client_options(server.endpoint()), client_fingerprint());
  EXPECT_EQ(first.prefill(0, {'o', 'k'}).n_past, 2);
  EXPECT_EQ(second.prefill(0, {'o', 'k', '!'}).n_past, 3);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(2)) << "the honest clients waited on the bad connections";
  // Each bad one is closed at its deadline (3 s from its accept), not held.
  int closed = 0;
  const auto give_up = t0 + std::chrono::seconds(12);
  for (auto& s : bad)
    closed += closed_within(s, std::chrono::duration_cast<std::chrono::milliseconds>(give_up - Clock::now()) +
                                   std::chrono::milliseconds(20));
  EXPECT_EQ(closed, 1000);
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(15));
  EXPECT_NE(server.log().find("the client stalled: no complete auth frame within 3000 ms"), std::string::npos);
}

// A relay between the nodes that rewrites fingerprints in transit (to make nodes whose
// states are not interchangeable pass each other's check): the MACs cover them, so it fails.
using Rewrite = std::function<void(nlohmann::json&)>;
std::string through_relay(const Endpoint& server, const Fingerprint& mine, const Rewrite& auth, const Rewrite& ready) {
  Listener l({"127.0.0.1", 0});
  auto relay = std::async(std::launch::async, [&] {
    try {
      Socket c = l.accept(5000);
      Socket up = connect_tcp(server, 1000);
      auto pass = [](Socket& from, Socket& to, const Rewrite& rewrite) {
        const Frame f = receive_frame(from, {}, 2000);
        auto j = f.json();
        if (rewrite && j.contains("fingerprint")) rewrite(j["fingerprint"]);
        send_json(to, f.type, j, 1000);
      };
      pass(up, c, {});     // welcome
      pass(c, up, auth);   // auth
      pass(up, c, ready);  // ready, or the server's refusal
    } catch (const std::exception&) {
      // the side that refused has closed: what the client says is the test's
    }
  });
  const std::string why = error_message([&] { KvClient(client_options({"127.0.0.1", l.port()}), mine); });
  relay.wait();
  return why;
}

TEST(KvHostileRelay, RewritingBothFingerprintsToMatchFailsTheMac) {
  ServerThread server;
  auto mine = client_fingerprint();
  mine.engine_commit = "other";  // its states do not restore into the server's
  const std::string why = through_relay(
      server.endpoint(), mine, [](nlohmann::json& f) { f["engine_commit"] = "fake"; },
      [](nlohmann::json& f) { f["engine_commit"] = "other"; });
  EXPECT_NE(why.find("wrong token (or the client's fingerprint was altered on the way)"), std::string::npos) << why;
  EXPECT_NE(server.log().find("the client's fingerprint was altered"), std::string::npos) << server.log();
}

TEST(KvHostileRelay, ARewrittenServerFingerprintFailsTheClientsMac) {
  ServerThread server;
  // Compatible nodes; the relay inflates the server's context in its reply.
  const std::string why = through_relay(server.endpoint(), client_fingerprint(), {},
                                        [](nlohmann::json& f) { f["n_ctx"] = 999999; });
  EXPECT_NE(why.find("does not know the token (or its fingerprint was altered on the way)"), std::string::npos)
      << why;
}

TEST(KvHostileServer, WrongVersionAndBadChecksum) {
  auto why = client_error_against([](Socket& s) {
    auto frame = encode_json_frame(FrameType::kWelcome, {{"protocol", 1}, {"nonce", new_nonce()}});
    frame[4] = 1;  // a protocol-1 server
    s.write_all(frame.data(), frame.size(), 1000);
  });
  EXPECT_NE(why.find("kv peer speaks protocol version 1, this edgeprobe speaks 2"), std::string::npos) << why;
  why = client_error_against([](Socket& s) {
    auto frame = encode_json_frame(FrameType::kWelcome, {{"protocol", kProtocolVersion}, {"nonce", new_nonce()}});
    frame[30] ^= 4;
    s.write_all(frame.data(), frame.size(), 1000);
  });
  EXPECT_NE(why.find("fails its checksum"), std::string::npos) << why;
}

// A server's refusal of 900 kB, many lines and escape codes: the client's error and the
// fallback reason the decode node stores are one short escaped line.
TEST(KvHostileServer, AHugeMultiLineRefusalIsStoredAsOneLine) {
  std::string refusal = "\x1b[2J refused\n";
  for (int i = 0; refusal.size() < 900000; ++i) refusal += "\tline " + std::to_string(i) + ": no room\n";
  Listener l({"127.0.0.1", 0});
  auto served = std::async(std::launch::async, [&] {
    Socket s = l.accept(5000);
    if (s.valid()) send_json(s, FrameType::kError, {{"message", refusal}}, 1000);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  });
  DecodeNode node({"127.0.0.1", l.port()});
  auto ctx = node.context();
  ctx->decode({engine::FakeScript::kBos, 'a'}, true);
  served.wait();
  const auto rec = node.log->take_last();
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->mode, "local");
  const std::string& why = rec->fallback_reason;
  EXPECT_NE(why.find("kv peer refused: \\x1b[2J refused\\n\\tline 0: no room\\n\\tline 1"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos);
  EXPECT_EQ(why.find('\x1b'), std::string::npos);
  EXPECT_LT(why.size(), 1000u);
  EXPECT_NE(why.find("bytes)"), std::string::npos) << "the cut says how long it was";
}

}  // namespace
}  // namespace edgeprobe::kv
