// KV disaggregation with the real binary: a kv-serve node and a bench/session decode node
// as two processes on loopback. Correctness first (greedy tokens after a transfer are the
// local ones, and a later turn's tail leaves the cache the whole state does), then
// refusals. The timing claims run alone: two_node_test.cpp, netns_break_even_test.cpp.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iterator>
#include <sstream>
#include <thread>

#include <cmath>

#include <algorithm>
#include <filesystem>
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

// True once nothing accepts on 127.0.0.1:port (a server that was told to stop may still
// accept for a moment while it exits), within timeout_ms.
bool refuses_connections(int port, int timeout_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < until) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool accepted = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    if (!accepted) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// Issue 24: a fallback is never silent. Against a stopped server and with a wrong token the
// run warns once per reason on stderr with what to do, the table's prefill column says
// "local (fallback)" and the exit code is 0 (the local figures are honest ones); with
// --prefill-remote-required the fallback is an error row and the exit code 3. A remote
// prefill is marked too, and a fallback's record holds no transfer figure.
TEST(KvDisagg, AFallbackIsSaidOnStderrAndInTheTableAndRequiredMakesItAnError) {
  TempDir dir;
  const std::string model = test_support::tiny_model();
  std::string stopped;
  int stopped_port = 0;
  {
    std::filesystem::create_directories(dir.path() + "/gone");
    kv_test::KvServeNode gone(dir.path() + "/gone", {"-m", model, "-t", "1"});
    ASSERT_GT(gone.port(), 0) << gone.error();
    stopped = gone.address();
    stopped_port = gone.port();
  }  // stopped: nothing listens there now (once it has exited)
  ASSERT_TRUE(refuses_connections(stopped_port, 10000)) << "the stopped kv-serve still accepts on " << stopped;
  kv_test::KvServeNode server(dir.path(), {"-m", model, "-t", "1", "--timeout-ms", "2000"});
  ASSERT_GT(server.port(), 0) << server.error();
  auto bench = [&](const std::string& at, std::vector<std::string> extra, const std::string& token = "test-token") {
    std::vector<std::string> args{"bench", "-m", model, "-p", "16", "-n", "2", "-r", "2", "--no-warmup", "-t", "1",
                                  "--ceilings", "off", "--sample-hz", "0", "--no-store", "-q", "--prefill-remote", at};
    args.insert(args.end(), extra.begin(), extra.end());
    return decode_node(args, "", token);
  };

  const auto down = bench(stopped, {"-o", "md"});
  EXPECT_EQ(down.exit_code, 0) << down.err;
  EXPECT_EQ(test_support::count_of(down.err, "warning: --prefill-remote " + stopped + ": fell back to a local prefill"), 1u)
      << "one line for one reason, not one per repetition:\n" << down.err;
  EXPECT_NE(down.err.find("is kv-serve running there?"), std::string::npos) << down.err;
  EXPECT_NE(down.out.find("| test | prefill |"), std::string::npos) << down.out;
  EXPECT_NE(down.out.find("| pp16 | local (fallback) |"), std::string::npos) << down.out;
  EXPECT_NE(down.out.find("| tg2 |  |"), std::string::npos) << "a test without a prompt has no prefill:\n" << down.out;

  const auto wrong = bench(server.address(), {"-o", "md"}, "not-the-token");
  EXPECT_EQ(wrong.exit_code, 0) << wrong.err;
  EXPECT_EQ(test_support::count_of(wrong.err, ": fell back to a local prefill: "), 1u) << wrong.err;
  EXPECT_NE(wrong.err.find("wrong token"), std::string::npos) << wrong.err;
  EXPECT_NE(wrong.err.find("check the token"), std::string::npos) << wrong.err;
  EXPECT_EQ(wrong.err.find("not-the-token"), std::string::npos) << "the token is never printed";
  EXPECT_NE(wrong.out.find("| pp16 | local (fallback) |"), std::string::npos) << wrong.out;

  const auto ok = bench(server.address(), {"-o", "md"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.err.find("fell back"), std::string::npos) << ok.err;
  EXPECT_NE(ok.out.find("| pp16 | remote |"), std::string::npos) << ok.out;

  // What a fallback's record holds: what was measured, nothing for a transfer that never happened.
  const json fell = parse(bench(stopped, {"-o", "json"}));
  const json& rec = fell["results"][0]["repetitions"][0]["prefill_remote"];
  EXPECT_EQ(rec["mode"], "local");
  EXPECT_GT(rec["ttft_ms"].get<double>(), 0);
  for (const char* never : {"link_mbit_s", "transfer_ms", "state_bytes", "kv_bytes_per_token", "remote_prefill_ms"})
    EXPECT_FALSE(rec.contains(never)) << never << ": " << rec.dump();
  const std::string csv = bench(stopped, {"-o", "csv"}).out;
  EXPECT_NE(csv.find(",prefill,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",local (fallback),"), std::string::npos) << csv;

  // Required: the fallback is the repetition's error, the run exits 3 and says why.
  const auto required = bench(stopped, {"-o", "md", "--prefill-remote-required"});
  EXPECT_EQ(required.exit_code, 3) << required.err;
  EXPECT_NE(required.out.find("pp16 — error: the remote prefill at " + stopped + " failed and --prefill-remote-required"),
            std::string::npos)
      << required.out;
  EXPECT_NE(required.err.find("edgeprobe: error: pp16: "), std::string::npos) << required.err;
  const auto required_ok = bench(server.address(), {"-o", "md", "--prefill-remote-required"});
  EXPECT_EQ(required_ok.exit_code, 0) << required_ok.err;

  // A session against the stopped server: every turn falls back, one line says so.
  const auto session = decode_node({"session", "-m", model, "--rounds", "1", "--conversations", "1", "--max-tokens", "4",
                                    "-t", "1", "--sample-hz", "0", "--no-store", "-q", "-o", "md", "--prefill-remote",
                                    stopped});
  EXPECT_EQ(session.exit_code, 0) << session.err;
  EXPECT_EQ(test_support::count_of(session.err, ": fell back to a local prefill: "), 1u) << session.err;
  EXPECT_NE(session.out.find("| QES | prefill |"), std::string::npos) << session.out;
  EXPECT_NE(session.out.find(" local (fallback) |\n"), std::string::npos) << session.out;

  // Required, in a session: every turn fails, so the stored run is failed, not complete.
  const std::string db = dir.file("r.db");
  const auto all_failed = decode_node({"session", "-m", model, "--rounds", "1", "--conversations", "2", "--max-tokens", "4",
                                       "-t", "1", "--sample-hz", "0", "--db", db, "-q", "-o", "md", "--prefill-remote",
                                       stopped, "--prefill-remote-required"});
  EXPECT_EQ(all_failed.exit_code, 3) << all_failed.err;
  const auto runs = decode_node({"runs", "--db", db});
  EXPECT_NE(runs.out.find("  session  failed  "), std::string::npos) << runs.out;
}

// kv-serve under a `nofile` limit it cannot raise (soft = hard = 64) and more silent
// connections than it may open descriptors. Before, accept(2)'s EMFILE left the
// connection queued and the listener readable, and the server polled it in a spin,
// serving no one; now it holds fewer handshakes (dropping the oldest) and serves the
// honest client, its CPU idle meanwhile. Loopback only, 200 connections, bounded waits.
TEST(KvDisagg, ServesAnHonestClientPastItsOpenFileLimitWithoutSpinning) {
  TempDir dir;
  const std::string model = test_support::tiny_model();
  kv_test::KvServeNode server(dir.path(), {"-m", model, "-t", "1", "--timeout-ms", "30000"},
                              "echo $$ > " + dir.file("pid") + " && ulimit -n 64 && exec ");
  ASSERT_GT(server.port(), 0) << server.error();
  std::string pid = test_support::read_file(dir.file("pid"));
  pid.erase(pid.find_last_not_of(" \n") + 1);
  const std::string limits = test_support::read_file("/proc/" + pid + "/limits");
  ASSERT_NE(limits.find("Max open files            64                   64 "), std::string::npos) << limits;
  // Its user and system time (fields 14 and 15 of /proc/PID/stat, after the command's ")").
  auto cpu_s = [&] {
    const std::string stat = test_support::read_file("/proc/" + pid + "/stat");
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::vector<std::string> f{std::istream_iterator<std::string>(fields), {}};
    return f.size() > 12 ? (std::stod(f[11]) + std::stod(f[12])) / static_cast<double>(sysconf(_SC_CLK_TCK)) : -1.0;
  };

  std::vector<int> silent;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(server.port()));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int i = 0; i < 200; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof(to)), 0) << std::strerror(errno);
    silent.push_back(fd);  // never sends its auth frame
  }
  const double cpu_before = cpu_s();
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const double cpu_idle = cpu_s() - cpu_before;
  EXPECT_LT(cpu_idle, 0.5) << "kv-serve used the CPU for " << cpu_idle << " s of 3 s with nothing to do";

  const auto start = std::chrono::steady_clock::now();
  const auto honest = decode_node({"bench", "-m", model, "-p", "16", "-n", "0", "-r", "1", "--no-warmup", "-t", "1",
                                   "--ceilings", "off", "--sample-hz", "0", "--no-store", "-q", "-o", "md",
                                   "--prefill-remote", server.address(), "--prefill-remote-required"});
  EXPECT_EQ(honest.exit_code, 0) << honest.err << server.error();
  EXPECT_NE(honest.out.find("| pp16 | remote |"), std::string::npos) << honest.out;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
  for (const int fd : silent) close(fd);
  const std::string log = server.error();
  EXPECT_NE(log.find("handshakes at once: "), std::string::npos) << log;
  EXPECT_NE(log.find("dropped: "), std::string::npos) << log;
}

TEST(KvDisagg, MissingTokenIsBadInput) {
  const auto r =
      run_process({EDGEPROBE_BINARY, "kv-serve", "-m", "nothing.gguf"}, 30, {{"EDGEPROBE_KV_TOKEN", ""}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no shared-secret token"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace edgeprobe
