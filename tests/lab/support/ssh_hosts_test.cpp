// The lab's ssh devices: real sshd instances in network namespaces, reached with host-key
// checking on through the fixture's client config; a killed sshd fails fast and a restart
// recovers; an aarch64 device runs the arm64 bundle under qemu; nothing is left afterwards.
#include "lab/support/ssh_hosts.h"

#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <future>
#include <sstream>
#include <thread>

#include "support/run_process.h"

using namespace edgeprobe::test_support;
namespace fs = std::filesystem;

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

ProcessResult ssh(const SshHosts& hosts, const std::string& name, const std::string& command,
                  int timeout_s = 30) {
  auto argv = hosts.ssh_command(name);
  argv.push_back(command);
  return run_process(argv, timeout_s);
}

class SshDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = SshHosts::unavailable()) GTEST_SKIP() << *why;
  }
};

TEST_F(SshDevices, ThreeHostsAcceptSshWithVerifiedHostKeys) {
  SshHosts hosts({{"dev-a"}, {"dev-b"}, {"dev-c"}});
  for (const auto& name : hosts.names()) {
    const SshHost& h = hosts.host(name);
    const auto r = ssh(hosts, name, "id -un && cd work && pwd && touch written && echo ok");
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err << hosts.sshd_log(name);
    EXPECT_EQ(r.out, h.user + "\n" + h.workdir + "\nok\n") << name;
    EXPECT_TRUE(fs::exists(h.workdir + "/written"));
  }
  // Each device is its own user, address and key.
  EXPECT_NE(hosts.host("dev-a").user, hosts.host("dev-b").user);
  EXPECT_NE(hosts.host("dev-a").address, hosts.host("dev-b").address);
  EXPECT_NE(hosts.host("dev-a").identity_file, hosts.host("dev-b").identity_file);

  // A plain `ssh NAME` reads the fixture's ~/.ssh/config under client_prefix().
  auto argv = hosts.client_prefix();
  argv.insert(argv.end(), {"/usr/bin/ssh", "dev-c", "echo $HOME"});
  const auto plain = run_process(argv, 30);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.out, fs::path(hosts.host("dev-c").workdir).parent_path().string() + "\n");

  // Host-key checking is on: dev-b's key recorded for dev-a's address is refused.
  const std::string known_hosts = hosts.home() + "/.ssh/known_hosts";
  const std::string good = read_file(known_hosts);
  const SshHost &a = hosts.host("dev-a"), &b = hosts.host("dev-b");
  std::string swapped = good;
  const std::string a_prefix = "[" + a.address + "]:" + std::to_string(a.port) + " ";
  const std::string b_prefix = "[" + b.address + "]:" + std::to_string(b.port) + " ";
  swapped.replace(swapped.find(a_prefix), a_prefix.size(), "[placeholder] ");
  swapped.replace(swapped.find(b_prefix), b_prefix.size(), a_prefix);
  write_file(known_hosts, swapped);
  const auto refused = ssh(hosts, "dev-a", "true");
  write_file(known_hosts, good);
  EXPECT_EQ(refused.exit_code, 255);
  EXPECT_NE(refused.err.find("Host key verification failed"), std::string::npos) << refused.err;
  EXPECT_EQ(hosts.sshd_log("dev-a").find("Accepted publickey"),
            hosts.sshd_log("dev-a").rfind("Accepted publickey"))
      << "the refused client must not have logged in";
  EXPECT_EQ(ssh(hosts, "dev-a", "true").exit_code, 0);
}

