// The endpoint engine against llama-server from the same cached llama.cpp build, started
// here on a free loopback port with a synthesized model: bench and a short session
// complete, and greedy output matches the in-process engine's for the same model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <nlohmann/json.hpp>

#include "server_process.h"
#include "support/run_process.h"

using namespace edgeprobe::test_support;
using nlohmann::json;

namespace {

// The llama-server of the cached build this tree was configured with; the environment may
// name another one (EDGEPROBE_LLAMA_SERVER).
std::string llama_server() {
  const char* env = std::getenv("EDGEPROBE_LLAMA_SERVER");
  return env && *env ? env : EDGEPROBE_LLAMA_SERVER;
}

// One llama-server for a test suite: started before its first test, stopped after its last.
struct SuiteServer {
  TempDir* dir = nullptr;
  ServerProcess* process = nullptr;
  int port = 0;
  bool ready = false;
  void start(const std::string& model, const std::string& threads, const std::string& ctx, const std::string& alias) {
    dir = new TempDir();
    port = free_loopback_port();
    process = new ServerProcess({llama_server(), "-m", model, "--host", "127.0.0.1", "--port", std::to_string(port),
                                 "-t", threads, "-c", ctx, "-np", "1", "--alias", alias},
                                dir->file("server.log"));
    ready = wait_for_http(port, "/health", 120, *process);
  }
  void stop() {
    delete process;
    delete dir;
    process = nullptr;
    dir = nullptr;
  }
  // In a test's SetUp: skips without a llama-server, fails when it did not come up.
  void require() const {
    if (!std::filesystem::exists(llama_server()))
      GTEST_SKIP() << "no llama-server at " << llama_server()
                   << ": build llama.cpp with scripts/build-llama.sh (flavour dl-allvariants-2 or later)";
    ASSERT_TRUE(ready) << "llama-server did not come up; its log:\n" << read_file(dir->file("server.log"));
  }
};

class LlamaServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(llama_server())) return;
    model_ = tiny_model();
    suite_.start(model_, "2", "1024", "tiny");
    server_ = suite_.process;
    port_ = suite_.port;
  }
  static void TearDownTestSuite() { suite_.stop(); }
  void SetUp() override { suite_.require(); }
  static std::string url() { return "http://127.0.0.1:" + std::to_string(port_); }

  static inline SuiteServer suite_;
  static inline ServerProcess* server_ = nullptr;
  static inline int port_ = 0;
  static inline std::string model_;
};

TEST_F(LlamaServer, BenchRecordsClientAndServerTimings) {
  const auto r = run_edgeprobe({"bench", "--endpoint", url(), "--api-model", "tiny", "--pg", "16,8", "-p", "0", "-n", "0",
                                "-r", "2", "--sample-hz", "0", "--no-store", "-o", "json", "-q"},
                               120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["provenance"]["engine"]["details"]["server"], "llama.cpp");
  EXPECT_EQ(j["provenance"]["models"][0]["name"], "tiny");
  ASSERT_EQ(j["results"].size(), 1u);
  ASSERT_EQ(j["results"][0]["repetitions"].size(), 2u);
  for (const auto& res : j["results"]) {
    ASSERT_TRUE(res["error"].is_null()) << res["error"].dump();
    for (const auto& rep : res["repetitions"]) {
      EXPECT_EQ(rep["request"]["prompt_tokens"], 16) << rep.dump();
      EXPECT_EQ(rep["request"]["completion_tokens"], 8);
      EXPECT_EQ(rep["request"]["server"]["itl_basis"], "token");
      const auto& timings = rep["request"]["server"]["timings"];
      ASSERT_TRUE(timings.is_object()) << rep.dump();
      EXPECT_EQ(timings["prompt_n"], 16);  // no cached prefix: the whole prompt was prefilled
      EXPECT_EQ(timings["predicted_n"], 8);
      // The server's own prefill is part of what the client waited for.
      EXPECT_LE(timings["prompt_ms"].get<double>(), rep["ttft_ms"].get<double>());
    }
  }
}

