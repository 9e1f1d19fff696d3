// The one process runner (core/subprocess.h): stdin data, streamed lines, the time limit
// that kills the whole group, cancel, the exit that does not wait for a descendant.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/subprocess.h"

namespace edgeprobe {
namespace {

// Whether the process is gone (or a zombie nobody reaped yet).
bool gone(int pid) {
  for (int i = 0; i < 100; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    const auto close = text.rfind(')');
    if (!stat || close == std::string::npos || text.substr(close + 2, 1) == "Z") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

TEST(Subprocess, StdinDataReachesTheChildWhole) {
  std::string data;
  for (int i = 0; data.size() < 300000; ++i) data += "line " + std::to_string(i) + "\n";  // over a pipe's buffer
  SubprocessOptions o = within(30);
  o.stdin_data = data;
  const auto r = run_subprocess({"cat"}, o);  // found in PATH
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, data);
}

TEST(Subprocess, AChildThatReadsNoStdinNeitherHangsNorKillsUs) {
  SubprocessOptions o = within(30);
  o.stdin_data = std::string(4 << 20, 'x');  // the child exits first: EPIPE, not SIGPIPE
  const auto r = run_subprocess({"/bin/sh", "-c", "echo done"}, o);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "done\n");
  EXPECT_FALSE(r.timed_out);
  o.stdin_data = "";  // empty data: stdin ends at once
  EXPECT_EQ(run_subprocess({"cat"}, o).out, "");
}

TEST(Subprocess, WithoutStdinDataStdinIsEmpty) {
  const auto r = run_subprocess({"/bin/sh", "-c", "wc -c"}, within(30));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.find_first_not_of(" \t"), r.out.find('0'));
}

TEST(Subprocess, TheTimeLimitKillsTheWholeGroup) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string pid_line;
  SubprocessOptions o = within(1);
  o.on_line = [&](std::string_view line) { pid_line = line; };
  const auto r = run_subprocess({"/bin/sh", "-c", "sleep 30 & echo $!; wait"}, o);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.cancelled);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_LT(took, 10);
  ASSERT_FALSE(pid_line.empty());
  EXPECT_TRUE(gone(std::stoi(pid_line))) << "the shell's child outlived the time limit";
}

TEST(Subprocess, OnLineGetsEachLineAsItArrivesAndTheLastWithoutNewline) {
  std::vector<std::string> lines;
  SubprocessOptions o = within(30);
  o.on_line = [&](std::string_view line) { lines.emplace_back(line); };
  const auto r = run_subprocess({"/bin/sh", "-c", "printf 'a\\nbb\\n\\n'; sleep 0.2; printf last"}, o);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "bb", "", "last"}));
  EXPECT_EQ(r.out, "");  // streamed, not collected
}

TEST(Subprocess, CancelKillsTheChild) {
  SubprocessOptions o = within(60);
  bool seen = false;
  o.on_line = [&](std::string_view) { seen = true; };
  o.cancel = [&] { return seen; };
  const auto r = run_subprocess({"/bin/sh", "-c", "echo ready; exec sleep 30"}, o);
  EXPECT_TRUE(r.cancelled);
  EXPECT_FALSE(r.timed_out);
  EXPECT_LT(r.wall_s, 10);
}

TEST(Subprocess, ItEndsWhenTheProcessExitsThoughADescendantHoldsThePipes) {
  const auto r = run_subprocess({"/bin/sh", "-c", "sleep 20 & echo $!"}, within(60));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_LT(r.wall_s, 10);
  if (const int pid = std::atoi(r.out.c_str()); pid > 0) kill(pid, SIGKILL);
}

TEST(Subprocess, ExitCodeEnvStderrAndTimes) {
  SubprocessOptions o = within(30);
  o.env = {{"EDGEPROBE_SUBPROCESS_TEST", "yes"}};
  const auto r = run_subprocess(
      {"/bin/sh", "-c", "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; echo $EDGEPROBE_SUBPROCESS_TEST; echo oops >&2; exit 3"}, o);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "yes\n");
  EXPECT_EQ(r.err, "oops\n");
  EXPECT_GT(r.cpu_s, 0.0);  // the child's own CPU time (doctor reads it), not ours
  EXPECT_GE(r.wall_s, r.cpu_s * 0.5);
}

TEST(Subprocess, AProgramThatCannotStartIsAnEnvironmentError) {
  try {
    run_subprocess({"/nonexistent/edgeprobe-no-such-tool"}, within(5));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kEnvironment);
    EXPECT_NE(std::string(e.what()).find("cannot run '/nonexistent/edgeprobe-no-such-tool'"), std::string::npos) << e.what();
  }
}

TEST(Subprocess, OutputLineIsOneShortEscapedLine) {
  EXPECT_EQ(output_line("first\r\nsecond\n\n"), "first; second");
  EXPECT_EQ(output_line(std::string(1000, 'a') + "end").size(), 300u);
  EXPECT_EQ(output_line("\x1b[31mred").find('\x1b'), std::string::npos);
}

}  // namespace
}  // namespace edgeprobe
