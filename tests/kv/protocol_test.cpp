// The KV-transfer frame format, the handshake's pieces and the break-even model: pure
// functions, no sockets.
#include "kv/protocol.h"

#include <gtest/gtest.h>

#include <functional>

#include <cmath>

#include <cstring>

#include "core/error.h"
#include "kv/break_even.h"
#include "kv/handshake.h"
#include "kv/net.h"
#include "support/run_process.h"

namespace edgeprobe::kv {
namespace {

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }

using test_support::error_message;

TEST(KvFrame, HeaderRoundTrips) {
  const FrameHeader h{FrameType::kState, 123456789012ull, 0xdeadbeef};
  const auto encoded = encode_header(h);
  Limits limits;
  limits.max_state_bytes = 1ull << 40;
  const FrameHeader back = decode_header(encoded.data(), limits);
  EXPECT_EQ(back.type, FrameType::kState);
  EXPECT_EQ(back.length, 123456789012ull);
  EXPECT_EQ(back.checksum, 0xdeadbeefu);
}

TEST(KvFrame, ChecksumIsCrc32) {
  const auto data = bytes("123456789");
  EXPECT_EQ(checksum(data.data(), data.size()), 0xcbf43926u);  // the CRC-32 check value
}

TEST(KvFrame, RefusesWhatIsNotAFrame) {
  auto frame = encode_json_frame(FrameType::kAuth, {{"a", 1}});
  auto bad = frame;
  bad[0] ^= 0xff;
  EXPECT_NE(error_message([&] { decode_header(bad.data(), {}); }).find("bad magic"), std::string::npos);
  bad = frame;
  bad[4] = 9;
  EXPECT_NE(error_message([&] { decode_header(bad.data(), {}); }).find("protocol version 9"), std::string::npos);
  bad = frame;
  bad[6] = 99;
  EXPECT_NE(error_message([&] { decode_header(bad.data(), {}); }).find("unknown frame type 99"),
            std::string::npos);
  bad = frame;
  bad[22] = 1;
  EXPECT_NE(error_message([&] { decode_header(bad.data(), {}); }).find("reserved"), std::string::npos);
}

TEST(KvFrame, RefusesA100GbClaimBeforeAllocating) {
  const auto header = encode_header({FrameType::kState, 100ull << 30, 0});
  const std::string why = error_message([&] { decode_header(header.data(), Limits{}); });
  EXPECT_NE(why.find("claims 107374182400 bytes"), std::string::npos) << why;
  // A control frame is bounded far lower than a state.
  const auto control = encode_header({FrameType::kPrefill, 2 << 20, 0});
  EXPECT_NE(error_message([&] { decode_header(control.data(), Limits{}); }).find("more than the 1048576"),
            std::string::npos);
}

TEST(KvFrame, ParserAssemblesFramesFedByteByByte) {
  auto stream = encode_json_frame(FrameType::kPrefill, {{"start", 0}, {"tokens", {1, 2, 3}}});
  const auto second = encode_frame(FrameType::kState, bytes("state bytes"));
  stream.insert(stream.end(), second.begin(), second.end());
  FrameParser parser;
  std::vector<Frame> frames;
  for (uint8_t b : stream) {
    parser.feed(&b, 1);
    while (auto f = parser.next()) frames.push_back(std::move(*f));
  }
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].type, FrameType::kPrefill);
  EXPECT_EQ(frames[0].json()["tokens"], nlohmann::json({1, 2, 3}));
  EXPECT_EQ(frames[1].type, FrameType::kState);
  EXPECT_EQ(frames[1].payload, bytes("state bytes"));
  EXPECT_EQ(parser.buffered(), 0u);
}

TEST(KvFrame, ParserRefusesACorruptedPayload) {
  auto frame = encode_frame(FrameType::kState, bytes("0123456789"));
  frame.back() ^= 1;
  FrameParser parser;
  parser.feed(frame.data(), frame.size());
  EXPECT_NE(error_message([&] { parser.next(); }).find("fails its checksum"), std::string::npos);
}