TEST_F(SshDevices, KilledSshdFailsFastAndRestartRecovers) {
  SshHosts hosts({{"dev-a"}, {"dev-b"}, {"dev-c"}});
  ASSERT_EQ(ssh(hosts, "dev-b", "true").exit_code, 0);
  // A session in flight when the device drops ends too.
  auto in_flight = std::async(std::launch::async, [&] {
    const auto t0 = clock_type::now();
    const auto r = ssh(hosts, "dev-b", "echo started; sleep 60");
    return std::pair{r, seconds_since(t0)};
  });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  hosts.kill_sshd("dev-b");
  const auto [session, session_s] = in_flight.get();
  EXPECT_EQ(session.exit_code, 255) << session.out << session.err;
  EXPECT_LT(session_s, 20.0) << "the session outlived its device";

  const auto t0 = clock_type::now();
  const auto refused = ssh(hosts, "dev-b", "true");
  const double refused_s = seconds_since(t0);
  std::printf("[ ssh ] killed device: session ended after %.2f s, new connection refused in %.2f s\n",
              session_s, refused_s);
  EXPECT_EQ(refused.exit_code, 255);
  EXPECT_NE(refused.err.find("refused"), std::string::npos) << refused.err;
  EXPECT_LT(refused_s, 4.0) << "a dropped device must fail fast, not wait for ConnectTimeout";
  // The others are untouched.
  EXPECT_EQ(ssh(hosts, "dev-a", "true").exit_code, 0);
  EXPECT_EQ(ssh(hosts, "dev-c", "true").exit_code, 0);

  hosts.restart_sshd("dev-b");
  const auto back = ssh(hosts, "dev-b", "echo back");
  EXPECT_EQ(back.exit_code, 0) << back.err;  // same host key: still verified
  EXPECT_EQ(back.out, "back\n");
}

TEST_F(SshDevices, PulledCableEndsTheSessionWithinTheKeepaliveBound) {
  SshHosts hosts({{"dev-a"}});
  auto in_flight = std::async(std::launch::async, [&] {
    const auto t0 = clock_type::now();
    const auto r = ssh(hosts, "dev-a", "sleep 60");
    return std::pair{r, seconds_since(t0)};
  });
  std::this_thread::sleep_for(std::chrono::seconds(1));
  set_link_up(hosts.link("dev-a"), false);
  const auto [r, s] = in_flight.get();
  std::printf("[ ssh ] pulled cable: session ended after %.2f s\n", s);
  EXPECT_EQ(r.exit_code, 255) << r.err;
  EXPECT_LT(s, 20.0);  // ServerAliveInterval 2 x ServerAliveCountMax 3, plus the second before
  set_link_up(hosts.link("dev-a"), true);
  EXPECT_EQ(ssh(hosts, "dev-a", "true").exit_code, 0);
}

TEST_F(SshDevices, Aarch64HostRunsTheArm64BundleOverSsh) {
  if (const auto why = SshHosts::aarch64_unavailable()) GTEST_SKIP() << *why;
  const std::string bundle = arm64_bundle();
  if (bundle.empty())
    GTEST_SKIP() << "no arm64 bundle in " << EDGEPROBE_DIST_DIR << " (scripts/setup-arm.sh builds it)";
  SshHosts hosts({{"board", true}});
  const auto arch = ssh(hosts, "board", "uname -m");
  ASSERT_EQ(arch.exit_code, 0) << arch.err;
  EXPECT_EQ(arch.out, "aarch64\n");

  const auto copy = run_process({"/usr/bin/scp", "-q", "-F", hosts.ssh_config(), bundle, "board:work/"}, 120);
  ASSERT_EQ(copy.exit_code, 0) << copy.err;
  const std::string file = fs::path(bundle).filename().string();
  const std::string dir = file.substr(0, file.size() - std::string(".tar.gz").size());
  const auto run =
      ssh(hosts, "board", "cd work && tar -xzf " + file + " && ./" + dir + "/edgeprobe --version", 120);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto native = run_process({EDGEPROBE_BINARY, "--version"}, 30);
  // The version and commit (up to the build type, compiler and backends, which differ).
  EXPECT_EQ(run.out.substr(0, run.out.find(',')), native.out.substr(0, native.out.find(',')))
      << "the arm64 bundle and this build disagree on the version";
  // What ran is an arm64 program: ELF e_machine 183 (EM_AARCH64) at byte 18.
  const std::string binary = read_file(hosts.host("board").workdir + "/" + dir + "/bin/edgeprobe");
  ASSERT_GT(binary.size(), 20u);
  EXPECT_EQ(static_cast<unsigned char>(binary[18]), 183);
}

