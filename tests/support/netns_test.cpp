// Network namespaces and veth links for tests: made, usable over TCP, rate-limited by tbf
// within a band of the set rate, and gone afterwards (also what a crashed process left).
#include "support/netns.h"

#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>

#include "support/run_process.h"

using namespace edgeprobe::test_support;

namespace {

std::string ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv{find_tool("ip")};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, 20).out;
}

bool netns_exists(const std::string& name) {
  const std::string list = ip({"netns", "list"});
  return list.find(name + " ") != std::string::npos || list.find(name + "\n") != std::string::npos;
}

bool link_exists(const std::string& name) {
  return run_process({find_tool("ip"), "link", "show", name}, 20).exit_code == 0;
}

class NetNs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const auto why = netns_unavailable()) GTEST_SKIP() << *why;
  }
};

TEST_F(NetNs, NamespaceIsMadeAndRemovedWithWhatRunsInside) {
  std::string name, host_if;
  {
    NetNamespace ns("life");
    name = ns.name();
    EXPECT_TRUE(name.starts_with("ep-life-" + std::to_string(getpid()) + "-")) << name;
    EXPECT_TRUE(netns_exists(name));
    auto argv = ns.exec_prefix();
    argv.insert(argv.end(), {find_tool("ip"), "-o", "link", "show", "lo"});
    const auto r = run_process(argv, 20);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("UP"), std::string::npos) << "loopback is not up: " << r.out;
    host_if = connect(ns, 0).host_if;
    EXPECT_TRUE(link_exists(host_if));
    // A process left running inside must not keep the namespace alive.
    auto background = ns.exec_prefix();
    background.insert(background.end(), {"/bin/sh", "-c", "sleep 300 >/dev/null 2>&1 </dev/null &"});
    ASSERT_EQ(run_process(background, 20).exit_code, 0);
  }
  EXPECT_FALSE(netns_exists(name));
  EXPECT_FALSE(link_exists(host_if));
}

TEST_F(NetNs, RootLinkCarriesTcpBothWays) {
  NetNamespace ns("tcp");
  const VethLink link = connect(ns, 1);
  EXPECT_TRUE(link.host_netns.empty());
  EXPECT_EQ(link.ns_netns, ns.name());
  EXPECT_NE(link.host_ip, link.ns_ip);
  EXPECT_GT(tcp_goodput_mbit(ns.name(), link.ns_ip, "", 1 << 20), 0);
  EXPECT_GT(tcp_goodput_mbit("", link.host_ip, ns.name(), 1 << 20), 0);
}

TEST_F(NetNs, LinksOfOneProcessGetDistinctSubnets) {
  NetNamespace a("dist"), b("dist");
  const VethLink first = connect(a, 2), second = connect(b, 2), third = connect(a, b, 2);
  EXPECT_NE(first.host_ip, second.host_ip);
  EXPECT_NE(first.host_ip, third.host_ip);
  EXPECT_NE(second.host_ip, third.host_ip);
}

TEST_F(NetNs, TwoNamespacesLinkWithoutTheRoot) {
  NetNamespace a("prefill"), b("decode");
  const VethLink link = connect(a, b, 3);
  EXPECT_EQ(link.host_netns, a.name());
  EXPECT_EQ(link.ns_netns, b.name());
  EXPECT_FALSE(link_exists(link.host_if)) << "the link's ends must not stay in the root namespace";
  EXPECT_FALSE(link_exists(link.ns_if));
  EXPECT_GT(tcp_goodput_mbit(b.name(), link.ns_ip, a.name(), 1 << 20), 0);
  EXPECT_GT(tcp_goodput_mbit(a.name(), link.host_ip, b.name(), 1 << 20), 0);
}

// tbf's rate counts whole frames, so TCP goodput sits a few percent below it; the band
// leaves room for a busy machine but fails a limit that is off or a rate in the wrong unit.
void expect_rate(const std::string& what, double measured, double set_mbit) {
  std::printf("[ rate ] %s: set %.1f Mbit/s, measured %.2f Mbit/s (%.3f)\n", what.c_str(), set_mbit, measured,
              measured / set_mbit);
  ::testing::Test::RecordProperty(what, std::to_string(measured / set_mbit));
  EXPECT_GT(measured, 0.80 * set_mbit) << what;
  EXPECT_LT(measured, 1.05 * set_mbit) << what;
}

TEST_F(NetNs, TbfLimitsBothDirectionsNearTheSetRate) {
  NetNamespace ns("tbf");
  const VethLink link = connect(ns, 4);
  for (const double mbit : {8.0, 40.0}) {
    set_rate(link, mbit);
    const size_t bytes = static_cast<size_t>(mbit * 1e6 / 8 * 1.5);  // ~1.5 s at the rate
    expect_rate("root to ns at " + std::to_string(int(mbit)),
                tcp_goodput_mbit(ns.name(), link.ns_ip, "", bytes), mbit);
    expect_rate("ns to root at " + std::to_string(int(mbit)),
                tcp_goodput_mbit("", link.host_ip, ns.name(), bytes), mbit);
  }
  set_rate(link, std::nullopt);
  set_rate(link, std::nullopt);  // idempotent
  EXPECT_EQ(ip({"-n", ns.name(), "link", "show", link.ns_if}).find("tbf"), std::string::npos);
  const double unlimited = tcp_goodput_mbit(ns.name(), link.ns_ip, "", 32 << 20);
  std::printf("[ rate ] unlimited: %.0f Mbit/s\n", unlimited);
  EXPECT_GT(unlimited, 3 * 40.0) << "removing the limit did not lift it";
}

