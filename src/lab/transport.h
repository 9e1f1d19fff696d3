#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lab/inventory.h"
#include "core/subprocess.h"

namespace edgeprobe::lab {

// How the controller reaches a device: run a POSIX sh command line there (stdout
// streamed line by line), push a file, pull a file. Commands are written for the
// smallest shell a device has (Android's mksh/toybox: no bash). push and pull take
// plain device paths (relative ones are under the login's home).
class Transport {
 public:
  virtual ~Transport() = default;
  // "ssh rpi5", "adb 192.168.1.20:5555", "local", for messages.
  virtual std::string describe() const = 0;
  // Runs `command` through the device's sh. A failure to reach the device is a result
  // with reached = false (exit 255 from ssh, "device offline" from adb), not an exception.
  virtual SubprocessResult run(const std::string& command, const SubprocessOptions& options) = 0;
  // Copies a local file to a path on the device (and back); throws Error(kEnvironment)
  // with the transport's own words when it fails.
  virtual void push(const std::string& local, const std::string& remote, double timeout_s) = 0;
  virtual void pull(const std::string& remote, const std::string& local, double timeout_s) = 0;
  // Why the last run's result means the device was not reached, or "" when it was.
  virtual std::string unreachable(const SubprocessResult& result) const = 0;
};

// The transport of an inventory entry. ssh runs the OpenSSH client (so ~/.ssh/config,
// the agent and known_hosts apply) in BatchMode with a shared connection per device;
// adb runs $EDGEPROBE_ADB or `adb` from PATH with `-s SERIAL`.
std::unique_ptr<Transport> make_transport(const Device& device);

// The argv of `ssh` running `command` on an ssh device, and of `scp` copying `paths`
// ("HOST:PATH" for the device's side): the options, then "--", then what comes from the
// inventory. `control_dir` holds the shared connections' sockets.
std::vector<std::string> ssh_command_argv(const Device& device, const std::string& control_dir,
                                          const std::string& command);
std::vector<std::string> scp_argv(const Device& device, const std::string& control_dir,
                                  const std::vector<std::string>& paths);

// The adb client to run: $EDGEPROBE_ADB, else "adb".
std::string adb_program();

}  // namespace edgeprobe::lab