TEST(KvFrame, ParserWaitsForATruncatedFrame) {
  const auto frame = encode_frame(FrameType::kState, bytes("0123456789"));
  FrameParser parser;
  parser.feed(frame.data(), frame.size() - 1);
  EXPECT_FALSE(parser.next().has_value());
}

TEST(KvFrame, NonJsonControlPayloadIsAnError) {
  Frame f{FrameType::kAuth, bytes("\x01garbage")};
  EXPECT_NE(error_message([&] { f.json(); }).find("not a JSON object"), std::string::npos);
}

TEST(KvEndpoint, ParsesHostsAndPorts) {
  EXPECT_EQ(parse_endpoint("127.0.0.1:7788").port, 7788);
  EXPECT_EQ(parse_endpoint("[::1]:9").host, "::1");
  EXPECT_EQ(parse_endpoint("[::1]:9").to_string(), "[::1]:9");
  for (const char* bad : {"nohost", ":80", "h:", "h:99999", "h:8x", "[::1]9"})
    EXPECT_THROW(parse_endpoint(bad), Error) << bad;
}

Fingerprint sample() {
  Fingerprint f;
  f.model_sha256 = "abc";
  f.n_layer = 4;
  f.n_head_kv = 2;
  f.n_embd = 64;
  f.n_vocab = 100;
  f.type_k = f.type_v = "f16";
  f.engine_commit = "x";
  f.n_ctx = 512;
  return f;
}

TEST(KvFingerprint, NamesEveryDifference) {
  Fingerprint server = sample(), client = sample();
  EXPECT_EQ(fingerprint_mismatch(server, client), "");
  client.type_k = "q8_0";
  client.flash_attn = 1;
  const std::string why = fingerprint_mismatch(server, client);
  EXPECT_NE(why.find("type_k: f16 on the server, q8_0 here"), std::string::npos) << why;
  EXPECT_NE(why.find("flash_attn: -1 on the server, 1 here"), std::string::npos) << why;
  // A smaller client context is fine, a larger one is not.
  client = sample();
  client.n_ctx = 256;
  EXPECT_EQ(fingerprint_mismatch(server, client), "");
  client.n_ctx = 1024;
  EXPECT_NE(fingerprint_mismatch(server, client).find("n_ctx"), std::string::npos);
  EXPECT_EQ(fingerprint_mismatch(server, Fingerprint::from_json(server.to_json())), "");
  EXPECT_THROW(Fingerprint::from_json({{"model_sha256", 1}}), Error);
}

TEST(KvHandshake, MacDependsOnTokenRoleNonceAndFingerprint) {
  const std::string n = new_nonce();
  EXPECT_EQ(n.size(), 64u);
  EXPECT_NE(n, new_nonce());
  Fingerprint f;
  f.model_sha256 = std::string(64, 'a');
  f.n_layer = 2;
  const auto mac = token_mac("secret", "client", n, f);
  EXPECT_TRUE(same_mac(mac, token_mac("secret", "client", n, f)));
  EXPECT_TRUE(same_mac(mac, token_mac("secret", "client", n, Fingerprint::from_json(f.to_json()))));
  EXPECT_FALSE(same_mac(mac, token_mac("secreT", "client", n, f)));
  EXPECT_FALSE(same_mac(mac, token_mac("secret", "server", n, f)));
  EXPECT_FALSE(same_mac(mac, token_mac("secret", "client", new_nonce(), f)));
  // Every field of the fingerprint is covered: a relay cannot rewrite one.
  for (const auto& change : std::vector<std::function<void(Fingerprint&)>>{
           [](Fingerprint& g) { g.model_sha256[0] = 'b'; }, [](Fingerprint& g) { g.n_layer = 3; },
           [](Fingerprint& g) { g.type_v = "q8_0"; }, [](Fingerprint& g) { g.flash_attn = 1; },
           [](Fingerprint& g) { g.engine_commit = "other"; }, [](Fingerprint& g) { g.n_ctx = 99; }}) {
    Fingerprint g = f;
    change(g);
    EXPECT_FALSE(same_mac(mac, token_mac("secret", "client", n, g)));
  }
  EXPECT_FALSE(same_mac(mac, mac.substr(1)));
}

