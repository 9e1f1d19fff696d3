#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/run_process.h"

// Network namespaces and veth links for tests that need real network paths between
// "devices" on one machine (the lab's ssh hosts, KV transfer between a prefill and a decode
// node). Everything is created under an ep-* name that carries the creating process's pid,
// removed by the destructors, and swept by the next test process if a crash left it behind.
// Needs root and iproute2 (ip, tc); netns_unavailable() says why when not, so tests skip.
namespace edgeprobe::test_support {

// Why network namespaces, veth pairs and tbf qdiscs cannot be used here (no root, no
// iproute2, a kernel without them), or nullopt. Probed once per process.
std::optional<std::string> netns_unavailable();

// A named network namespace (`ip netns add`) with its loopback up. The name is unique on
// the machine: ep-TAG-PID-N. The destructor kills what still runs inside, deletes the
// root-side links made for it and deletes the namespace; it never throws.
class NetNamespace {
 public:
  explicit NetNamespace(const std::string& tag);
  ~NetNamespace();
  NetNamespace(const NetNamespace&) = delete;
  NetNamespace& operator=(const NetNamespace&) = delete;

  const std::string& name() const { return name_; }
  // {"/usr/sbin/ip", "netns", "exec", name}: prepend to an argv to run it inside. The ip
  // path is absolute: /usr/sbin is not on every PATH.
  std::vector<std::string> exec_prefix() const;
  // SIGKILLs every process inside (`ip netns pids`) and waits, bounded, until they are gone.
  void kill_all() const;

 private:
  friend struct VethLinkMaker;
  std::string name_;
  std::vector<std::string> root_links_;  // root-side veth ends to delete with the namespace
};

// One veth pair. For connect(ns, i) host_if is in the root namespace (host_netns empty);
// for connect(a, b, i) host_if is in a and ns_if in b. Each end has an address of one /30.
struct VethLink {
  std::string host_if, ns_if, host_ip, ns_ip;
  std::string host_netns;  // "" for the root namespace
  std::string ns_netns;
};

// A veth pair between the root namespace and ns. subnet_index tells a process's links
// apart (0..63); the /30 is picked among 10.231.0.0/16 so that concurrent test processes
// never share one (the pid takes part, and a /30 already on a root interface is skipped).
VethLink connect(NetNamespace& ns, int subnet_index);
// A veth pair between two namespaces, neither end in the root namespace.
VethLink connect(NetNamespace& a, NetNamespace& b, int subnet_index);

// Limits both directions of the link to rate_mbit with a tbf qdisc on each end (netem is
// not available on these machines); nullopt removes the limit. Idempotent. The bucket
// holds 10 ms at the rate (at least 32 KiB) unless bucket_ms says otherwise (then at
// least two full frames): what a burst after an idle moment passes at line speed, which a
// constant-rate link would not.
void set_rate(const VethLink& link, std::optional<double> rate_mbit, std::optional<double> bucket_ms = {});
// A propagation delay on a link between two namespaces (connect(a, b, i)): every packet
// arriving at either end waits one_way_ms in a netfilter queue that tests/support/
// link_delay holds there (what netem's delay does; netem is not available on these
// machines), so a round trip gains 2 x one_way_ms. Removed (rules first, then the
// delayers, which let what they hold go) when the object goes away. Throws
// std::runtime_error when it cannot be set up; link_delay_unavailable() says why first.
class LinkDelay {
 public:
  LinkDelay(const VethLink& link, double one_way_ms);
  ~LinkDelay();
  LinkDelay(const LinkDelay&) = delete;
  LinkDelay& operator=(const LinkDelay&) = delete;

 private:
  void remove();
  struct End {
    std::string netns, dev;
    std::unique_ptr<BackgroundProcess> delayer;
  };
  TempDir dir_;  // the delayers' output
  std::vector<End> ends_;
};
// Why LinkDelay cannot work here (no iptables, the delayer not built for want of
// libnetfilter-queue-dev, a kernel without NFQUEUE), or nullopt. Probed once per process.
std::optional<std::string> link_delay_unavailable();

// Takes both ends of the link down (a pulled cable) or up again.
void set_link_up(const VethLink& link, bool up);

// A socket (socket(AF_INET, type, 0)) created inside the namespace: it stays there for its
// whole life, whichever thread uses it. Lets a test talk over a link without a helper
// process. Throws std::runtime_error on failure; the caller closes the fd.
int open_socket_in(const std::string& netns_name, int type);

// Sends `bytes` over one TCP connection from client_netns to a listener on server_ip in
// server_netns ("" is the root namespace) and returns the goodput in Mbit/s, timed from
// connect to the last byte received. Every read and write is bounded (20 s); throws
// std::runtime_error when the transfer fails or comes up short.
double tcp_goodput_mbit(const std::string& server_netns, const std::string& server_ip,
                        const std::string& client_netns, size_t bytes);

// Removes ep-* namespaces (killing what runs inside) and root-side ep* links whose
// creating process is gone: what a crashed test left behind. Called once per process
// before the first namespace is made; safe to call any time.
void sweep_stale_network_objects();

// True when a process with this pid exists (used to tell stale objects from live ones).
bool pid_alive(long pid);
// The absolute path of a tool found in the usual sbin/bin directories, or "".
std::string find_tool(const std::string& name);

}  // namespace edgeprobe::test_support
