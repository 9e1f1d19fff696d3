// The progress display as a user sees it: a bar with done/total and the time left on a
// terminal (a pseudo-terminal here), plain lines without control characters through a
// pipe, nothing with -q, a summary line at the end, and after Ctrl-C the exact command
// that continues the run.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <regex>
#include <iostream>
#include <sstream>
#include <thread>

#include "support/run_process.h"

using namespace edgeprobe::test_support;

namespace {

constexpr unsigned short kColumns = 100;

struct Captured {
  int exit_code = -1;
  std::string err;
};

// Runs edgeprobe with stderr on a pseudo-terminal kColumns wide or on a pipe, stdout to
// /dev/null. `on_output` sees the stderr read so far and the child's pid after each read.
Captured run_with_stderr(const std::vector<std::string>& args, bool terminal,
                         const std::function<void(const std::string&, pid_t)>& on_output = {}) {
  int reader = -1, writer = -1;
  if (terminal) {
    winsize ws{};
    ws.ws_row = 24;
    ws.ws_col = kColumns;
    if (openpty(&reader, &writer, nullptr, nullptr, &ws) != 0) return {};
  } else {
    int fds[2];
    if (pipe(fds) != 0) return {};
    reader = fds[0];
    writer = fds[1];
  }
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string home = std::string(EDGEPROBE_BUILD_DIR) + "/test-home";
    setenv("XDG_CACHE_HOME", (home + "/cache").c_str(), 1);
    setenv("XDG_DATA_HOME", (home + "/data").c_str(), 1);
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, STDOUT_FILENO);
    dup2(writer, STDERR_FILENO);
    close(reader);
    std::vector<char*> argv{const_cast<char*>(EDGEPROBE_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(EDGEPROBE_BINARY, argv.data());
    _exit(127);
  }
  close(writer);
  Captured c;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{reader, POLLIN, 0};
    if (poll(&p, 1, 1000) <= 0) continue;
    const ssize_t n = read(reader, buf, sizeof buf);
    if (n <= 0) break;  // EOF, or EIO once a pty's last writer closed
    c.err.append(buf, static_cast<size_t>(n));
    if (on_output) on_output(c.err, pid);
  }
  close(reader);
  if (std::chrono::steady_clock::now() >= deadline) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return c;
}

bool has_control_characters(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\n') || u == 0x7f;
  });
}

const std::vector<std::string> kBench = {"bench", "-p", "8", "-n", "4", "-r", "3", "--ceilings", "off", "--no-store",
                                         "-o", "csv"};

