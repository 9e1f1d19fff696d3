// The real binary against a local OpenAI-compatible server written for the test
// (fake_openai_server.py): a well-behaved stream, then every way a server misbehaves.
// Each must end as an error row or a bounded retry, never a hang or a crash.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <tuple>

#include "core/text.h"
#include "server_process.h"
#include "support/run_process.h"

using namespace edgeprobe::test_support;
using nlohmann::json;

namespace {

class FakeServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    server_ =
        new ServerProcess({"python3", std::string(EDGEPROBE_TEST_DATA_DIR) + "/http/fake_openai_server.py"},
                          dir_->file("server.log"));
    const std::string port = first_line(dir_->file("server.log"), 20);
    url_ = "http://127.0.0.1:" + port;
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }
  void SetUp() override {
    if (url_ == "http://127.0.0.1:") GTEST_SKIP() << "the fake server did not start (python3 missing?)";
  }

  // bench through the endpoint with `model` as the API model name; JSON on stdout.
  static ProcessResult bench(const std::string& model, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"bench", "--endpoint", url_, "--api-model", model, "-p", "0", "-n", "0",
                                     "--no-warmup", "--no-store", "-o", "json", "-q"};
    // Defaults a test may override (CLI11 takes each of these once).
    for (const auto& [flag, value] : {std::pair{"-r", "1"}, {"--sample-hz", "0"}, {"--pg", "8,4"}})
      if (std::find(extra.begin(), extra.end(), flag) == extra.end()) args.insert(args.end(), {flag, value});
    args.insert(args.end(), extra.begin(), extra.end());
    return run_edgeprobe(args, 90);
  }

  static inline TempDir* dir_ = nullptr;
  static inline ServerProcess* server_ = nullptr;
  static inline std::string url_;
};

json parse(const ProcessResult& r) {
  try {
    return json::parse(r.out);
  } catch (const json::exception&) {
    ADD_FAILURE() << "not JSON on stdout: " << r.out << "\nstderr: " << r.err;
    return json::object();
  }
}

