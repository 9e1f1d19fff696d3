// The endpoint engine against llama-server from the same cached llama.cpp build, started
// here on a free loopback port with a synthesized model: bench and a short session
// complete, and greedy output matches the in-process engine's for the same model.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
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

class LlamaServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(llama_server())) return;
    model_ = tiny_model();
    dir_ = new TempDir();
    port_ = free_loopback_port();
    server_ =
        new ServerProcess({llama_server(), "-m", model_, "--host", "127.0.0.1", "--port",
                           std::to_string(port_), "-t", "2", "-c", "1024", "-np", "1", "--alias", "tiny"},
                          dir_->file("server.log"));
    ready_ = wait_for_http(port_, "/health", 120, *server_);
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }
  void SetUp() override {
    if (!std::filesystem::exists(llama_server()))
      GTEST_SKIP() << "no llama-server at " << llama_server()
                   << ": build llama.cpp with scripts/build-llama.sh (flavour dl-allvariants-2 or later)";
    ASSERT_TRUE(ready_) << "llama-server did not come up; its log:\n" << read_file(dir_->file("server.log"));
  }
  static std::string url() { return "http://127.0.0.1:" + std::to_string(port_); }

  static inline TempDir* dir_ = nullptr;
  static inline ServerProcess* server_ = nullptr;
  static inline int port_ = 0;
  static inline bool ready_ = false;
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

}  // namespace
