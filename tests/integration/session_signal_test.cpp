// Ctrl-C and SIGTERM during a session: the turn in flight finishes, every finished turn is
// kept and stored, the process exits cleanly (not killed) with a non-zero code, and
// --resume runs exactly what is missing.
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

std::string prompts_file(const TempDir& dir) {
  const std::string path = dir.file("prompts.jsonl");
  write_file(path,
             "{\"id\": \"a\", \"lang\": \"en\", \"turns\": [\"Tell me about lighthouses.\", \"Shorter, please.\"]}\n"
             "{\"id\": \"b\", \"lang\": \"en\", \"turns\": [\"Name three rivers.\", \"And three lakes?\"]}\n");
  return path;
}

pid_t spawn(const std::vector<std::string>& args, const std::string& stdout_path) {
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

edgeprobe::store::RunSummary first_run(const std::string& db) {
  auto s = edgeprobe::store::open_store(db, edgeprobe::store::Mode::kMustExist);
  const auto runs = s->list_runs({});
  return runs.empty() ? edgeprobe::store::RunSummary{} : runs[0];
}

int64_t wait_for_turns(const std::string& db, int64_t n) {
  int64_t stored = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (std::chrono::steady_clock::now() < deadline && stored < n) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    try {
      stored = first_run(db).turns;
    } catch (const std::exception&) {
    }
  }
  return stored;
}

void stop_mid_session_then_resume(int signal_number) {
  TempDir dir;
  const std::string db = dir.file("results.db");
  const pid_t pid = spawn({"session", "-m", tiny_model(), "--prompts", prompts_file(dir), "--rounds", "6",
                           "--max-tokens", "32", "--db", db, "-q", "-o", "json"},
                          dir.file("out.json"));
  ASSERT_GT(pid, 0);
  const int64_t before = wait_for_turns(db, 3);
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

TEST(SessionSignals, CtrlCStopsAfterTheTurnInFlightAndResumeRunsTheRest) { stop_mid_session_then_resume(SIGINT); }
TEST(SessionSignals, SigtermStopsAfterTheTurnInFlightAndResumeRunsTheRest) { stop_mid_session_then_resume(SIGTERM); }