std::string first_reply(const std::vector<std::string>& extra, const TempDir& tmp) {
  std::vector<std::string> args = {"session", "--prompts", tmp.file("p.jsonl"), "--rounds", "1", "--max-tokens", "12",
                                   "-c", "512", "-t", "2", "--sample-hz", "0", "--no-store", "-o", "json", "-q"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = run_edgeprobe(args, 120);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out, nullptr, false);
  if (j.is_discarded() || j["configs"].empty() || j["configs"][0]["turns"].empty()) return "(no turn)";
  const auto& t = j["configs"][0]["turns"][0];
  EXPECT_TRUE(t["error"].is_null()) << t.dump();
  return t["reply"].get<std::string>();
}

TEST_F(LlamaServer, GreedyOutputMatchesTheInProcessEngine) {
  TempDir tmp;
  write_file(tmp.file("p.jsonl"), R"({"id": "c1", "turns": ["Tell me a story about a cat."]})"
                                  "\n");
  const std::string served = first_reply({"--endpoint", url(), "--api-model", "tiny"}, tmp);
  const std::string token_level = first_reply({"-m", model_}, tmp);
  const std::string request_level = first_reply({"-m", model_, "--api", "chat"}, tmp);
  EXPECT_FALSE(served.empty());
  EXPECT_EQ(served, token_level);
  EXPECT_EQ(served, request_level);
}

TEST_F(LlamaServer, TheInProcessEngineRunsTheSameRequestPathAndCompareRefusesToMixThem) {
  TempDir tmp;
  std::vector<std::string> files;
  for (const auto& extra : std::vector<std::vector<std::string>>{
           {"-m", model_, "--api", "completions"}, {"--endpoint", url(), "--api-model", "tiny"}}) {
    std::vector<std::string> args = {"bench", "--pg", "16,8", "-p", "0", "-n", "0", "-r", "2", "-t", "2",
                                     "--sample-hz", "0", "--no-store", "-o", "json", "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_edgeprobe(args, 120);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json rep = json::parse(r.out)["results"][0]["repetitions"][0];
    EXPECT_EQ(rep["request"]["prompt_tokens"], 16) << extra[0];
    EXPECT_EQ(rep["request"]["completion_tokens"], 8) << extra[0];
    files.push_back(tmp.file(extra[0].substr(2) + ".json"));
    write_file(files.back(), r.out);
  }
  const auto refused = run_edgeprobe({"compare", files[0], files[1]}, 60);
  EXPECT_EQ(refused.exit_code, 2) << refused.out << refused.err;
  EXPECT_NE(refused.out.find("not comparable"), std::string::npos) << refused.out;
  const auto forced = run_edgeprobe({"compare", files[0], files[1], "--force"}, 60);
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
}

// llama-server -t 1 (the client machine has more CPUs) with a small shape that has the
// built-in default's vocabulary (synth:tinyllama-1.1b's 32000 pieces from seed 42; the
// vocabulary depends only on its size and the seed), so its replies are the default's
// kind of text without the default's 600 MiB.
class DefaultVocabServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(llama_server())) return;
    model_ = synth_model("default-vocab", {"--shape", "tinyllama-1.1b", "--n-embd", "128", "--n-layer", "2",
                                           "--n-ff", "256", "--n-head", "4", "--n-head-kv", "2", "-q", "q4_0"});
    suite_.start(model_, "1", "2048", "dv");
    server_ = suite_.process;
    port_ = suite_.port;
  }
  static void TearDownTestSuite() { suite_.stop(); }
  void SetUp() override { suite_.require(); }
  static std::vector<std::string> endpoint(bool with_pid) {
    std::vector<std::string> a = {"--endpoint", "http://127.0.0.1:" + std::to_string(port_), "--api-model", "dv"};
    if (with_pid) a.insert(a.end(), {"--server-pid", std::to_string(server_->pid())});
    return a;
  }
  static ProcessResult bench(bool with_pid, const std::string& format) {
    std::vector<std::string> args = {"bench", "-p", "16", "-n", "32", "-r", "3", "-t", "2", "--seed", "3",
                                     "--sample-hz", "0", "--no-store", "-o", format, "-q"};
    const auto e = endpoint(with_pid);
    args.insert(args.end(), e.begin(), e.end());
    return run_edgeprobe(args, 180);
  }

  static inline SuiteServer suite_;
  static inline ServerProcess* server_ = nullptr;
  static inline int port_ = 0;
  static inline std::string model_;
};

