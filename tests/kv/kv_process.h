#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/run_process.h"

// Test helpers for two-process KV disaggregation: a kv-serve node in the background, and
// a cgroup v1 cpuset to confine a node to some CPUs.
namespace edgeprobe::kv_test {

using test_support::BackgroundProcess;

// `edgeprobe ARGS...` as a decode node: through `sh -c` after `prefix` (a cgroup entry,
// `ip netns exec NS `), with the kv token and the test home's cache directories.
test_support::ProcessResult decode_node(const std::vector<std::string>& args, const std::string& prefix = "",
                                        const std::string& token = "test-token");
// Its JSON output, expecting exit 0.
nlohmann::json parse(const test_support::ProcessResult& r);
double median(std::vector<double> v);  // the upper median; 0 for none

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
