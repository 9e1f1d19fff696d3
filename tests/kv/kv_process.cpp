#include "kv/kv_process.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "core/text.h"
#include "support/run_process.h"

namespace edgeprobe::kv_test {

test_support::ProcessResult decode_node(const std::vector<std::string>& args, const std::string& prefix,
                                        const std::string& token) {
  std::string command = prefix + EDGEPROBE_BINARY;
  for (const auto& a : args) command += " " + shell_quote(a);
  const std::string base = std::string(EDGEPROBE_BUILD_DIR) + "/test-home";
  return test_support::run_process({"/bin/sh", "-c", command}, 300,
                                   {{"EDGEPROBE_KV_TOKEN", token},
                                    {"XDG_CACHE_HOME", base + "/cache"},
                                    {"XDG_DATA_HOME", base + "/data"}});
}

nlohmann::json parse(const test_support::ProcessResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

KvServeNode::KvServeNode(const std::string& dir, const std::vector<std::string>& args,
                         const std::string& prefix, const std::string& token, const std::string& host)
    : dir_(dir), host_(host) {
  const std::string port_file = dir + "/port";
  std::filesystem::remove(port_file);
  std::vector<std::string> argv{EDGEPROBE_BINARY, "kv-serve",    "--listen",
                                host + ":0",      "--port-file", port_file};
  argv.insert(argv.end(), args.begin(), args.end());
  const std::string base = std::string(EDGEPROBE_BUILD_DIR) + "/test-home";
  process_ = std::make_unique<BackgroundProcess>(
      argv, dir + "/kv-serve.err", prefix,
      std::vector<std::pair<std::string, std::string>>{{"EDGEPROBE_KV_TOKEN", token},
                                                       {"XDG_CACHE_HOME", base + "/cache"},
                                                       {"XDG_DATA_HOME", base + "/data"}});
  for (int i = 0; i < 600 && process_->running(); ++i) {
    if (std::filesystem::exists(port_file)) {
      port_ = std::stoi(test_support::read_file(port_file));
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

std::string KvServeNode::error() const { return test_support::read_file(dir_ + "/kv-serve.err"); }

}  // namespace edgeprobe::kv_test
