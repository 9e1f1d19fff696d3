// Sessions through the real engine on a tiny synthesized model, and the store's promise:
// a kill -9 mid-run loses at most the turn in flight, Ctrl-C or SIGTERM stop after it, and
// --resume finishes the plan.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "store/store.h"
#include "support/run_process.h"

using namespace edgeprobe::test_support;
using nlohmann::json;

namespace {

std::string two_by_two_prompts(const TempDir& dir) {
  const std::string path = dir.file("prompts.jsonl");
  write_file(path,
             "{\"id\": \"a\", \"lang\": \"en\", \"turns\": [\"Please summarise the plot of a short story about a "
             "lighthouse keeper in three sentences.\", \"Now make it funnier and shorter than before.\"]}\n"
             "{\"id\": \"b\", \"lang\": \"zh\", \"turns\": [\"请用三句话介绍一下北京的历史和今天的样子。\", "
             "\"再补充一下适合秋天去的景点，谢谢。\"]}\n");
  return path;
}

// Starts edgeprobe in the background (stdout to `stdout_path`, stderr discarded) and
// returns its pid.
pid_t spawn_edgeprobe(const std::vector<std::string>& args, const std::string& stdout_path = "/dev/null") {
  const pid_t pid = fork();
  if (pid == 0) {
    setenv("XDG_CACHE_HOME", (std::string(EDGEPROBE_BUILD_DIR) + "/test-home/cache").c_str(), 1);
    const int out = open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(out, STDOUT_FILENO);
    dup2(devnull, STDERR_FILENO);
    std::vector<char*> argv{const_cast<char*>(EDGEPROBE_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(EDGEPROBE_BINARY, argv.data());
    _exit(127);
  }
  return pid;
}

// Polls the store (as another reader would, while the run writes) until its first run
// holds at least `n` repetitions or turns; returns how many it saw.
int64_t wait_until_stored(const std::string& db, int64_t n, bool turns) {
  int64_t stored = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (std::chrono::steady_clock::now() < deadline && stored < n) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    try {
      auto s = edgeprobe::store::open_store(db, edgeprobe::store::Mode::kMustExist);
      const auto runs = s->list_runs();
      stored = runs.empty() ? 0 : turns ? runs[0].turns : runs[0].repetitions;
    } catch (const std::exception&) {
    }
  }
  return stored;
}

// Ctrl-C and SIGTERM during a session: the turn in flight finishes, every finished turn is
// kept and stored, the process exits cleanly (not killed) with 130, and --resume runs
// exactly what is missing.
edgeprobe::store::RunSummary first_run(const std::string& db) {
  auto s = edgeprobe::store::open_store(db, edgeprobe::store::Mode::kMustExist);
  const auto runs = s->list_runs({});
  return runs.empty() ? edgeprobe::store::RunSummary{} : runs[0];
}

void stop_mid_session_then_resume(int signal_number) {
  TempDir dir;
  const std::string db = dir.file("results.db");
  const pid_t pid = spawn_edgeprobe({"session", "-m", tiny_model(), "--prompts", two_by_two_prompts(dir), "--rounds",
                                     "6", "--max-tokens", "32", "--db", db, "-q", "-o", "json"},
                                    dir.file("out.json"));
  ASSERT_GT(pid, 0);
  const int64_t before = wait_until_stored(db, 3, true);
  kill(pid, signal_number);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "the signal must end the session cleanly, not kill it";
  EXPECT_EQ(WEXITSTATUS(status), 130);
  ASSERT_GE(before, 3);

  const auto stopped = first_run(db);
  EXPECT_EQ(stopped.status, "failed");
  EXPECT_GE(stopped.turns, before);  // every finished turn kept
  EXPECT_LT(stopped.turns, 6 * 4);   // and it did stop
  // What it printed is the report of the turns it finished, not nothing.
  const json partial = json::parse(read_file(dir.file("out.json")));
  EXPECT_EQ(static_cast<int64_t>(partial["configs"][0]["turns"].size()), stopped.turns);

  const auto r = run_edgeprobe({"session", "--resume", "1", "--db", db, "-o", "json", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto done = first_run(db);
  EXPECT_EQ(done.status, "complete");
  EXPECT_EQ(done.turns, 6 * 4);  // every (round, conversation, turn) exactly once
  EXPECT_EQ(json::parse(r.out)["configs"][0]["turns"].size(), 24u);
}


}  // namespace

TEST(SessionCli, ShortSessionKeepsHistoryInTheKvCacheAndScoresQes) {
  TempDir dir;
  const auto r = run_edgeprobe({"session", "-m", tiny_model(), "--prompts", two_by_two_prompts(dir), "--rounds", "1",
                                "--max-tokens", "8", "-o", "json", "-q", "--db", dir.file("r.db")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["configs"].size(), 1u);
  const json& turns = j["configs"][0]["turns"];
  ASSERT_EQ(turns.size(), 4u);
  for (const auto& t : turns) {
    EXPECT_GT(t["ttft_ms"].get<double>(), 0);
    EXPECT_GT(t["prompt_tokens"].get<int>(), 0);
    EXPECT_GE(t["generated_tokens"].get<int>(), 1);
    EXPECT_LE(t["generated_tokens"].get<int>(), 8);
    EXPECT_TRUE(t["telemetry"].contains("decode"));
  }
  // The second turn prefills only its new tokens: the cache holds more than it prefilled.
  EXPECT_GT(turns[1]["context_tokens"].get<int>(), turns[1]["prompt_tokens"].get<int>() + turns[0]["prompt_tokens"].get<int>());
  const json& qes = j["configs"][0]["analysis"]["qes"];
  EXPECT_TRUE(qes["total"].is_number());
  EXPECT_NE(qes["rests_on"].dump().find("responsiveness"), std::string::npos);
  // No thermal zone on this machine: temperature must be named unavailable, not invented.
  EXPECT_NE(qes["unavailable"].dump().find("temperature"), std::string::npos);
}

TEST(SessionCli, KillNineLosesAtMostTheTurnInFlightAndResumeFinishesThePlan) {
  TempDir dir;
  const std::string db = dir.file("results.db");
  const std::string prompts = two_by_two_prompts(dir);
  const pid_t pid = spawn_edgeprobe({"session", "-m", tiny_model(), "--prompts", prompts, "--rounds", "6",
                                     "--max-tokens", "48", "--db", db, "-q"});
  ASSERT_GT(pid, 0);
  // Kill it once a few turns are stored.
  const int64_t stored_before_kill = wait_until_stored(db, 5, true);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the session finished before it could be killed";
  ASSERT_GE(stored_before_kill, 5);

  {
    auto s = edgeprobe::store::open_store(db, edgeprobe::store::Mode::kMustExist);
    EXPECT_EQ(s->integrity_check(), "ok");
    const auto runs = s->list_runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].status, "running");
    EXPECT_GE(runs[0].turns, stored_before_kill);  // nothing committed was lost
    EXPECT_LT(runs[0].turns, 6 * 4);
  }
  const auto r = run_edgeprobe({"session", "--resume", "1", "--db", db, "-o", "json", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto s = edgeprobe::store::open_store(db, edgeprobe::store::Mode::kMustExist);
  const auto runs = s->list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, "complete");
  EXPECT_EQ(runs[0].turns, 6 * 4);  // every (round, conversation, turn) exactly once
  EXPECT_EQ(json::parse(r.out)["configs"][0]["turns"].size(), 24u);
}

TEST(SessionCli, BadPromptFileIsOneLineExitTwo) {
  TempDir dir;
  write_file(dir.file("bad.jsonl"), "{\"id\": \"x\", \"turns\": []}\n");
  const auto r = run_edgeprobe({"session", "-m", tiny_model(), "--prompts", dir.file("bad.jsonl"), "--no-store", "-q"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.jsonl:1"), std::string::npos) << r.err;
}

TEST(BenchStore, CtrlCKeepsEveryFinishedRepetitionAndResumeRunsOnlyTheRest) {
  TempDir dir;
  const std::string db = dir.file("results.db");
  const pid_t pid = spawn_edgeprobe({"bench", "-m", tiny_model(), "-p", "512", "-n", "128", "-r", "8", "-t", "1,2",
                                     "--db", db, "-q", "--ceilings", "off"});
  ASSERT_GT(pid, 0);
  const int64_t stored = wait_until_stored(db, 3, false);
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "Ctrl-C must end the run cleanly, not kill it";
  EXPECT_NE(WEXITSTATUS(status), 0);  // an interrupted sweep is not a success
  {
    auto s = edgeprobe::store::open_store(db, edgeprobe::store::Mode::kMustExist);
    const auto runs = s->list_runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_GE(runs[0].repetitions, stored);
    EXPECT_LT(runs[0].repetitions, 4 * 8);
  }
  const auto r = run_edgeprobe({"bench", "--resume", "1", "--db", db, "-o", "json", "-q", "--ceilings", "off"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto s = edgeprobe::store::open_store(db, edgeprobe::store::Mode::kMustExist);
  EXPECT_EQ(s->list_runs()[0].repetitions, 4 * 8);  // 2 thread counts x (pp, tg) x 8, each once
  EXPECT_EQ(s->list_runs()[0].status, "complete");
  const json j = json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 4u);
  for (const auto& res : j["results"]) EXPECT_EQ(res["repetitions"].size(), 8u);
}

TEST(SessionSignals, CtrlCStopsAfterTheTurnInFlightAndResumeRunsTheRest) { stop_mid_session_then_resume(SIGINT); }
TEST(SessionSignals, SigtermStopsAfterTheTurnInFlightAndResumeRunsTheRest) { stop_mid_session_then_resume(SIGTERM); }