TEST_F(NetNs, TbfBetweenTwoNamespaces) {
  NetNamespace a("tbfa"), b("tbfb");
  const VethLink link = connect(a, b, 5);
  set_rate(link, 20.0);
  const size_t bytes = 20 * 1000 * 1000 / 8 * 3 / 2;
  expect_rate("a to b at 20", tcp_goodput_mbit(b.name(), link.ns_ip, a.name(), bytes), 20.0);
  expect_rate("b to a at 20", tcp_goodput_mbit(a.name(), link.host_ip, b.name(), bytes), 20.0);
}

// The best of five TCP handshakes from client_ns to a listener on server_ip in server_ns:
// one round trip of the link (connect() returns on the SYN-ACK).
double handshake_ms(const std::string& server_ns, const std::string& server_ip, const std::string& client_ns) {
  const int listener = open_socket_in(server_ns, SOCK_STREAM);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  inet_pton(AF_INET, server_ip.c_str(), &addr.sin_addr);
  socklen_t len = sizeof addr;
  EXPECT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(listen(listener, 16), 0);
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  double best = 1e9;
  for (int i = 0; i < 5; ++i) {
    const int client = open_socket_in(client_ns, SOCK_STREAM);
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = ::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(rc, 0) << std::strerror(errno);
    close(client);
    best = std::min(best, ms);
  }
  close(listener);
  return best;
}

TEST_F(NetNs, LinkDelayAddsItsRoundTripAndGoesAway) {
  if (const auto why = link_delay_unavailable()) GTEST_SKIP() << *why;
  NetNamespace a("dla"), b("dlb");
  const VethLink link = connect(a, b, 7);
  const double before = handshake_ms(a.name(), link.host_ip, b.name());
  double delayed = 0;
  {
    LinkDelay delay(link, 10.0);  // 10 ms each way
    delayed = handshake_ms(a.name(), link.host_ip, b.name());
    set_rate(link, 20.0);  // tbf and the delay together still carry data at the rate
    expect_rate("delayed b to a at 20", tcp_goodput_mbit(a.name(), link.host_ip, b.name(), 5'000'000), 20.0);
    set_rate(link, std::nullopt);
  }
  const double after = handshake_ms(a.name(), link.host_ip, b.name());
  std::printf("[ delay ] handshake: %.2f ms, with 10 ms each way %.2f ms, after %.2f ms\n", before, delayed, after);
  EXPECT_GE(delayed, 20.0);  // a delay cannot be made up
  EXPECT_LT(delayed, 40.0);
  EXPECT_LT(after, 5.0) << "the delay outlived its LinkDelay";
  EXPECT_EQ(ip({"netns", "pids", b.name()}), "") << "the delayer still runs";
}

TEST_F(NetNs, BadRateIsRefused) {
  NetNamespace ns("badrate");
  const VethLink link = connect(ns, 6);
  EXPECT_THROW(set_rate(link, 0.0), std::invalid_argument);
  EXPECT_THROW(set_rate(link, -5.0), std::invalid_argument);
  EXPECT_THROW(connect(ns, 64), std::invalid_argument);
  EXPECT_THROW(tcp_goodput_mbit(ns.name(), "not-an-address", "", 1), std::invalid_argument);
}

TEST_F(NetNs, SweepRemovesWhatADeadProcessLeft) {
  // A pid that is certainly gone: a child that has exited and been reaped.
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  const std::string stale_ns = "ep-crashed-" + std::to_string(dead) + "-0";
  const std::string stale_link = "ep" + std::to_string(dead) + "r0";
  ASSERT_EQ(run_process({find_tool("ip"), "netns", "add", stale_ns}, 20).exit_code, 0);
  ASSERT_EQ(run_process({find_tool("ip"), "link", "add", stale_link, "type", "veth", "peer", "name",
                         "ep" + std::to_string(dead) + "n0"},
                        20)
                .exit_code,
            0);
  ASSERT_EQ(run_process({find_tool("ip"), "netns", "exec", stale_ns, "/bin/sh", "-c",
                         "sleep 300 >/dev/null 2>&1 </dev/null &"},
                        20)
                .exit_code,
            0);
  const std::string left_running = ip({"netns", "pids", stale_ns});
  ASSERT_FALSE(left_running.empty());
  // A live process's namespace must survive the sweep.
  NetNamespace live("live");

  sweep_stale_network_objects();
  EXPECT_FALSE(netns_exists(stale_ns));
  EXPECT_FALSE(link_exists(stale_link));
  EXPECT_TRUE(netns_exists(live.name()));
  const long sleeper = std::stol(left_running);
  for (int i = 0; i < 100 && pid_alive(sleeper); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(pid_alive(sleeper)) << "the process left inside the stale namespace still runs";
}

}  // namespace
