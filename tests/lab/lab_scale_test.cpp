// `lab check` over a 10,000-device inventory: a bounded pool of workers (its thread count
// is sampled from /proc while it runs), every device answered, in bounded time. The
// devices are ssh hosts on closed loopback ports: each costs one real ssh that is refused.
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
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

// `edgeprobe lab check -i DIR/lab.yml -o json` in the background: stdout to out.json,
// stderr to err.txt, the ssh control sockets under DIR.
pid_t start_lab_check(const TempDir& dir) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(dir.file("out.json").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(dir.file("err.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    setenv("XDG_RUNTIME_DIR", dir.path().c_str(), 1);
    execl(EDGEPROBE_BINARY, EDGEPROBE_BINARY, "lab", "check", "-i", dir.file("lab.yml").c_str(), "-o", "json",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
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
  const pid_t pid = start_lab_check(dir);
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

namespace {

// The ssh processes whose command line names `port`: the probes of the hanging device.
int ssh_probes_on(int port) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.starts_with("ssh ") &&
        cmdline.find("-o Port=" + std::to_string(port) + " ") != std::string::npos)
      ++count;
  }
  return count;
}

}  // namespace

// A SIGTERM while `lab check` waits on devices that accept a connection and never answer:
// the ssh probes in flight (each in a process group of its own, which a terminal's Ctrl-C
// does not reach) are killed, not left running, and the rows print, unchecked ones said so.
TEST(LabScale, ASignalDuringCheckKillsTheProbesInFlightAndPrintsTheRows) {
  if (access("/usr/bin/ssh", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/ssh (apt-get install openssh-client)";
  // A listener that never accepts: the kernel completes the connections, ssh waits for a banner.
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);  // every 127.0.0.N: forty devices, one listener
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 128), 0);
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  TempDir dir;
  std::string yaml = "all:\n  hosts:\n";
  for (int i = 0; i < 40; ++i)
    yaml += fmt::format("    d{}: {{host: 127.0.0.{}, port: {}}}\n", i, i + 1, port);
  write_file(dir.file("lab.yml"), yaml);
  const pid_t pid = start_lab_check(dir);
  // Until the pool's probes are all waiting on the silent host.
  const auto t0 = std::chrono::steady_clock::now();
  while (ssh_probes_on(port) < 8 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GE(ssh_probes_on(port), 8) << read_file(dir.file("err.txt"));
  kill(pid, SIGTERM);
  int status = 0;
  bool done = false;
  const auto t1 = std::chrono::steady_clock::now();
  while (!done && std::chrono::steady_clock::now() - t1 < std::chrono::seconds(10)) {
    done = waitpid(pid, &status, WNOHANG) == pid;
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!done) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  close(listener);
  ASSERT_TRUE(done) << "lab check ran on for 10 s after SIGTERM";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(ssh_probes_on(port), 0) << "ssh probes left running after lab check ended";
  const auto rows = nlohmann::json::parse(read_file(dir.file("out.json")));
  ASSERT_EQ(rows.size(), 40u);
  int unchecked = 0;
  for (const auto& r : rows) {
    EXPECT_FALSE(r["state"]["reachable"].get<bool>()) << r.dump();
    unchecked += r["state"]["why_not"].get<std::string>().find("interrupted") != std::string::npos;
  }
  EXPECT_EQ(unchecked, 40) << rows.dump(1);
}