// The cell under `header` in the markdown table row whose cells include `key`.
std::string md_cell(const std::string& md, const std::string& key, const std::string& header) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(md);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("|")) continue;
    std::vector<std::string> cells;
    std::istringstream l(line.substr(1));
    for (std::string c; std::getline(l, c, '|');) cells.push_back(c.substr(1, c.size() >= 2 ? c.size() - 2 : 0));
    rows.push_back(cells);
  }
  if (rows.empty()) return "(no table)";
  const auto& head = rows[0];
  const auto col = std::find(head.begin(), head.end(), header) - head.begin();
  for (const auto& r : rows)
    if (std::find(r.begin(), r.end(), key) != r.end() && col < static_cast<long>(r.size())) return r[col];
  return "(no row " + key + ")";
}

TEST_F(DefaultVocabServer, BenchPrefillAndDecodeCompleteAndNameTheServersThreadsNotTheClients) {
  const auto r = bench(true, "json");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out.substr(0, 2000);
  const json j = json::parse(r.out);
  const auto& ss = j["provenance"]["engine"]["details"]["server_side"];
  EXPECT_EQ(ss["threads"], 1) << ss.dump();  // llama-server -t 1; the client asked -t 2
  EXPECT_EQ(ss["threads_source"], "server command line");
  EXPECT_EQ(ss["model_path"], model_);  // llama-server's /props
  EXPECT_EQ(ss["slots"], 1);
  EXPECT_TRUE(ss["load_ms"].is_null());
  ASSERT_EQ(j["results"].size(), 2u);  // pp16, tg32
  for (const auto& res : j["results"]) {
    ASSERT_TRUE(res["error"].is_null()) << res["test"] << ": " << res["error"].dump();
    ASSERT_EQ(res["repetitions"].size(), 3u);
    // The server's load and memory are not this client's: absent, not the client's figures.
    EXPECT_TRUE(res["load"]["cold_ms"].is_null()) << res["load"].dump();
    EXPECT_TRUE(res["load"]["samples_ms"].empty()) << res["load"].dump();
    EXPECT_TRUE(res["peak_rss_bytes"].is_null()) << res["peak_rss_bytes"];
    for (const auto& rep : res["repetitions"]) {
      EXPECT_TRUE(rep["peak_rss_bytes"].is_null());
      EXPECT_EQ(rep["request"]["completion_tokens"], std::max(1, res["config"]["n_gen"].get<int>()));
    }
  }
  const auto md = bench(true, "md");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_EQ(md_cell(md.out, "tg32", "threads"), "1") << md.out;
  EXPECT_EQ(md_cell(md.out, "pp16", "peak RSS MiB"), "") << md.out;
  EXPECT_EQ(md_cell(md.out, "pp16", "load ms"), "") << md.out;
  EXPECT_NE(md.out.find("threads 1 (server command line)"), std::string::npos) << md.out;
}

