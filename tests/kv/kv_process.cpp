#include "kv/kv_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "core/text.h"
#include "support/run_process.h"

namespace edgeprobe::kv_test {

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv, const std::string& stderr_path,
                                     const std::string& prefix,
                                     const std::vector<std::pair<std::string, std::string>>& env) {
  std::string command = prefix;
  for (const auto& a : argv) command += shell_quote(a) + " ";
  command += "2>" + shell_quote(stderr_path) + " >/dev/null </dev/null";
  pid_ = fork();
  if (pid_ == 0) {
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
}

bool BackgroundProcess::running() { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }

BackgroundProcess::~BackgroundProcess() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  for (int i = 0; i < 50; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
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

CpuShareCgroup::CpuShareCgroup(double share) {
  const std::string root = "/sys/fs/cgroup/cpu";
  if (geteuid() != 0) {
    error_ = "needs root to create a cgroup";
    return;
  }
  if (!std::filesystem::exists(root + "/cpu.cfs_quota_us")) {
    error_ = "no cgroup v1 cpu controller at " + root;
    return;
  }
  static int counter = 0;
  const std::string dir =
      root + "/edgeprobe-kv-share-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  std::error_code ec;
  std::filesystem::create_directory(dir, ec);
  if (ec) {
    error_ = "cannot create " + dir + ": " + ec.message();
    return;
  }
  dir_ = dir;
  // The kernel's smallest quota is 1 ms: the period stretches to give the share.
  std::ofstream(dir + "/cpu.cfs_period_us") << static_cast<int>(1000 / share);
  std::ofstream(dir + "/cpu.cfs_quota_us") << 1000;
  if (test_support::read_file(dir + "/cpu.cfs_quota_us") != "1000\n")
    error_ = "the cpu quota was not accepted";
}

CpuShareCgroup::~CpuShareCgroup() {
  std::error_code ec;
  for (int i = 0; i < 20 && !dir_.empty() && !std::filesystem::remove(dir_, ec); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

CpusetCgroup::CpusetCgroup(const std::string& cpus) {
  const std::string root = "/sys/fs/cgroup/cpuset";
  if (geteuid() != 0) {
    error_ = "needs root to create a cgroup";
    return;
  }
  if (!std::filesystem::exists(root + "/cpuset.cpus")) {
    error_ = "no cgroup v1 cpuset controller at " + root;
    return;
  }
  static int counter = 0;
  const std::string dir =
      root + "/edgeprobe-kv-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  std::error_code ec;
  std::filesystem::create_directory(dir, ec);
  if (ec) {
    error_ = "cannot create " + dir + ": " + ec.message();
    return;
  }
  dir_ = dir;
  std::ofstream(dir + "/cpuset.mems") << test_support::read_file(root + "/cpuset.mems");
  std::ofstream(dir + "/cpuset.cpus") << cpus;
  if (test_support::read_file(dir + "/cpuset.cpus").empty())
    error_ = "the cpuset " + cpus + " was not accepted";
}

CpusetCgroup::~CpusetCgroup() {
  std::error_code ec;
  // Empty once its processes exited (the nodes are gone before the group is).
  for (int i = 0; i < 20 && !dir_.empty() && !std::filesystem::remove(dir_, ec); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

}  // namespace edgeprobe::kv_test