std::vector<std::string> bench_args(std::vector<std::string> extra = {}) {
  std::vector<std::string> a = kBench;
  a.insert(a.begin() + 1, {"-m", tiny_model()});
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace

TEST(ProgressCli, OnATerminalABarWithDoneTotalAndTimeLeftThenOneSummaryLine) {
  const auto r = run_with_stderr(bench_args(), true);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 2 tests (pp8, tg4) x 3 repetitions; the last unit is always drawn.
  EXPECT_NE(r.err.find("\r\x1b[K[####################] 6/6 repetitions  "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" left  test 2/2 tg4: repetition 3/3"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("edgeprobe: bench done: 6/6 repetitions in "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("; not stored (--no-store)"), std::string::npos) << r.err;
  // Every redraw fits the terminal's width (one column spare, so it never wraps).
  std::istringstream draws(r.err);
  std::string piece;
  while (std::getline(draws, piece, '\r')) {
    if (piece.rfind("\x1b[K", 0) == 0) piece = piece.substr(3);
    if (piece.find('\n') != std::string::npos) piece = piece.substr(0, piece.find('\n'));
    EXPECT_LT(piece.size(), kColumns) << piece;
  }
}

TEST(ProgressCli, ThroughAPipePlainLinesOnlyThenOneSummaryLine) {
  const auto r = run_with_stderr(bench_args(), false);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(has_control_characters(r.err)) << r.err;
  EXPECT_NE(r.err.find("edgeprobe: 0/6 repetitions, "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("edgeprobe: 6/6 repetitions, "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" elapsed, 0s left: test 2/2 tg4: repetition 3/3\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\nedgeprobe: bench done: 6/6 repetitions in "), std::string::npos) << r.err;
}

TEST(ProgressCli, QuietSaysNothing) {
  for (bool terminal : {true, false}) {
    const auto r = run_with_stderr(bench_args({"-q"}), terminal);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "") << "terminal: " << terminal;
  }
}

TEST(ProgressCli, CtrlCSaysWhatWasKeptAndTheExactCommandThatContinues) {
  TempDir dir;
  const std::string db = dir.file("results.db");
  bool sent = false;
  // On a terminal, so the bar shows repetitions as they finish: Ctrl-C after the first.
  const std::regex some_done("\\] [1-9][0-9]*/40 repetitions");
  auto r = run_with_stderr(
      {"bench", "-m", tiny_model(), "-p", "0", "-n", "16", "-r", "40", "--ceilings", "off", "--db", db, "-o", "csv"},
      true, [&](const std::string& err, pid_t pid) {
        if (!sent && std::regex_search(err, some_done)) sent = kill(pid, SIGINT) == 0;
      });
  ASSERT_TRUE(sent) << r.err;
  ASSERT_EQ(r.exit_code, 130) << r.err;
  r.err = std::regex_replace(r.err, std::regex("\r\n"), "\n");  // the terminal's line ends
  // What was kept: at least the repetition the bar showed, not all of them.
  EXPECT_TRUE(std::regex_search(r.err, std::regex("edgeprobe: bench interrupted after [1-9][0-9]*/40 repetitions")))
      << r.err;
  EXPECT_NE(r.err.find("/40 repetitions in "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("; what finished is kept as run 1 in " + db + "\n"), std::string::npos) << r.err;
  const std::string prefix = "edgeprobe: continue with: edgeprobe ";
  const auto at = r.err.find(prefix);
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string command = r.err.substr(at + prefix.size(), r.err.find('\n', at) - at - prefix.size());
  EXPECT_EQ(command, "bench --resume 1 --db " + db);

  // The command as printed finishes the run.
  std::vector<std::string> words;
  std::istringstream in(command);
  for (std::string w; in >> w;) words.push_back(w);
  const auto done = run_edgeprobe(words);
  ASSERT_EQ(done.exit_code, 0) << done.err;
  EXPECT_NE(done.err.find("edgeprobe: bench done: 40/40 repetitions in "), std::string::npos) << done.err;
  EXPECT_NE(done.err.find("; stored as run 1 in " + db), std::string::npos) << done.err;
}

TEST(ProgressCli, RunPlanStreamsUnitsAsProgressEventsWithDoneTotalAndTimeLeft) {
  TempDir dir;
  const nlohmann::json plan = {{"kind", "bench"},
                               {"sweep", {{"models", {tiny_model()}}, {"n_prompt", {16}}, {"n_gen", {4}}}},
                               {"repetitions", 2},
                               {"ceilings", "off"},
                               {"env", {{"sample_hz", 0}}}};
  write_file(dir.file("plan.json"), plan.dump());
  const auto r = run_edgeprobe({"run", "--plan", dir.file("plan.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<nlohmann::json> units;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    if (j["event"] == "progress" && j.contains("done")) units.push_back(j);
  }
  ASSERT_EQ(units.size(), 5u);  // before the first repetition, then after each of 4
  for (size_t i = 0; i < units.size(); ++i) {
    EXPECT_EQ(units[i]["done"], i);
    EXPECT_EQ(units[i]["total"], 4);
    EXPECT_EQ(units[i]["unit"], "repetitions");
    EXPECT_GE(units[i]["elapsed_s"].get<double>(), 0.0);
  }
  EXPECT_TRUE(units[0]["eta_s"].is_null());
  EXPECT_TRUE(units[1]["eta_is_guess"].get<bool>());
  EXPECT_EQ(units[4]["eta_s"], 0.0);
  EXPECT_FALSE(units[4]["eta_is_guess"].get<bool>());
}

TEST(ProgressCli, ProbeCountsItsMeasurementsInPlainLines) {
  // A small bandwidth buffer and no compute probe: one measurement, seconds long.
  const auto r = run_with_stderr({"probe", "--refresh", "--no-compute", "--buffer-mib", "16", "-t", "1"}, false);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(has_control_characters(r.err)) << r.err;
  EXPECT_NE(r.err.find("edgeprobe: 0/1 measurements, "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("measuring memory bandwidth, 1 to 1 threads"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("edgeprobe: 1/1 measurements, "), std::string::npos) << r.err;
  const auto quiet = run_with_stderr({"probe", "--no-compute", "--buffer-mib", "16", "-t", "1", "-q"}, false);
  ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
  EXPECT_EQ(quiet.err, "");
}

TEST(ProgressCli, ASessionWhoseConversationsEndEarlyStillEndsAtItsTotal) {
  // -c 64 (llama.cpp pads the context to 256 tokens and caps the batch at 64): the first
  // turn (~76 tokens, more than one batch) fits, the long second one does not, so the
  // conversation ends early and its third turn is settled, not waited for.
  TempDir dir;
  const std::string prompts = dir.file("prompts.jsonl");
  std::string long_turn;
  for (int i = 0; i < 12; ++i) long_turn += "Make it longer, with a second storm and a rescue at night. ";
  write_file(prompts, "{\"id\": \"a\", \"lang\": \"en\", \"turns\": [\"Tell me a story about a lighthouse keeper "
                      "and the sea, with three characters and a storm.\", \"" + long_turn + "\", \"And a third?\"]}\n");
  const std::string out = dir.file("session.json");
  const auto r = run_with_stderr({"session", "-m", tiny_model(), "--prompts", prompts, "--rounds", "1", "--max-tokens",
                                  "8", "-c", "64", "--no-store", "-o", "json", "--output", out, "--sample-hz", "0"},
                                 false);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("edgeprobe: 3/3 turns, "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("session done: 3/3 turns in "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" (1 not run: conversations ended early; see each turn's stop_reason)"), std::string::npos) << r.err;
  const auto report = nlohmann::json::parse(read_file(out));
  const auto& turns = report["configs"][0]["turns"];
  ASSERT_EQ(turns.size(), 2u) << report.dump();
  EXPECT_EQ(turns[0]["stop_reason"], "max_tokens");
  EXPECT_EQ(turns[1]["stop_reason"], "context_full");
}

TEST(ProgressCli, CtrlCBeforeTheFirstRepetitionIsAnInterruptionNotAnError) {
  TempDir dir;
  const std::string db = dir.file("results.db");
  bool sent = false;
  // Stopped while the ceilings are measured (seconds with --ceilings refresh): no test ran.
  auto r = run_with_stderr({"bench", "-m", tiny_model(), "-p", "8", "-n", "4", "--ceilings", "refresh", "--db", db},
                           false, [&](const std::string& err, pid_t pid) {
                             if (!sent && err.find("measuring the device's ceilings") != std::string::npos)
                               sent = kill(pid, SIGINT) == 0;
                           });
  ASSERT_TRUE(sent) << r.err;
  EXPECT_EQ(r.exit_code, 130) << r.err;
  EXPECT_EQ(r.err.find("error"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("edgeprobe: bench interrupted after 0/"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("edgeprobe: continue with: edgeprobe bench --resume 1 --db " + db), std::string::npos) << r.err;
}

TEST(ProgressCli, ASecondCtrlCStopsAtOnceKeepingWhatFinished) {
  TempDir dir;
  const std::string db = dir.file("results.db");
  // Prefill repetitions of seconds each, one long graph per batch: a second Ctrl-C must not
  // wait for the one in flight (the first alone waits for it, as the test above shows).
  const std::string model = synth_model("small-q4_0", {"--shape", "tiny", "--n-embd", "512", "--n-layer", "8", "--n-ff",
                                                       "1536", "--n-head", "8", "--n-head-kv", "4", "--n-vocab", "8192",
                                                       "-q", "q4_0"});
  int sent = 0;
  std::chrono::steady_clock::time_point second_at;
  const std::regex one_done("\\] 1/4 repetitions");
  const auto r = run_with_stderr(
      {"bench", "-m", model, "-p", "2048", "-n", "0", "-b", "2048", "-r", "4", "--no-warmup", "-t", "1", "--ceilings",
       "off", "--sample-hz", "0", "--db", db},
      true, [&](const std::string& err, pid_t pid) {
        if (sent == 0 && std::regex_search(err, one_done)) {
          // Into the second repetition first: right after the first is counted the runner
          // may still be storing it, and a Ctrl-C there stops before any unit is in flight
          // (seen in a clean-clone run on a loaded machine). A repetition takes seconds.
          std::this_thread::sleep_for(std::chrono::milliseconds(500));
          sent = kill(pid, SIGINT) == 0 ? 1 : -1;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          second_at = std::chrono::steady_clock::now();
          if (sent == 1 && kill(pid, SIGINT) == 0) sent = 2;
        }
      });
  const double stop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - second_at).count();
  ASSERT_EQ(sent, 2) << r.err;
  ASSERT_EQ(r.exit_code, 130) << r.err;
  EXPECT_NE(r.err.find("edgeprobe: stopping after the unit in flight (interrupt again to stop at once)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("edgeprobe: stopping at once: the unit in flight is dropped"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("edgeprobe: bench interrupted after 1/4 repetitions"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("edgeprobe: stopped at once (a second interrupt): the repetition in flight was dropped"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("error"), std::string::npos) << "a dropped repetition is no error: " << r.err;
  // What finished is stored, the repetition in flight is not: one repetition.
  const auto exported = run_edgeprobe({"export", "1", "--db", db}, 60);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  const auto doc = nlohmann::json::parse(exported.out);
  ASSERT_EQ(doc["results"].size(), 1u);
  const auto& reps = doc["results"][0]["repetitions"];
  ASSERT_EQ(reps.size(), 1u) << doc["results"][0].dump().substr(0, 400);
  const double repetition_s = (reps[0]["end_ns"].get<double>() - reps[0]["start_ns"].get<double>()) / 1e9;
  // At once: well before the repetition in flight could have finished.
  EXPECT_LT(stop_s, repetition_s / 2) << "stopped " << stop_s << " s after the second Ctrl-C; a repetition takes "
                                      << repetition_s << " s";
  std::cout << "second Ctrl-C to exit: " << stop_s << " s; one repetition: " << repetition_s << " s\n";
}
