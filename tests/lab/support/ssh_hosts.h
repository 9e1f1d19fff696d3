#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/netns.h"
#include "support/run_process.h"

// SSH "devices" for the lab's tests: each is a real sshd in its own network namespace,
// reached over a veth link, with its own Unix user, client key and host key. Host-key
// checking stays on: the fixture writes a client HOME whose .ssh/config has one Host entry
// per device (HostName, User, Port, IdentityFile, UserKnownHostsFile, StrictHostKeyChecking
// yes, BatchMode yes, ConnectTimeout) and whose known_hosts holds each device's host key.
//
// OpenSSH finds ~/.ssh through the password database, not $HOME, so setting HOME alone does
// not make ssh read that config. Either pass `-F ssh_config()` (ssh_command() does), or run
// the program under client_prefix(), which gives it a private mount namespace where the
// calling user's ~/.ssh is home()/.ssh: the real "honours the user's ~/.ssh/config" path.
namespace edgeprobe::test_support {

struct SshHostSpec {
  std::string name;      // the Host alias in the client config: letters, digits, '-', '_', '.'
  bool aarch64 = false;  // runs arm64 programs through binfmt_misc + qemu-aarch64; uname -m says aarch64
};

struct SshHost {
  std::string name, address, user, identity_file, workdir;  // workdir: the user's, empty, writable
  int port = 22;
  bool aarch64 = false;
};

class SshHosts {
 public:
  // Why sshd devices cannot be made here (no root, no sshd, no network namespaces), or nullopt.
  static std::optional<std::string> unavailable();
  // Why an aarch64 device cannot be made (binfmt_misc or qemu-aarch64-static missing and
  // not registrable: scripts/setup-binfmt.sh says), or nullopt. Skip only that device then.
  static std::optional<std::string> aarch64_unavailable();

  // Starts every device and waits until each sshd listens; throws std::runtime_error (with
  // the sshd log) when one cannot be started, leaving nothing behind.
  explicit SshHosts(std::vector<SshHostSpec> specs);
  // Kills each device's processes, deletes its user, namespace and files. Never throws.
  ~SshHosts();
  SshHosts(const SshHosts&) = delete;
  SshHosts& operator=(const SshHosts&) = delete;

  const SshHost& host(const std::string& name) const;
  std::vector<std::string> names() const;
  // The client HOME: .ssh/config, .ssh/known_hosts, .ssh/id_NAME keys.
  std::string home() const;
  std::string ssh_config() const { return home() + "/.ssh/config"; }
  // {"/usr/bin/ssh", "-F", ssh_config(), name}: append the remote command.
  std::vector<std::string> ssh_command(const std::string& name) const;
  // Prepend to an argv: runs it with HOME=home() in a mount namespace where the caller's
  // ~/.ssh (from the password database) is home()/.ssh, so a plain `ssh NAME` works.
  std::vector<std::string> client_prefix() const;

  // The device drops: every process in its namespace (the sshd and its sessions) is
  // SIGKILLed, so running sessions end and new connections are refused at once.
  void kill_sshd(const std::string& name);
  // Starts the device's sshd again (same host key and port) and waits until it listens.
  void restart_sshd(const std::string& name);
  // The device's link, for set_rate() or set_link_up() (a pulled cable).
  const VethLink& link(const std::string& name) const;
  const NetNamespace& netns(const std::string& name) const;
  // What the device's sshd logged (for a failing test's message).
  std::string sshd_log(const std::string& name) const;

  class Device;

 private:
  Device& device(const std::string& name) const;
  class Workspace;
  std::unique_ptr<Workspace> dir_;  // declared first: removed after every device is gone
  std::vector<std::unique_ptr<Device>> devices_;
};

// Removes what a crashed test's SshHosts left: ep<pid>u<n> users and the fixture's
// edgeprobe-sshhosts-<pid>-* directory, where that pid is gone (its namespaces and sshd go
// with sweep_stale_network_objects()). Called once per process before the first device.
void sweep_stale_ssh_hosts();

}  // namespace edgeprobe::test_support