TEST_F(DefaultVocabServer, WithoutItsProcessTheServersThreadsAreUnknownNotTheClients) {
  const auto r = bench(false, "md");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(md_cell(r.out, "tg32", "threads"), "n/a") << r.out;
  EXPECT_NE(r.out.find("threads n/a"), std::string::npos) << r.out;
  TempDir tmp;
  const auto csv = run_edgeprobe({"bench", "-p", "8", "-n", "0", "-r", "1", "-t", "2", "--sample-hz", "0", "--no-store",
                                  "-o", "csv", "-q", "--endpoint", "http://127.0.0.1:" + std::to_string(port_),
                                  "--api-model", "dv"},
                                 120);
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::istringstream lines(csv.out);
  std::string header, row;
  std::getline(lines, header);
  std::getline(lines, row);
  std::vector<std::string> h, v;
  for (std::istringstream in(header); std::getline(in, header, ',');) h.push_back(header);
  for (std::istringstream in(row); std::getline(in, row, ',');) v.push_back(row);
  v.resize(h.size());
  const auto at = [&](const std::string& name) { return v[std::find(h.begin(), h.end(), name) - h.begin()]; };
  EXPECT_EQ(at("n_threads"), "") << csv.out;  // not "2", the client's -t
  EXPECT_EQ(at("load_cold_ms"), "") << csv.out;
  EXPECT_EQ(at("peak_rss_bytes"), "") << csv.out;
}

TEST_F(DefaultVocabServer, AChatSessionCompletesEveryTurn) {
  TempDir tmp;
  write_file(tmp.file("p.jsonl"),
             R"({"id": "en", "turns": ["Tell me a story about a cat.", "Shorter, please.", "And one about a dog?"]})"
             "\n"
             R"({"id": "zh", "turns": ["请用三句话介绍一下北京。", "再说说上海。"]})"
             "\n");
  std::vector<std::string> args = {"session", "--prompts", tmp.file("p.jsonl"), "--rounds", "2", "--max-tokens", "40",
                                   "--api", "chat", "-t", "2", "--sample-hz", "0", "--no-store", "-o", "json", "-q"};
  const auto e = endpoint(true);
  args.insert(args.end(), e.begin(), e.end());
  const auto r = run_edgeprobe(args, 180);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out.substr(0, 2000);
  const json j = json::parse(r.out);
  ASSERT_EQ(j["configs"].size(), 1u);
  const auto& turns = j["configs"][0]["turns"];
  EXPECT_EQ(turns.size(), 10u);  // 2 rounds x 5 turns
  for (const auto& t : turns) {
    EXPECT_TRUE(t["error"].is_null()) << t.dump();
    EXPECT_GT(t["generated_tokens"].get<int>(), 0) << t.dump();
  }
  EXPECT_EQ(j["provenance"]["engine"]["details"]["server_side"]["threads"], 1);
}

// The default vocabulary in-process, token by token: greedy replies never hold a
// byte-fallback token (ids 5..260), so every reply is whole UTF-8 characters. With the
// former random output rows for them, 20 of 2304 greedy tokens (12 conversations, 64
// tokens a turn) were byte tokens: about 5 would be expected in the tokens here.
TEST(DefaultVocabulary, GreedyRepliesHoldNoByteToken) {
  const std::string model = synth_model("default-vocab", {"--shape", "tinyllama-1.1b", "--n-embd", "128", "--n-layer",
                                                          "2", "--n-ff", "256", "--n-head", "4", "--n-head-kv", "2",
                                                          "-q", "q4_0"});
  const auto r = run_edgeprobe({"session", "-m", model, "--conversations", "4", "--rounds", "1", "--max-tokens",
                                "48", "-c", "2048", "-t", "2", "--sample-hz", "0", "--no-store", "-o", "json", "-q"},
                               240);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  size_t tokens = 0;
  for (const auto& t : j["configs"][0]["turns"]) {
    ASSERT_TRUE(t["error"].is_null()) << t.dump();
    for (int id : t["reply_tokens"]) {
      ++tokens;
      EXPECT_FALSE(id >= 5 && id < 5 + 256) << "byte token " << id << " in " << t["conversation_id"];
    }
  }
  EXPECT_GT(tokens, 500u);  // enough that the former vocabulary would have shown some
}

}  // namespace
