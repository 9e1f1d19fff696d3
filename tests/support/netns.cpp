#include "support/netns.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <future>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/run_process.h"

namespace edgeprobe::test_support {
namespace {

constexpr int kToolTimeoutS = 20;
constexpr int kSubnets = 16384;  // the /30s of 10.231.0.0/16

std::string ip_tool() {
  static const std::string path = find_tool("ip");
  if (path.empty()) throw std::runtime_error("ip (iproute2) is not installed");
  return path;
}

std::string tc_tool() {
  static const std::string path = find_tool("tc");
  if (path.empty()) throw std::runtime_error("tc (iproute2) is not installed");
  return path;
}

std::string joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

// Runs a tool and throws with its command line and stderr when it fails.
std::string run_checked(const std::vector<std::string>& argv) {
  const auto r = run_process(argv, kToolTimeoutS);
  if (r.exit_code != 0) throw std::runtime_error("`" + joined(argv) + "` failed: " + r.err);
  return r.out;
}

// Cleanup runs even when parts are already gone, so its failures are not errors.
void run_quietly(const std::vector<std::string>& argv) {
  try {
    run_process(argv, kToolTimeoutS);
  } catch (...) {
  }
}

std::vector<long> pids_in(const std::string& netns) {
  std::vector<long> pids;
  try {
    std::istringstream in(run_process({ip_tool(), "netns", "pids", netns}, kToolTimeoutS).out);
    for (long pid; in >> pid;) pids.push_back(pid);
  } catch (...) {
  }
  return pids;
}

void kill_all_in(const std::string& netns) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (auto pids = pids_in(netns); !pids.empty(); pids = pids_in(netns)) {
    for (long pid : pids) kill(static_cast<pid_t>(pid), SIGKILL);
    if (std::chrono::steady_clock::now() > deadline) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void delete_namespace(const std::string& netns, const std::vector<std::string>& root_links) {
  kill_all_in(netns);
  for (const auto& link : root_links) run_quietly({ip_tool(), "link", "del", link});
  run_quietly({ip_tool(), "netns", "del", netns});
}

std::string sanitized(const std::string& tag) {
  std::string s;
  for (char c : tag)
    if (std::isalnum(static_cast<unsigned char>(c)) && s.size() < 16) s += static_cast<char>(std::tolower(c));
  return s.empty() ? "ns" : s;
}

std::string subnet_address(int subnet, int host) {
  const int offset = subnet * 4 + host;
  return "10.231." + std::to_string(offset / 256) + "." + std::to_string(offset % 256);
}

// Serializes address choice between test processes; released when the object goes away.
class MachineLock {
 public:
  MachineLock() {
    std::error_code ec;
    std::filesystem::create_directories("/run/lock", ec);
    fd_ = open(ec ? "/tmp/edgeprobe-netns.lock" : "/run/lock/edgeprobe-netns.lock",
               O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ >= 0) flock(fd_, LOCK_EX);
  }
  ~MachineLock() {
    if (fd_ >= 0) close(fd_);  // closing releases the flock
  }
  MachineLock(const MachineLock&) = delete;
  MachineLock& operator=(const MachineLock&) = delete;

 private:
  int fd_ = -1;
};

std::mutex allocation_mutex;
std::set<int> subnets_taken_here;  // this process's, including those inside namespaces
int next_link_number = 0;

// The /30s of 10.231.0.0/16 already on a root-namespace interface.
std::set<int> subnets_in_root() {
  std::set<int> used;
  static const std::regex inet(R"(inet 10\.231\.(\d+)\.(\d+)/)");
  const std::string out = run_checked({ip_tool(), "-4", "-o", "addr", "show"});
  for (auto it = std::sregex_iterator(out.begin(), out.end(), inet); it != std::sregex_iterator(); ++it)
    used.insert((std::stoi((*it)[1]) * 256 + std::stoi((*it)[2])) / 4);
  return used;
}

// Picks a free /30 (the caller holds allocation_mutex and the machine lock).
int pick_subnet(int subnet_index) {
  if (subnet_index < 0 || subnet_index > 63)
    throw std::invalid_argument("subnet_index " + std::to_string(subnet_index) + " is outside 0..63");
  const std::set<int> root = subnets_in_root();
  const int first = (static_cast<int>(getpid() % 256) * 64 + subnet_index) % kSubnets;
  for (int i = 0; i < kSubnets; ++i) {
    const int s = (first + i) % kSubnets;
    if (!root.count(s) && !subnets_taken_here.count(s)) {
      subnets_taken_here.insert(s);
      return s;
    }
  }
  throw std::runtime_error("no free /30 left in 10.231.0.0/16");
}

std::string link_name(char role, int number) {
  return "ep" + std::to_string(getpid()) + role + std::to_string(number);
}

std::vector<std::string> in_netns(const std::string& tool, const std::string& netns) {
  if (netns.empty()) return {tool};
  return {tool, "-n", netns};
}

void set_address_and_up(const std::string& netns, const std::string& dev, const std::string& address) {
  auto add = in_netns(ip_tool(), netns);
  add.insert(add.end(), {"addr", "add", address + "/30", "dev", dev});
  run_checked(add);
  auto up = in_netns(ip_tool(), netns);
  up.insert(up.end(), {"link", "set", dev, "up"});
  run_checked(up);
}

}  // namespace

// Makes the links; a friend of NetNamespace so it can record the root-side ends.
struct VethLinkMaker {
  static VethLink make(NetNamespace* host_side, NetNamespace& ns_side, int subnet_index) {
    std::lock_guard<std::mutex> guard(allocation_mutex);
    MachineLock machine_lock;
    const int number = next_link_number++;
    const int subnet = pick_subnet(subnet_index);
    VethLink link;
    link.host_if = link_name(host_side ? 'a' : 'r', number);
    link.ns_if = link_name(host_side ? 'b' : 'n', number);
    link.host_ip = subnet_address(subnet, 1);
    link.ns_ip = subnet_address(subnet, 2);
    link.host_netns = host_side ? host_side->name_ : "";
    link.ns_netns = ns_side.name_;
    // Recorded before creation: a failure halfway still leaves nothing behind.
    NetNamespace& owner = host_side ? *host_side : ns_side;
    owner.root_links_.push_back(link.host_if);
    if (host_side) owner.root_links_.push_back(link.ns_if);
    run_checked({ip_tool(), "link", "add", link.host_if, "type", "veth", "peer", "name", link.ns_if});
    if (host_side) run_checked({ip_tool(), "link", "set", link.host_if, "netns", link.host_netns});
    run_checked({ip_tool(), "link", "set", link.ns_if, "netns", link.ns_netns});
    set_address_and_up(link.host_netns, link.host_if, link.host_ip);
    set_address_and_up(link.ns_netns, link.ns_if, link.ns_ip);
    return link;
  }
};

std::string find_tool(const std::string& name) {
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/local/bin"}) {
    const std::string path = std::string(dir) + "/" + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

bool pid_alive(long pid) {
  if (pid <= 0) return false;
  if (kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM) return false;
  // A zombie has ended; only its parent's wait is missing.
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'Z';
}

void sweep_stale_network_objects() {
  static const std::regex stale_netns(R"(^ep-.*-(\d+)-\d+$)");
  static const std::regex stale_link(R"(^ep(\d+)[a-z]\d+$)");
  try {
    std::istringstream netns_list(run_checked({ip_tool(), "netns", "list"}));
    for (std::string line; std::getline(netns_list, line);) {
      const std::string name = line.substr(0, line.find(' '));
      std::smatch m;
      if (std::regex_match(name, m, stale_netns) && !pid_alive(std::stol(m[1]))) delete_namespace(name, {});
    }
    std::istringstream links(run_checked({ip_tool(), "-o", "link", "show"}));
    for (std::string line; std::getline(links, line);) {
      // "7: ep123r0@if6: <BROADCAST,...": the name ends at '@' or ':'.
      const auto start = line.find(": ");
      if (start == std::string::npos) continue;
      const std::string rest = line.substr(start + 2);
      const std::string name = rest.substr(0, rest.find_first_of("@:"));
      std::smatch m;
      if (std::regex_match(name, m, stale_link) && !pid_alive(std::stol(m[1])))
        run_quietly({ip_tool(), "link", "del", name});
    }
  } catch (...) {
    // A sweep that cannot run leaves only garbage; the tests themselves report real errors.
  }
}

NetNamespace::NetNamespace(const std::string& tag) {
  static std::once_flag swept;
  std::call_once(swept, sweep_stale_network_objects);
  static std::atomic<int> counter{0};
  name_ = "ep-" + sanitized(tag) + "-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  run_checked({ip_tool(), "netns", "add", name_});
  try {
    run_checked({ip_tool(), "-n", name_, "link", "set", "lo", "up"});
  } catch (...) {
    delete_namespace(name_, {});
    throw;
  }
}

NetNamespace::~NetNamespace() {
  try {
    delete_namespace(name_, root_links_);
  } catch (...) {
  }
}

std::vector<std::string> NetNamespace::exec_prefix() const { return {ip_tool(), "netns", "exec", name_}; }

void NetNamespace::kill_all() const { kill_all_in(name_); }

VethLink connect(NetNamespace& ns, int subnet_index) {
  return VethLinkMaker::make(nullptr, ns, subnet_index);
}

VethLink connect(NetNamespace& a, NetNamespace& b, int subnet_index) {
  return VethLinkMaker::make(&a, b, subnet_index);
}

void set_rate(const VethLink& link, std::optional<double> rate_mbit, std::optional<double> bucket_ms) {
  if (rate_mbit && !(*rate_mbit > 0 && std::isfinite(*rate_mbit)))
    throw std::invalid_argument("set_rate: the rate must be a positive number of Mbit/s");
  for (const auto& [netns, dev] :
       {std::pair{link.host_netns, link.host_if}, std::pair{link.ns_netns, link.ns_if}}) {
    auto argv = in_netns(tc_tool(), netns);
    if (!rate_mbit) {
      argv.insert(argv.end(), {"qdisc", "del", "dev", dev, "root"});
      run_quietly(argv);  // absent already is fine
      continue;
    }
    // A bucket of 10 ms at the rate (at least 32 KiB, so a GSO burst of a few MTUs
    // passes), and a queue deep enough (>= 256 KiB, 250 ms) that TCP's slow start does not
    // overflow it: a tail drop there costs a retransmission timeout, 20 % of a short
    // transfer at 8 Mbit/s.
    const double bytes_per_s = *rate_mbit * 1e6 / 8;
    const long burst = bucket_ms ? std::max(3028L, std::lround(bytes_per_s * *bucket_ms / 1e3))
                                 : std::max(32768L, std::lround(bytes_per_s / 100));
    const long limit = std::max(burst + 262144L, std::lround(bytes_per_s / 4));
    const long kbit = std::max(1L, std::lround(*rate_mbit * 1000));
    argv.insert(argv.end(),
                {"qdisc", "replace", "dev", dev, "root", "tbf", "rate", std::to_string(kbit) + "kbit",
                 "burst", std::to_string(burst), "limit", std::to_string(limit)});
    run_checked(argv);
  }
}

void set_link_up(const VethLink& link, bool up) {
  for (const auto& [netns, dev] :
       {std::pair{link.host_netns, link.host_if}, std::pair{link.ns_netns, link.ns_if}}) {
    auto argv = in_netns(ip_tool(), netns);
    argv.insert(argv.end(), {"link", "set", dev, up ? "up" : "down"});
    run_checked(argv);
  }
}

int open_socket_in(const std::string& netns_name, int type) {
  int fd = -1;
  std::string error;
  // setns changes only the calling thread's namespace, so a short-lived thread does it and
  // the socket keeps that namespace for life.
  std::thread([&] {
    const std::string path = "/run/netns/" + netns_name;
    const int ns_fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (ns_fd < 0) {
      error = "cannot open " + path + ": " + std::strerror(errno);
      return;
    }
    if (setns(ns_fd, CLONE_NEWNET) != 0) {
      error = "setns " + path + ": " + std::strerror(errno);
    } else {
      fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
      if (fd < 0) error = std::string("socket: ") + std::strerror(errno);
    }
    close(ns_fd);
  }).join();
  if (fd < 0) throw std::runtime_error("open_socket_in " + netns_name + ": " + error);
  return fd;
}

namespace {

// A TCP socket in the namespace ("" = root) whose reads and writes time out.
int bounded_tcp_socket(const std::string& netns) {
  const int fd =
      netns.empty() ? socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0) : open_socket_in(netns, SOCK_STREAM);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  timeval timeout{20, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  return fd;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

}  // namespace

double tcp_goodput_mbit(const std::string& server_netns, const std::string& server_ip,
                        const std::string& client_netns, size_t bytes) {
  using clock = std::chrono::steady_clock;
  Fd listener(bounded_tcp_socket(server_netns));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  if (inet_pton(AF_INET, server_ip.c_str(), &sa.sin_addr) != 1)
    throw std::invalid_argument("tcp_goodput_mbit: bad address " + server_ip);
  socklen_t len = sizeof(sa);
  if (bind(listener.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 ||
      getsockname(listener.get(), reinterpret_cast<sockaddr*>(&sa), &len) != 0 ||
      listen(listener.get(), 1) != 0)
    throw std::runtime_error("tcp_goodput_mbit: cannot listen on " + server_ip + ": " + std::strerror(errno));
  // accept() on a listener with SO_RCVTIMEO times out too, so the receiver always ends.
  auto received = std::async(std::launch::async, [&] {
    Fd conn(accept(listener.get(), nullptr, nullptr));
    size_t total = 0;
    std::vector<char> buf(1 << 16);
    for (ssize_t n; conn.get() >= 0 && (n = read(conn.get(), buf.data(), buf.size())) > 0;)
      total += static_cast<size_t>(n);
    return std::pair{total, clock::now()};
  });
  const auto t0 = clock::now();
  {
    Fd client(bounded_tcp_socket(client_netns));
    if (::connect(client.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0) {
      std::vector<char> chunk(1 << 16, 'x');
      for (size_t sent = 0; sent < bytes;) {
        const ssize_t n = write(client.get(), chunk.data(), std::min(chunk.size(), bytes - sent));
        if (n <= 0) break;
        sent += static_cast<size_t>(n);
      }
    }
  }  // closing the client ends the receiver's loop
  const auto [total, t1] = received.get();
  if (total != bytes)
    throw std::runtime_error("tcp_goodput_mbit: " + std::to_string(total) + " of " + std::to_string(bytes) +
                             " bytes arrived at " + server_ip);
  return static_cast<double>(total) * 8 / 1e6 / std::chrono::duration<double>(t1 - t0).count();
}

namespace {

constexpr int kDelayQueue = 7;  // netfilter queues belong to a namespace: one delay per namespace

// Arriving packets only: a packet held on its way out would still count against its
// socket's TCP Small Queues budget, which then throttles the sender to a few packets per
// delay (4.5 Mbit/s at 10 ms, measured). Held on arrival, it has left the sender.
std::vector<std::string> delay_rule(const std::string& netns, const std::string& action, const std::string& dev) {
  static const std::string iptables = find_tool("iptables");
  return {ip_tool(), "netns", "exec", netns,          iptables,      "-w", "5", action, "INPUT", "-i", dev,
          "-j",      "NFQUEUE", "--queue-num", std::to_string(kDelayQueue)};
}

}  // namespace

LinkDelay::LinkDelay(const VethLink& link, double one_way_ms) {
  if (!(one_way_ms >= 0 && one_way_ms < 10000)) throw std::invalid_argument("LinkDelay: 0 to 10000 ms");
  if (link.host_netns.empty() || link.ns_netns.empty())
    throw std::invalid_argument("LinkDelay: both ends must be in test namespaces (connect(a, b, i))");
  if (std::string(EDGEPROBE_LINK_DELAY).empty() || find_tool("iptables").empty())
    throw std::runtime_error("LinkDelay needs iptables and libnetfilter-queue-dev (scripts/setup.sh installs both)");
  try {
    for (const auto& [netns, dev] : {std::pair{link.host_netns, link.host_if}, std::pair{link.ns_netns, link.ns_if}}) {
      // The queue must be bound before a rule sends packets to it, or they are dropped.
      const std::string out = dir_.file(netns + ".out"), err = dir_.file(netns + ".err");
      auto delayer = std::make_unique<BackgroundProcess>(
          std::vector<std::string>{EDGEPROBE_LINK_DELAY, std::to_string(kDelayQueue), std::to_string(one_way_ms)},
          err, ip_tool() + " netns exec " + netns + " ", std::vector<std::pair<std::string, std::string>>{}, out);
      if (!delayer->wait_for_output("ready\n", 10000))
        throw std::runtime_error("link_delay did not start in " + netns + ": " + read_file(err));
      ends_.push_back({netns, dev, std::move(delayer)});
      run_checked(delay_rule(netns, "-A", dev));
    }
  } catch (...) {
    remove();
    throw;
  }
}

void LinkDelay::remove() {
  for (const auto& end : ends_) run_quietly(delay_rule(end.netns, "-D", end.dev));
  ends_.clear();  // stopping a delayer lets what it holds go
}

LinkDelay::~LinkDelay() { remove(); }

std::optional<std::string> link_delay_unavailable() {
  static std::once_flag once;
  static std::optional<std::string> reason;
  std::call_once(once, [] {
    if (auto why = netns_unavailable()) {
      reason = *why;
      return;
    }
    if (std::string(EDGEPROBE_LINK_DELAY).empty()) {
      reason = "the link delayer was not built: libnetfilter-queue-dev was missing at configure time";
      return;
    }
    if (find_tool("iptables").empty()) {
      reason = "iptables (Debian package iptables) is not installed";
      return;
    }
    try {
      NetNamespace a("dprobea"), b("dprobeb");
      const VethLink link = connect(a, b, 1);
      LinkDelay delay(link, 1.0);
    } catch (const std::exception& e) {
      reason = std::string("a netfilter queue delay does not work here: ") + e.what();
    }
  });
  return reason;
}

std::optional<std::string> netns_unavailable() {
  static std::once_flag once;
  static std::optional<std::string> reason;
  std::call_once(once, [] {
    if (geteuid() != 0) {
      reason = "needs root to create network namespaces (ip netns add)";
      return;
    }
    if (find_tool("ip").empty() || find_tool("tc").empty()) {
      reason = "ip and tc (Debian package iproute2) are not installed";
      return;
    }
    try {
      NetNamespace probe("probe");
      const VethLink link = connect(probe, 0);
      set_rate(link, 10.0);
    } catch (const std::exception& e) {
      reason = std::string("network namespaces, veth or tbf do not work here: ") + e.what();
    }
  });
  return reason;
}

}  // namespace edgeprobe::test_support
