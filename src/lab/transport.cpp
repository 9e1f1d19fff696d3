#include "lab/transport.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "core/error.h"
#include "core/text.h"

namespace edgeprobe::lab {
namespace {

namespace fs = std::filesystem;

// What every OpenSSH command of a device starts with. BatchMode: never a password prompt
// (a lab runs unattended); ServerAlive: a device that vanishes (cable, sshd killed) ends
// the session in seconds rather than at TCP's timeout; ControlMaster: one TCP/SSH
// handshake per device for the many small commands of check and deploy.
std::vector<std::string> ssh_options(const std::string& program, const Device& d, const std::string& control_dir) {
  std::vector<std::string> argv = {program,
                                   "-o",
                                   "BatchMode=yes",
                                   "-o",
                                   "ConnectTimeout=10",
                                   "-o",
                                   "ServerAliveInterval=2",
                                   "-o",
                                   "ServerAliveCountMax=3",
                                   "-o",
                                   "ControlMaster=auto",
                                   "-o",
                                   "ControlPath=" + control_dir + "/%C",
                                   "-o",
                                   "ControlPersist=30"};
  if (!d.user.empty()) argv.insert(argv.end(), {"-o", "User=" + d.user});
  if (d.port) argv.insert(argv.end(), {"-o", fmt::format("Port={}", d.port)});
  return argv;
}

// An inventory is checked when it loads; a device read back from a stored lab run is
// checked here too, so nothing reaches ssh, scp or adb as an option whatever its source.
void refuse_option_like(const Device& d) {
  for (const auto* field : {&d.name, &d.host, &d.user, &d.serial})
    if (field->starts_with('-'))
      throw_bad_input("device '{}': '{}' begins with '-' (ssh and adb would read it as an option); refused",
                      edgeprobe::one_line(d.name, 80), edgeprobe::one_line(*field, 80));
}

class LocalTransport : public Transport {
 public:
  std::string describe() const override { return "local"; }
  SubprocessResult run(const std::string& command, const SubprocessOptions& options) override {
    return run_subprocess({"/bin/sh", "-c", command}, options);
  }
  void push(const std::string& local, const std::string& remote, double) override { copy(local, remote); }
  void pull(const std::string& remote, const std::string& local, double) override { copy(remote, local); }
  std::string unreachable(const SubprocessResult&) const override { return ""; }

 private:
  static void copy(const std::string& from, const std::string& to) {
    std::error_code ec;
    fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
    if (ec) throw_environment("copy {} to {}: {}", from, to, ec.message());
  }
};

// The OpenSSH client (ssh_options says how it is started).
class SshTransport : public Transport {
 public:
  explicit SshTransport(const Device& d) : device_(d) {
    const char* runtime = std::getenv("XDG_RUNTIME_DIR");
    control_dir_ = fmt::format("{}/edgeprobe-ssh-{}", runtime && *runtime ? runtime : "/tmp", getuid());
    std::error_code ec;
    fs::create_directories(control_dir_, ec);
    fs::permissions(control_dir_, fs::perms::owner_all, ec);
  }
  std::string describe() const override { return "ssh " + device_.host; }

  SubprocessResult run(const std::string& command, const SubprocessOptions& options) override {
    return run_subprocess(ssh_command_argv(device_, control_dir_, command), options);
  }
  void push(const std::string& local, const std::string& remote, double timeout_s) override {
    copy({local, target(remote)}, timeout_s, "push " + local);
  }
  void pull(const std::string& remote, const std::string& local, double timeout_s) override {
    copy({target(remote), local}, timeout_s, "pull " + remote);
  }
  std::string unreachable(const SubprocessResult& r) const override {
    if (r.timed_out) return "ssh " + device_.host + ": timed out";
    if (r.exit_code == 255)
      return "ssh " + device_.host + ": " + (r.err.empty() ? "connection failed" : output_line(r.err));
    return "";
  }

