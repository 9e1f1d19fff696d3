#pragma once
#include <string>
#include <vector>

namespace edgeprobe::test_support {

// A server started by a test and stopped (SIGTERM, then SIGKILL) when the object goes
// away, even when the test fails. Its stdout and stderr go to `log_path`.
class ServerProcess {
 public:
  ServerProcess(const std::vector<std::string>& argv, const std::string& log_path);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  int pid() const { return pid_; }
  bool running() const;

 private:
  int pid_ = -1;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_loopback_port();
// Polls http://127.0.0.1:port/path until it answers 200 or timeout_s passes (or the
// process died); returns whether it did.
bool wait_for_http(int port, const std::string& path, double timeout_s, const ServerProcess& process);
// The first line the process wrote to `log_path` (the fake server prints its port).
std::string first_line(const std::string& log_path, double timeout_s);

}  // namespace edgeprobe::test_support
