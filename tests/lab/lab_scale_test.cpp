// `lab check` over a 10,000-device inventory: a bounded pool of workers (its thread count
// is sampled from /proc while it runs), every device answered, in bounded time. The
// devices are ssh hosts on closed loopback ports: each costs one real ssh that is refused.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "lab/check.h"
#include "support/run_process.h"

using namespace edgeprobe::test_support;

namespace {

int threads_of(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/status", pid));
  for (std::string line; std::getline(in, line);)
    if (line.starts_with("Threads:")) return std::stoi(line.substr(8));
  return 0;
}

}  // namespace

TEST(LabScale, CheckingTenThousandDevicesUsesABoundedPoolAndFinishes) {
  if (access("/usr/bin/ssh", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/ssh (apt-get install openssh-client)";
  TempDir dir;
  std::string yaml = "all:\n  hosts:\n";
  for (int i = 0; i < 10000; ++i)
    yaml += fmt::format("    d{}: {{host: 127.1.{}.{}, port: 1}}\n", i, i / 250, i % 250 + 1);
  write_file(dir.file("lab.yml"), yaml);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(dir.file("out.json").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(dir.file("err.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    setenv("XDG_RUNTIME_DIR", dir.path().c_str(), 1);  // the ssh control sockets
    execl(EDGEPROBE_BINARY, EDGEPROBE_BINARY, "lab", "check", "-i", dir.file("lab.yml").c_str(), "-o", "json",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int most_threads = 0, status = 0;
  bool done = false;
  while (!done && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(500)) {
    most_threads = std::max(most_threads, threads_of(pid));
    done = waitpid(pid, &status, WNOHANG) == pid;
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!done) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(done) << "lab check of 10,000 devices ran past 500 s";
  RecordProperty("seconds", fmt::format("{:.1f}", seconds));
  std::cout << fmt::format("lab check: 10,000 devices in {:.1f} s, at most {} threads\n", seconds, most_threads);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3) << read_file(dir.file("err.txt"));  // unreachable devices: environment
  EXPECT_GT(most_threads, 1);
  EXPECT_LE(most_threads, edgeprobe::lab::kCheckWorkers + 4);
  const auto rows = nlohmann::json::parse(read_file(dir.file("out.json")));
  ASSERT_EQ(rows.size(), 10000u);
  for (const auto& r : rows) {
    ASSERT_FALSE(r["state"]["reachable"].get<bool>()) << r.dump();
    ASSERT_FALSE(r["state"]["why_not"].get<std::string>().empty()) << r.dump();
  }
  EXPECT_LT(seconds, 300);
}