TEST_F(FakeServer, AWellBehavedStreamGivesClientTimingsPerToken) {
  const auto r = bench("ok", {"-r", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = parse(r);
  EXPECT_EQ(j["provenance"]["engine"]["kind"], "endpoint");
  EXPECT_EQ(j["provenance"]["engine"]["details"]["server_headers"]["server"], "fake-openai/1.0");
  ASSERT_EQ(j["results"].size(), 1u);
  const auto& reps = j["results"][0]["repetitions"];
  ASSERT_EQ(reps.size(), 2u);
  for (const auto& rep : reps) {
    EXPECT_GT(rep["ttft_ms"].get<double>(), 0);
    EXPECT_EQ(rep["decode_step_ms"].size(), 3u);                   // four tokens: three gaps
    double itl_sum = 0;
    for (double itl : rep["decode_step_ms"]) itl_sum += itl;
    EXPECT_NEAR(itl_sum, rep["decode_ms"].get<double>(), 1e-6);
    // The server sleeps 5 ms before each token: no chunk can arrive earlier than that
    // (lower bounds only; a loaded machine may deliver two chunks at once).
    EXPECT_GE(rep["ttft_ms"].get<double>(), 5.0);
    EXPECT_GE(rep["request"]["e2e_ms"].get<double>(), 20.0);
    EXPECT_EQ(rep["request"]["completion_tokens"], 4);
    EXPECT_EQ(rep["request"]["finish_reason"], "length");
    EXPECT_EQ(rep["request"]["server"]["itl_basis"], "token");
    EXPECT_GE(rep["request"]["e2e_ms"].get<double>(), rep["ttft_ms"].get<double>());
  }
}

TEST_F(FakeServer, SlowFirstByteIsWaitedForAndCountsInTtft) {
  const auto r = bench("slow-first-byte", {"--api", "chat"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = parse(r);
  EXPECT_GE(j["results"][0]["repetitions"][0]["ttft_ms"].get<double>(), 1400);
}

TEST_F(FakeServer, RateLimitedRequestsRetryAsRetryAfterSaysThenSucceed) {
  const auto r = bench("e429");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(parse(r)["results"][0]["repetitions"][0]["request"]["server"]["retries"], 2);
}

struct Misbehaviour {
  std::string model, message;
  std::vector<std::string> extra;
};

TEST_F(FakeServer, EveryMisbehaviourIsAnErrorRowAndTheSweepGoesOn) {
  const std::vector<Misbehaviour> cases = {
      {"cut", "closed mid-answer", {}},
      {"malformed", "malformed event", {}},
      {"e500", "HTTP 500", {}},
      {"e429-always", "HTTP 429 after 4 tries", {}},
      {"nonjson", "expected an event stream", {}},
      {"endless", "does not end", {}},
      {"stall", "timed out", {"--request-timeout", "3"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.model);
    const auto t0 = std::chrono::steady_clock::now();
    auto extra = c.extra;
    extra.insert(extra.end(), {"--pg", "8,4", "--pg", "8,6"});  // the second test runs after the first failed
    const auto r = bench(c.model, extra);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.exit_code, 3)
        << r.err;  // an environment failure, not a crash (134/139) or a hang (harness kill)
    EXPECT_LT(seconds, 40);
    const json j = parse(r);
    ASSERT_EQ(j["results"].size(), 2u);
    for (const auto& res : j["results"]) {
      ASSERT_TRUE(res["error"].is_object()) << res.dump();
      EXPECT_NE(res["error"]["message"].get<std::string>().find(c.message), std::string::npos)
          << res["error"].dump();
    }
  }
}

TEST_F(FakeServer, ASessionRunsTurnsAsChatRequests) {
  TempDir tmp;
  write_file(tmp.file("p.jsonl"), R"({"id": "c1", "turns": ["hello there", "and again"]})"
                                  "\n");
  const auto r = run_edgeprobe(
      {"session", "--endpoint", url_, "--api-model", "ok", "--prompts", tmp.file("p.jsonl"), "--rounds", "1",
       "--max-tokens", "5", "--sample-hz", "0", "--no-store", "-o", "json", "-q"},
      90);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = parse(r);
  ASSERT_EQ(j["configs"].size(), 1u) << r.out;
  const auto& turns = j["configs"][0]["turns"];
  ASSERT_EQ(turns.size(), 2u);
  for (const auto& t : turns) {
    EXPECT_EQ(t["generated_tokens"], 5);
    EXPECT_EQ(t["reply"], " tok0 tok1 tok2 tok3 tok4");
    EXPECT_EQ(t["stop_reason"], "max_tokens");
    EXPECT_EQ(t["request"]["api"], "chat");
  }
}

TEST_F(FakeServer, TheApiKeyIsSentButNeverStoredPrintedOrLogged) {
  TempDir tmp;
  const std::string key = "sk-canary-5f1e2d3c";
  auto key_server = std::make_unique<ServerProcess>(
      std::vector<std::string>{"env", "EXPECT_KEY=" + key, "python3",
                               std::string(EDGEPROBE_TEST_DATA_DIR) + "/http/fake_openai_server.py"},
      tmp.file("server.log"));
  const std::string url = "http://127.0.0.1:" + first_line(tmp.file("server.log"), 20);
  const std::string base = std::string(EDGEPROBE_BUILD_DIR) + "/test-home";
  const std::vector<std::pair<std::string, std::string>> env = {{"XDG_CACHE_HOME", base + "/cache"},
                                                                {"XDG_DATA_HOME", base + "/data"}};
  const std::vector<std::string> args = {EDGEPROBE_BINARY, "bench", "--endpoint", url, "--api-model", "ok",
                                         "--pg", "4,2", "-p", "0", "-n", "0", "-r", "1", "--sample-hz", "0",
                                         "--db", tmp.file("runs.db"), "-o", "json", "-v",
                                         "--trace", tmp.file("trace.json")};
  // Without the key the server refuses: so the run that passes below did send it.
  const auto refused = run_process(args, 60, env);
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("EDGEPROBE_API_KEY"), std::string::npos) << refused.err;
  auto with_key = env;
  with_key.emplace_back("EDGEPROBE_API_KEY", key);
  const auto r = run_process(args, 60, with_key);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find(key), std::string::npos);
  EXPECT_EQ(r.err.find(key), std::string::npos);
  EXPECT_EQ(read_file(tmp.file("runs.db")).find(key), std::string::npos);
  EXPECT_EQ(read_file(tmp.file("trace.json")).find(key), std::string::npos);
  EXPECT_EQ(parse(r)["provenance"]["engine"]["details"]["api_key_set"], true);
}

TEST_F(FakeServer, BadInputIsOneLineAndExitTwo) {
  const std::vector<std::vector<std::string>> cases = {
      {"--endpoint", "http://127.0.0.1:1", "--api-model", "ok"},  // nothing listens on port 1
      {"--endpoint", "ftp://127.0.0.1/", "--api-model", "ok"},
      {"--endpoint", url_},  // no --api-model
      {"--endpoint", url_, "--api-model", "no-such-model"},
      {"--endpoint", url_, "--api-model", "ok", "--api", "embeddings"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"bench", "-p", "4", "-n", "2", "-r", "1", "--no-store", "-q"};
    args.insert(args.end(), c.begin(), c.end());
    const auto r = run_edgeprobe(args, 60);
    SCOPED_TRACE(r.err);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
  }
}

}  // namespace

namespace {

TEST_F(FakeServer, ServerPidPointsTelemetryAtTheServersThreads) {
  const auto r =
      bench("ok", {"--sample-hz", "50", "--server-pid", std::to_string(server_->pid()), "--pg", "8,40"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = parse(r);
  EXPECT_EQ(j["provenance"]["telemetry_pid"], server_->pid()) << j["provenance"].dump();
  EXPECT_FALSE(j["results"][0]["repetitions"][0]["telemetry"].is_null());
  const auto gone = bench("ok", {"--server-pid", "999999999"});
  EXPECT_EQ(gone.exit_code, 2) << gone.err;
}

TEST_F(FakeServer, ConcurrencySweepAndRequestRateGiveVllmStyleSummaries) {
  const auto r = bench("ok", {"--concurrency", "1,2", "--request-rate", "50", "--num-requests", "6", "--slo",
                              "ttft_ms=10000,tpot_ms=1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json serving = parse(r)["results"][0]["serving"];
  ASSERT_EQ(serving.size(), 3u) << serving.dump();
  EXPECT_EQ(serving[0]["concurrency"], 1);
  EXPECT_EQ(serving[1]["concurrency"], 2);
  EXPECT_EQ(serving[2]["request_rate"], 50.0);
  for (const auto& level : serving) {
    EXPECT_EQ(level["completed"], 6);
    EXPECT_EQ(level["total_output_tokens"], 24);
    EXPECT_GT(level["request_throughput"].get<double>(), 0);
    EXPECT_EQ(level["goodput"], level["request_throughput"]);  // generous bounds: every request is good
    for (const char* k :
         {"mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "p90_itl_ms", "p99_e2el_ms"})
      EXPECT_TRUE(level[k].is_number()) << k;
  }
  const auto failing = bench("e500", {"--concurrency", "2", "--num-requests", "4"});
  EXPECT_EQ(failing.exit_code, 3);  // the repetitions failed: an error row, and no crash
}

}  // namespace

// Hostile servers (docs/endpoint.md): each ends as one escaped line (an error row, or the
// refusal to start) with a documented exit code, in bounded time and memory: the client
// runs under a 2 GB address-space limit, which an unbounded buffer would hit.
namespace {

ProcessResult bench_limited(const std::string& url, const std::string& model, std::vector<std::string> extra) {
  std::string command = "ulimit -v 2000000; exec " + edgeprobe::shell_quote(EDGEPROBE_BINARY);
  std::vector<std::string> args = {"bench", "--endpoint", url, "--api-model", model, "-p", "0", "-n", "0",
                                   "--no-warmup", "--no-store", "-o", "json", "-q", "-r", "1", "--sample-hz", "0"};
  args.insert(args.end(), extra.begin(), extra.end());
  for (const auto& a : args) command += " " + edgeprobe::shell_quote(a);
  return run_process({"/bin/sh", "-c", command}, 90);
}

void expect_one_escaped_line(const std::string& text) {
  EXPECT_EQ(text.find('\n'), std::string::npos) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find("\xc2\x9b"), std::string::npos) << text;
  EXPECT_LT(text.size(), 2000u) << text;
}

TEST_F(FakeServer, HostileStreamsEndAsOneLineErrorRows) {
  const std::vector<Misbehaviour> cases = {
      {"no-dispatch", "an event over 1 MiB without its end", {}},
      {"no-newline", "an event over 1 MiB without its end", {}},
      {"tiny-events", "events for max_tokens 4; a stream that does not end", {}},
      {"comments", "MiB for max_tokens 4; a stream that does not end", {}},
      {"bad-utf8", "malformed event (not JSON)", {}},
      {"deep-json", "malformed event (nested deeper than 64 levels)", {}},
      {"huge-text", "bytes of text for max_tokens 4", {}},
      {"cl-lie", "closed mid-answer", {}},
      {"gzip", "'gzip'-encoded answer", {}},
      {"redirect", "the server redirects (HTTP 307", {}},
      {"slowloris", "timed out", {"--request-timeout", "3"}},
      {"e500-multiline", "HTTP 500: the model crashed\\nTraceback:\\n  line 2\\x1b[2J\\x1b]0;pwned\\x07\\u009b31m", {}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.model);
    const auto t0 = std::chrono::steady_clock::now();
    auto extra = c.extra;
    extra.insert(extra.end(), {"--pg", "8,4"});
    const auto r = bench_limited(url_, c.model, extra);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_LT(seconds, 30);
    const json j = parse(r);
    ASSERT_EQ(j["results"].size(), 1u);
    const auto& res = j["results"][0];
    ASSERT_TRUE(res["error"].is_object()) << res.dump();
    const std::string message = res["error"]["message"];
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
    expect_one_escaped_line(message);
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos);  // escaped in the JSON too
  }
}

TEST_F(FakeServer, WhatWasMeasuredBeforeAServerTurnsHostileIsKept) {
  const auto r = bench_limited(url_, "ok-then-no-dispatch", {"--pg", "8,4", "--pg", "8,6"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const json j = parse(r);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_TRUE(j["results"][0]["error"].is_null()) << j["results"][0].dump();
  EXPECT_EQ(j["results"][0]["repetitions"].size(), 1u);
  EXPECT_NE(j["results"][1]["error"]["message"].get<std::string>().find("an event over 1 MiB"), std::string::npos);
}

TEST_F(FakeServer, OddButValidContentAndWrongTypesStillMeasure) {
  auto r = bench_limited(url_, "nul-escape", {"--pg", "8,4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(parse(r)["results"][0]["repetitions"][0]["request"]["completion_tokens"], 4);
  r = bench_limited(url_, "wrong-types", {"--pg", "8,4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rep = parse(r)["results"][0]["repetitions"][0];
  EXPECT_EQ(rep["request"]["completion_tokens"], 4) << rep.dump();
}

TEST_F(FakeServer, HostileModelListsAndRedirectsAreRefusedBeforeRunning) {
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"redirect-loop", "ok", "the server redirects (HTTP 302 to /h/redirect-loop/v1/models)"},
      {"redirect-away", "ok", "the server redirects (HTTP 301 to http://192.0.2.1/v1/models)"},
      {"gzip-bomb", "ok", "'gzip'-encoded answer"},
      {"cl-lie", "ok", "closed mid-answer"},
      {"slowloris", "ok", "timed out"},
      {"escape-names", "nope", "(it lists: evil\\x1b[2J\\x1b]0;pwned\\x07\\u009b31m, two\\nlines, xxx"},
  };
  for (const auto& [mode, model, message] : cases) {
    SCOPED_TRACE(mode);
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = bench_limited(url_ + "/h/" + mode, model, {"--pg", "8,4", "--request-timeout", "3"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    expect_one_escaped_line(r.err.substr(0, r.err.size() - 1));
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
  // Fields of the wrong JSON types, or a list nested 200,000 deep, are not read: the run
  // goes on with what is usable.
  for (const char* mode : {"wrong-types", "deep-json"}) {
    const auto r = bench_limited(url_ + "/h/" + mode, "ok", {"--pg", "8,4"});
    EXPECT_EQ(r.exit_code, 0) << mode << ": " << r.err;
  }
}

TEST_F(FakeServer, AServerHeaderWithEscapesIsStoredEscaped) {
  const auto r = bench_limited(url_ + "/h/escape-names", "two\nlines", {"--pg", "8,4"});
  // Listed (by that very name): the run starts and its provenance holds the header escaped.
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(parse(r)["provenance"]["engine"]["details"]["server_headers"]["server"], "fake\\x1b[31m");
}

}  // namespace