TEST_F(SshDevices, NothingIsLeftAfterwardsEvenAfterAFailure) {
  std::vector<SshHost> made;
  std::string home, netns_name, host_if;
  try {
    SshHosts hosts({{"dev-a"}, {"dev-b"}});
    for (const auto& name : hosts.names()) made.push_back(hosts.host(name));
    home = hosts.home();
    netns_name = hosts.netns("dev-a").name();
    host_if = hosts.link("dev-a").host_if;
    // A session still running when the test fails.
    auto argv = hosts.ssh_command("dev-b");
    argv.push_back("sleep 300 >/dev/null 2>&1 </dev/null &");
    ASSERT_EQ(run_process(argv, 30).exit_code, 0);
    throw std::runtime_error("a failing test");
  } catch (const std::runtime_error&) {
  }
  ASSERT_EQ(made.size(), 2u);
  for (const auto& h : made) {
    EXPECT_EQ(getpwnam(h.user.c_str()), nullptr) << h.user << " is still a user";
    EXPECT_FALSE(fs::exists(h.workdir));
  }
  EXPECT_FALSE(fs::exists(home));
  EXPECT_EQ(run_process({find_tool("ip"), "netns", "list"}, 20).out.find(netns_name), std::string::npos);
  EXPECT_NE(run_process({find_tool("ip"), "link", "show", host_if}, 20).exit_code, 0);
}

// A test killed outright runs no destructor; the next test process's sweep removes its
// user, namespace, sshd and directory.
TEST_F(SshDevices, WhatAKilledTestLeftIsSweptByTheNext) {
  int report_pipe[2];
  ASSERT_EQ(pipe(report_pipe), 0);
  const pid_t child = fork();
  if (child == 0) {
    close(report_pipe[0]);
    try {
      SshHosts hosts({{"doomed"}});
      const std::string report =
          hosts.host("doomed").user + " " + hosts.netns("doomed").name() + " " + hosts.home() + "\n";
      if (write(report_pipe[1], report.data(), report.size()) < 0) _exit(1);
      raise(SIGKILL);
    } catch (...) {
    }
    _exit(1);
  }
  close(report_pipe[1]);
  std::string report;
  char buf[512];
  for (ssize_t n; (n = read(report_pipe[0], buf, sizeof(buf))) > 0;)
    report.append(buf, static_cast<size_t>(n));
  close(report_pipe[0]);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the child did not die as planned";
  std::istringstream fields(report);
  std::string user, netns_name, home;
  fields >> user >> netns_name >> home;
  ASSERT_FALSE(home.empty()) << "the child made no devices: " << report;
  ASSERT_NE(getpwnam(user.c_str()), nullptr);
  const auto pids = run_process({find_tool("ip"), "netns", "pids", netns_name}, 20).out;
  ASSERT_FALSE(pids.empty()) << "the killed test's sshd should still run";

  sweep_stale_network_objects();
  sweep_stale_ssh_hosts();
  EXPECT_EQ(getpwnam(user.c_str()), nullptr) << user;
  EXPECT_EQ(run_process({find_tool("ip"), "netns", "list"}, 20).out.find(netns_name), std::string::npos);
  EXPECT_FALSE(fs::exists(fs::path(home).parent_path())) << "the fixture's directory stayed";
  const long sshd = std::stol(pids);
  for (int i = 0; i < 100 && pid_alive(sshd); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(pid_alive(sshd)) << "the killed test's sshd still runs";
}

TEST_F(SshDevices, BadSpecsAreRefusedBeforeAnythingIsMade) {
  EXPECT_THROW(SshHosts({{"a"}, {"a"}}), std::invalid_argument);
  EXPECT_THROW(SshHosts({{"bad name"}}), std::invalid_argument);
  SshHosts hosts({{"only"}});
  EXPECT_THROW(hosts.host("missing"), std::invalid_argument);
}

}  // namespace