 private:
  // scp -O hands the remote path to the remote shell: quote it for that shell.
  std::string target(const std::string& remote) const { return device_.host + ":" + shell_quote(remote); }

  void copy(std::vector<std::string> paths, double timeout_s, const std::string& what) {
    const SubprocessResult r = run_subprocess(scp_argv(device_, control_dir_, paths), within(timeout_s));
    if (r.exit_code != 0)
      throw_environment("ssh {}: {} failed: {}", device_.host, what,
                        r.timed_out ? "timed out" : output_line(r.err));
  }

  Device device_;
  std::string control_dir_;
};

// `adb -s SERIAL shell|push|pull`, the commands a real phone takes.
class AdbTransport : public Transport {
 public:
  explicit AdbTransport(const Device& d) : device_(d) {}
  std::string describe() const override { return "adb " + device_.serial; }
  SubprocessResult run(const std::string& command, const SubprocessOptions& options) override {
    connect_once();
    return run_subprocess({adb_program(), "-s", device_.serial, "shell", command}, options);
  }
  void push(const std::string& local, const std::string& remote, double timeout_s) override {
    connect_once();
    check(run_subprocess({adb_program(), "-s", device_.serial, "push", local, remote}, within(timeout_s)),
          "push " + local);
  }
  void pull(const std::string& remote, const std::string& local, double timeout_s) override {
    connect_once();
    check(run_subprocess({adb_program(), "-s", device_.serial, "pull", remote, local}, within(timeout_s)),
          "pull " + remote);
  }
  std::string unreachable(const SubprocessResult& r) const override {
    if (r.timed_out) return "adb " + device_.serial + ": timed out";
    const std::string err = output_line(r.err);
    for (const char* sign :
         {"not found", "offline", "unauthorized", "no devices", "device still connecting", "closed"})
      if (err.find(sign) != std::string::npos) return "adb " + device_.serial + ": " + err;
    return "";
  }

 private:
  // adb connect for host:port endpoints (a network device, a DeviceFarmer/STF lab).
  void connect_once() {
    if (connected_ || device_.serial.find(':') == std::string::npos) return;
    connected_ = true;
    run_subprocess({adb_program(), "connect", device_.serial}, within(20));
  }
  void check(const SubprocessResult& r, const std::string& what) const {
    if (r.exit_code != 0)
      throw_environment("adb {}: {} failed: {}", device_.serial, what,
                        r.timed_out ? "timed out" : output_line(r.err + r.out));
  }
  Device device_;
  bool connected_ = false;
};

}  // namespace

std::string adb_program() {
  const char* adb = std::getenv("EDGEPROBE_ADB");
  return adb && *adb ? adb : "adb";
}

std::vector<std::string> ssh_command_argv(const Device& d, const std::string& control_dir,
                                          const std::string& command) {
  std::vector<std::string> argv = ssh_options("ssh", d, control_dir);
  // "--" ends the options: the destination and the command are never read as one.
  argv.insert(argv.end(), {"--", d.host, command});
  return argv;
}

std::vector<std::string> scp_argv(const Device& d, const std::string& control_dir,
                                  const std::vector<std::string>& paths) {
  std::vector<std::string> argv = ssh_options("scp", d, control_dir);
  argv.insert(argv.begin() + 1, {"-q", "-O"});  // -O: the classic protocol, paths via the remote shell
  argv.push_back("--");
  argv.insert(argv.end(), paths.begin(), paths.end());
  return argv;
}

std::unique_ptr<Transport> make_transport(const Device& d) {
  refuse_option_like(d);
  if (d.transport == "local") return std::make_unique<LocalTransport>();
  if (d.transport == "ssh") return std::make_unique<SshTransport>(d);
  if (d.transport == "adb") return std::make_unique<AdbTransport>(d);
  throw_bad_input("device '{}': transport '{}': use local, ssh or adb", d.name, d.transport);
}

}  // namespace edgeprobe::lab
