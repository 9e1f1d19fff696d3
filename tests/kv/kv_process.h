#pragma once
#include <memory>
#include <string>
#include <vector>

// Test helpers for two-process KV disaggregation: a kv-serve node in the background, and
// a cgroup v1 cpuset to confine a node to some CPUs.
namespace edgeprobe::kv_test {

// A child process (argv run through `sh -c` after `prefix`, e.g. a cgroup entry), its
// stderr in a file; SIGTERM then SIGKILL when the object goes away.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& argv, const std::string& stderr_path,
                    const std::string& prefix = "",
                    const std::vector<std::pair<std::string, std::string>>& env = {});
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;
  bool running();

 private:
  int pid_ = -1;
};

// `edgeprobe kv-serve` on a free loopback port; port() is 0 when it did not come up
// within the timeout (error() says what it wrote).
class KvServeNode {
 public:
  KvServeNode(const std::string& dir, const std::vector<std::string>& args, const std::string& prefix = "",
              const std::string& token = "test-token", const std::string& host = "127.0.0.1");
  int port() const { return port_; }
  std::string address() const { return host_ + ":" + std::to_string(port_); }
  std::string error() const;

 private:
  std::string dir_, host_;
  std::unique_ptr<BackgroundProcess> process_;
  int port_ = 0;
};

}  // namespace edgeprobe::kv_test