TEST(KvBreakEven, SolvesTheLinearModel) {
  DisaggInputs in;
  in.local_tokens_per_s = 100;    // 10 ms/token here
  in.remote_tokens_per_s = 1000;  // 1 ms/token there
  in.kv_bytes_per_token = 1000;   // 8 kbit/token
  in.link_mbit_s = 8;             // 1 ms/token on the link
  in.fixed_ms = 80;
  const auto be = break_even(in);
  ASSERT_TRUE(be.prompt_tokens);
  EXPECT_NEAR(*be.prompt_tokens, 10.0, 1e-9);  // 80 / (10 - 1 - 1)
  EXPECT_NEAR(local_ttft_ms(in, *be.prompt_tokens), remote_ttft_ms(in, *be.prompt_tokens), 1e-9);
  ASSERT_TRUE(be.min_link_mbit);
  EXPECT_NEAR(*be.min_link_mbit, 8.0 / 9.0, 1e-9);  // where the link costs the 9 ms saved
  in.link_mbit_s = 0.5;
  EXPECT_FALSE(break_even(in).prompt_tokens);
  in.remote_tokens_per_s = 50;  // a slower prefill node never pays
  EXPECT_FALSE(break_even(in).min_link_mbit);
  in.local_tokens_per_s = 0;
  EXPECT_THROW(break_even(in), Error);
}

TEST(KvBreakEven, FitsInputsFromRecords) {
  // Two prefills made by the model above (fixed 80 ms), each with its local twin.
  std::vector<nlohmann::json> records;
  for (double n : {100.0, 300.0})
    records.push_back({{"mode", "remote"},
                       {"tokens_sent", n},
                       {"local_prefill_ms", n * 10},
                       {"remote_prefill_ms", n * 1},
                       {"serialize_ms", 0},
                       {"restore_ms", 0},
                       {"kv_bytes_per_token", 1000},
                       {"state_bytes", n * 1000},
                       {"link_mbit_s", 8},
                       {"ttft_ms", 80 + n * 2}});
  records.push_back({{"mode", "local"}, {"tokens_sent", 5}});  // a fallback is not a measurement
  const auto in = fit_inputs(records);
  EXPECT_NEAR(in.local_tokens_per_s, 100, 1e-6);
  EXPECT_NEAR(in.remote_tokens_per_s, 1000, 1e-6);
  EXPECT_NEAR(in.fixed_ms, 80, 1e-6);
  EXPECT_NEAR(*break_even(in).prompt_tokens, 10, 1e-6);
  EXPECT_THROW(fit_inputs({records.back()}), Error);
  // A local prefill with a cost of its own (5 ms a call): the line finds it, and the
  // break-even moves to where the remote path's extra 75 ms is earned back.
  for (auto& r : records) r["local_prefill_ms"] = 5 + r.value("tokens_sent", 0.0) * 10;
  const auto with_fixed = fit_inputs(records);
  EXPECT_NEAR(with_fixed.local_fixed_ms, 5, 1e-6);
  EXPECT_NEAR(with_fixed.local_tokens_per_s, 100, 1e-6);
  EXPECT_NEAR(*break_even(with_fixed).prompt_tokens, 75.0 / 8, 1e-6);
  // One repetition slowed 20x by the host does not move the lines: each length's median.
  auto spiked = records;
  for (int i = 0; i < 2; ++i) spiked.push_back(records[0]);
  spiked.push_back(records[1]);
  spiked.push_back(records[1]);
  spiked.back()["local_prefill_ms"] = 20 * spiked.back().value("local_prefill_ms", 0.0);
  EXPECT_NEAR(fit_inputs(spiked).local_tokens_per_s, 100, 1e-6);
  const nlohmann::json doc = {{"results", {{{"repetitions", {{{"prefill_remote", records[0]}}}}}}}};
  EXPECT_EQ(prefill_records(doc).size(), 1u);
}

