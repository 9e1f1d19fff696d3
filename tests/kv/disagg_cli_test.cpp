// KV disaggregation with the real binary: a kv-serve node and a bench/session decode node
// as two processes on loopback. Correctness first (greedy tokens after a transfer are the
// local ones, and a later turn's tail leaves the cache the whole state does), then
// refusals. The timing claims run alone: two_node_test.cpp, netns_break_even_test.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "kv/break_even.h"
#include "kv/kv_process.h"
#include "support/run_process.h"

namespace edgeprobe {
namespace {

using nlohmann::json;
using test_support::run_process;
using test_support::TempDir;

using kv_test::decode_node;
using kv_test::parse;

// turn key "conversation/turn" -> turn object
std::map<std::string, json> turns_of(const json& session) {
  std::map<std::string, json> out;
  for (const auto& c : session["configs"])
    for (const auto& t : c["turns"])
      out[t["conversation_id"].get<std::string>() + "/" + std::to_string(t["turn_index"].get<int>())] = t;
  return out;
}

TEST(KvDisagg, GreedyTokensAfterATransferAreTheLocalOnesForEveryFirstTurn) {
  TempDir dir;
  const std::string model = test_support::tiny_model();
  kv_test::KvServeNode server(dir.path(), {"-m", model, "-t", "1", "--max-ctx", "2048"});
  ASSERT_GT(server.port(), 0) << server.error();
  const std::vector<std::string> session{
      "session", "-m", model, "--rounds",    "1", "--conversations", "50", "--max-tokens", "12",  "-c",
      "2048",    "-t", "1",   "--sample-hz", "0", "--no-store",      "-q", "-o",           "json"};
  const auto local = turns_of(parse(decode_node(session)));
  auto remote_args = session;
  remote_args.insert(remote_args.end(), {"--prefill-remote", server.address(), "--prefill-compare-local"});
  const auto remote = turns_of(parse(decode_node(remote_args)));

  int first_turns = 0;
  for (const auto& [key, t] : remote) {
    if (t["turn_index"] != 0) continue;
    ++first_turns;
    ASSERT_TRUE(t.contains("prefill_remote")) << key;
    const auto& rec = t["prefill_remote"];
    EXPECT_EQ(rec["mode"], "remote") << key << ": " << rec.value("fallback_reason", "");
    EXPECT_EQ(rec["first_token_matches_local"], true) << key;
    EXPECT_GT(rec["state_bytes"].get<uint64_t>(), 0u);
    ASSERT_TRUE(local.contains(key));
    EXPECT_EQ(t["reply_tokens"], local.at(key)["reply_tokens"]) << key << " diverged after the transfer";
  }
  EXPECT_EQ(first_turns, 50);
}

// Later turns: the tail (the cells the decode node lacks: its own reply and the new turn)
// against the whole state. The caches they leave must be the same, so every turn's greedy
// tokens are; a tail carries only the tokens sent, the whole state every token so far.
TEST(KvDisagg, ATurnsTailLeavesTheSameCacheAsTheWholeStateForFewerBytes) {
  TempDir dir;
  const std::string model = test_support::tiny_model();
  kv_test::KvServeNode server(dir.path(), {"-m", model, "-t", "1", "--max-ctx", "2048"});
  ASSERT_GT(server.port(), 0) << server.error();
  auto run = [&](const std::string& transfer) {
    return turns_of(parse(decode_node({"session", "-m", model, "--rounds", "1", "--conversations", "8",
                                       "--max-tokens", "12", "-c", "2048", "-t", "1", "--sample-hz", "0",
                                       "--no-store", "-q", "-o", "json", "--prefill-remote", server.address(),
                                       "--prefill-transfer", transfer})));
  };
  const auto tail = run("tail"), whole = run("whole");
  ASSERT_EQ(tail.size(), whole.size());
  int later_turns = 0;
  for (const auto& [key, t] : tail) {
    ASSERT_TRUE(whole.contains(key)) << key;
    const auto &a = t["prefill_remote"], &b = whole.at(key)["prefill_remote"];
    ASSERT_EQ(a["mode"], "remote") << key << ": " << a.value("fallback_reason", "");
    ASSERT_EQ(b["mode"], "remote") << key << ": " << b.value("fallback_reason", "");
    EXPECT_EQ(t["reply_tokens"], whole.at(key)["reply_tokens"]) << key << ": the tail left another cache";
    EXPECT_EQ(b["transfer"], "whole");
    if (t["turn_index"] == 0) {
      EXPECT_EQ(a["transfer"], "whole") << key << ": nothing was held before the first turn";
      continue;
    }
    ++later_turns;
    EXPECT_EQ(a["transfer"], "tail") << key;
    // Bytes per token are the same either way; only the count of tokens differs.
    const double per_token = b["state_bytes"].get<double>() / b["n_past"].get<double>();
    EXPECT_NEAR(a["state_bytes"].get<double>(), per_token * a["tokens_sent"].get<double>(), 0.02 * per_token * a["tokens_sent"].get<double>() + 64) << key;
    EXPECT_LT(a["state_bytes"].get<double>(), b["state_bytes"].get<double>()) << key;
  }
  EXPECT_GE(later_turns, 8);
}

std::string fallback_reason(const test_support::ProcessResult& r) {
  const json j = parse(r);
  const auto& rep = j["results"][0]["repetitions"][0];
  EXPECT_EQ(rep["prefill_remote"]["mode"], "local");
  return rep["prefill_remote"].value("fallback_reason", "");
}

TEST(KvDisagg, RefusedPeersFallBackToLocalPrefillAndSayWhy) {
  TempDir dir;
  const std::string model = test_support::tiny_model();
  kv_test::KvServeNode server(dir.path(), {"-m", model, "-t", "1", "--timeout-ms", "2000"});
  ASSERT_GT(server.port(), 0) << server.error();
  const std::vector<std::string> bench{"bench",
                                       "-p",
                                       "16",
                                       "-n",
                                       "2",
                                       "-r",
                                       "1",
                                       "--no-warmup",
                                       "-t",
                                       "1",
                                       "--ceilings",
                                       "off",
                                       "--sample-hz",
                                       "0",
                                       "--no-store",
                                       "-q",
                                       "-o",
                                       "json",
                                       "--prefill-remote",
                                       server.address()};
  auto with = [&](std::vector<std::string> extra) {
    auto args = bench;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  EXPECT_NE(fallback_reason(decode_node(with({"-m", test_support::tiny_model("q8_0")}))).find("model_sha256"),
            std::string::npos);
  EXPECT_NE(fallback_reason(decode_node(with({"-m", model, "--cache-type-k", "q8_0"})))
                .find("type_k: f16 on the server, q8_0 here"),
            std::string::npos);
  const auto wrong = decode_node(with({"-m", model}), "", "not-the-token");
  EXPECT_NE(fallback_reason(wrong).find("wrong token"), std::string::npos);
  EXPECT_EQ(wrong.out.find("not-the-token"), std::string::npos) << "the token is never printed";
  EXPECT_EQ(wrong.err.find("not-the-token"), std::string::npos);
  // The server survived all of it and still serves.
  const json ok = parse(decode_node(with({"-m", model})));
  EXPECT_EQ(ok["results"][0]["repetitions"][0]["prefill_remote"]["mode"], "remote");
}

TEST(KvDisagg, MissingTokenIsBadInput) {
  const auto r =
      run_process({EDGEPROBE_BINARY, "kv-serve", "-m", "nothing.gguf"}, 30, {{"EDGEPROBE_KV_TOKEN", ""}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no shared-secret token"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace edgeprobe
