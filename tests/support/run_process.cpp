#include "support/run_process.h"

#include <unistd.h>

#include "core/subprocess.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace edgeprobe::test_support {

ProcessResult run_process(const std::vector<std::string>& argv, int timeout_s,
                          const std::vector<std::pair<std::string, std::string>>& env) {
  const auto r = run_subprocess(argv, timeout_s, env);
  ProcessResult result{r.exit_code, r.out, r.err};
  if (r.timed_out) result.err += "\n[test harness: killed after " + std::to_string(timeout_s) + " s]";
  return result;
}

ProcessResult run_edgeprobe(const std::vector<std::string>& args, int timeout_s) {
  std::vector<std::string> argv{EDGEPROBE_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  // Keep the tests' probe cache and results store out of the user's: a probe measured
  // while other tests run is noisy, and test runs are not results.
  const std::string base = std::string(EDGEPROBE_BUILD_DIR) + "/test-home";
  return run_process(argv, timeout_s, {{"XDG_CACHE_HOME", base + "/cache"}, {"XDG_DATA_HOME", base + "/data"}});
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "edgeprobe-test-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string synth_model(const std::string& name, const std::vector<std::string>& synth_args) {
  // Kept in the build tree so repeated test runs reuse it; synth is deterministic.
  const std::string dir = std::string(EDGEPROBE_BUILD_DIR) + "/test-models";
  const std::string path = dir + "/" + name + ".gguf";
  if (std::filesystem::exists(path)) return path;
  std::filesystem::create_directories(dir);
  // Written under another name and renamed, so a test killed midway leaves no half file.
  const std::string partial = path + ".partial-" + std::to_string(getpid());
  std::vector<std::string> args = {"synth"};
  args.insert(args.end(), synth_args.begin(), synth_args.end());
  args.insert(args.end(), {"--output", partial, "--force"});
  const auto r = run_edgeprobe(args, 600);
  if (r.exit_code != 0) throw std::runtime_error("synth failed: " + r.err);
  std::filesystem::rename(partial, path);
  return path;
}

std::string tiny_model(const std::string& quant) { return synth_model("tiny-" + quant, {"--shape", "tiny", "-q", quant}); }

QuotaCgroup::QuotaCgroup(int quota_us) {
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
  const std::string dir = root + "/edgeprobe-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
  std::error_code ec;
  std::filesystem::create_directory(dir, ec);
  if (ec) {
    error_ = "cannot create " + dir + ": " + ec.message();
    return;
  }
  dir_ = dir;
  std::ofstream(dir + "/cpu.cfs_period_us") << 100000;
  std::ofstream(dir + "/cpu.cfs_quota_us") << quota_us;
}

QuotaCgroup::~QuotaCgroup() {
  std::error_code ec;
  if (!dir_.empty()) std::filesystem::remove(dir_, ec);  // empty again once its processes exited
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

}  // namespace edgeprobe::test_support