TEST(KvBreakEven, AFasterThanLinearPrefillIsFittedWithItsAttentionTerm) {
  // Both prefills grow faster than linearly (attention), shaped like a measured pair:
  // 0.48 ms + n/25000 per token here, 0.1 ms + n/30000 there, a 20 ms round trip and
  // 0.3 ms per token on the link (1000 bytes at 26.7 Mbit/s). The fit finds the n^2 terms
  // and the prediction is where the curves cross (245 tokens) to 1 %; lines through these
  // lengths missed by 7 %, and with the local line's negative intercept clamped, by 21 %.
  auto local = [](double n) { return n * (0.48 + n / 25000); };
  auto remote_prefill = [](double n) { return n * (0.1 + n / 30000); };
  auto ttft = [&](double n) { return 20 + remote_prefill(n) + 0.3 * n; };
  std::vector<nlohmann::json> records;
  for (double n : {16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0})
    records.push_back({{"mode", "remote"},
                       {"tokens_sent", n},
                       {"local_prefill_ms", local(n)},
                       {"remote_prefill_ms", remote_prefill(n)},
                       {"kv_bytes_per_token", 1000},
                       {"state_bytes", n * 1000},
                       {"link_mbit_s", 8 / 0.3},
                       {"ttft_ms", ttft(n)}});
  const auto in = fit_inputs(records);
  EXPECT_NEAR(in.local_fixed_ms, 0, 1e-6);
  EXPECT_NEAR(in.local_tokens_per_s, 1e3 / 0.48, 1e-3);
  EXPECT_NEAR(in.local_ms_per_token_squared, 1.0 / 25000, 1e-9);
  EXPECT_NEAR(in.remote_ms_per_token_squared, 1.0 / 30000, 1e-9);
  EXPECT_NEAR(in.fixed_ms, 20, 1e-6);
  double crossing = 1;  // where the remote path first beats the local one, to 0.01 token
  while (ttft(crossing) > local(crossing)) crossing += 0.01;
  ASSERT_TRUE(break_even(in).prompt_tokens);
  EXPECT_NEAR(*break_even(in).prompt_tokens, crossing, 0.01 * crossing) << "true crossing " << crossing;
  // A prefill that grows slower than linearly (an n^2 term below 0 is not attention) is
  // fitted as a line.
  for (auto& r : records) {
    const double n = r.value("tokens_sent", 0.0);
    r["local_prefill_ms"] = 0.5 * n - 1e-5 * n * n;
  }
  const auto linear = fit_inputs(records);
  EXPECT_EQ(linear.local_ms_per_token_squared, 0);
  EXPECT_GT(linear.local_tokens_per_s, 2000);
}

TEST(KvBreakEven, AttentionMakesALongPromptWinBelowTheLinearLinkRate) {
  DisaggInputs in;
  in.local_tokens_per_s = 100;  // 10 ms/token here
  in.remote_tokens_per_s = 1000;
  in.kv_bytes_per_token = 1000;
  in.link_mbit_s = 0.8;  // 10 ms/token on the link: the per-token gain (9 ms) is eaten
  in.fixed_ms = 80;
  EXPECT_FALSE(break_even(in).prompt_tokens);
  in.local_ms_per_token_squared = 0.01;  // each token here costs 0.01 ms more than the last
  const auto be = break_even(in);
  ASSERT_TRUE(be.prompt_tokens);
  // 80 + 1 n - 0.01 n^2 = 0 at n = (1 + sqrt(1 + 3.2)) / 0.02
  EXPECT_NEAR(*be.prompt_tokens, (1 + std::sqrt(4.2)) / 0.02, 1e-6);
  EXPECT_NEAR(local_ttft_ms(in, *be.prompt_tokens), remote_ttft_ms(in, *be.prompt_tokens), 1e-6);
  ASSERT_TRUE(be.min_link_mbit);  // still the linear terms' figure
  EXPECT_NEAR(*be.min_link_mbit, 8.0 / 9.0, 1e-9);
  in.remote_ms_per_token_squared = 0.02;  // the remote node's attention grows faster: never
  EXPECT_FALSE(break_even(in).prompt_tokens);
  in.local_ms_per_token_squared = -1;
  EXPECT_THROW(break_even(in), Error);
}

}  // namespace
}  // namespace edgeprobe::kv
