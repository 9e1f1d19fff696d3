#include "support/run_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "core/error.h"
#include "core/subprocess.h"
#include "core/text.h"
#include "edgeprobe_version.h"

namespace edgeprobe::test_support {
namespace {

// The processes a test starts keep their probe cache and results store in the build tree
// (XDG_CACHE_HOME below), but share the user's model cache: models are deterministic files
// keyed by recipe and SHA-256 (written aside, renamed, locked), and the trained ones take
// minutes to make; set-up made them there once. model::default_model_cache_dir's rule.
const bool kSharedModelCache = [] {
  if (std::getenv("EDGEPROBE_MODEL_CACHE")) return false;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string dir = xdg && *xdg
                              ? std::string(xdg) + "/edgeprobe/models"
                              : std::string(home && *home ? home : "/tmp") + "/.cache/edgeprobe/models";
  return setenv("EDGEPROBE_MODEL_CACHE", dir.c_str(), 0) == 0;
}();

}  // namespace

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv, const std::string& stderr_path,
                                     const std::string& prefix,
                                     const std::vector<std::pair<std::string, std::string>>& env,
                                     const std::string& stdout_path)
    : stdout_path_(stdout_path) {
  std::string command = prefix;
  for (const auto& a : argv) command += shell_quote(a) + " ";
  pid_ = fork();
  if (pid_ == 0) {
    // Its own process group: Debian's sh runs the command as a child instead of becoming
    // it, so a signal to sh alone would leave the command running (it did: kv-serve
    // nodes outlived their tests). The destructor signals the whole group.
    setpgid(0, 0);
    auto redirect = [](const std::string& path, int fd, int flags) {
      const int f = open(path.empty() ? "/dev/null" : path.c_str(), flags, 0644);
      if (f >= 0) dup2(f, fd);
    };
    redirect("", 0, O_RDONLY);
    redirect(stdout_path, 1, O_WRONLY | O_CREAT | O_TRUNC);
    redirect(stderr_path, 2, O_WRONLY | O_CREAT | O_TRUNC);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
}

bool BackgroundProcess::running() { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }

bool BackgroundProcess::wait_for_output(const std::string& text, int timeout_ms) {
  for (int waited = 0; waited <= timeout_ms; waited += 20) {
    if (!stdout_path_.empty() && read_file(stdout_path_).find(text) != std::string::npos) return true;
    if (!running()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ <= 0) return;
  kill(-pid_, SIGTERM);  // sh and the command it runs
  for (int i = 0; i < 50; ++i) {
    if (waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  kill(-pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

ProcessResult run_process(const std::vector<std::string>& argv, int timeout_s,
                          const std::vector<std::pair<std::string, std::string>>& env) {
  SubprocessOptions options = within(timeout_s);
  options.env = env;
  options.err_limit = options.out_limit;  // a test's failure message shows all of it
  SubprocessResult r;
  try {
    r = run_subprocess(argv, options);
  } catch (const Error& e) {  // a program that cannot start: as a shell reports it
    return {127, "", e.what()};
  }
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

ProcessResult run_llama_tool(const std::vector<std::string>& argv, const std::string& final_line,
                             int timeout_s, int tries) {
  ProcessResult r;
  for (int i = 0; i < tries; ++i) {
    r = run_process(argv, timeout_s);
    if (r.exit_code != 0 || (r.out + r.err).find(final_line) != std::string::npos) break;
    std::fprintf(stderr, "%s exited 0 without '%s' (its logger lost the last lines); again\n",
                 argv[0].c_str(), final_line.c_str());
  }
  return r;
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

TestCgroup::TestCgroup(const std::string& controller, const std::string& probe_file) {
  const std::string root = "/sys/fs/cgroup/" + controller;
  if (geteuid() != 0) {
    error_ = "needs root to create a cgroup";
    return;
  }
  if (!std::filesystem::exists(root + "/" + probe_file)) {
    error_ = "no cgroup v1 " + controller + " controller at " + root;
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
}

void TestCgroup::set(const std::string& file, const std::string& value) {
  if (dir_.empty()) return;
  std::ofstream(dir_ + "/" + file) << value;
  if (error_.empty() && read_file(dir_ + "/" + file).empty()) error_ = file + " " + value + " was not accepted";
}

TestCgroup::~TestCgroup() {
  std::error_code ec;
  // Empty again once its processes exited, which may take a moment after they were killed.
  for (int i = 0; i < 20 && !dir_.empty() && !std::filesystem::remove(dir_, ec); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

QuotaCgroup::QuotaCgroup(int quota_us, int period_us) : TestCgroup("cpu", "cpu.cfs_quota_us") {
  set("cpu.cfs_period_us", std::to_string(period_us));
  set("cpu.cfs_quota_us", std::to_string(quota_us));
}

CpusetCgroup::CpusetCgroup(const std::string& cpus) : TestCgroup("cpuset", "cpuset.cpus") {
  if (!dir_.empty()) set("cpuset.mems", read_file(std::filesystem::path(dir_).parent_path().string() + "/cpuset.mems"));
  set("cpuset.cpus", cpus);
}

std::string error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::string arm64_bundle() {
  if (const char* env = std::getenv("EDGEPROBE_ARM_BUNDLE"); env && *env) return env;
  std::string best;
  std::error_code ec;
  std::filesystem::file_time_type newest{};
  for (auto it = std::filesystem::directory_iterator(EDGEPROBE_DIST_DIR, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with("edgeprobe-") && name.ends_with("-linux-aarch64-linux-gnu.tar.gz") &&
        (best.empty() || it->last_write_time() > newest)) {
      best = it->path().string();
      newest = it->last_write_time();
    }
  }
  return best;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
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

namespace edgeprobe::test_support {

std::string x86_64_bundle_name() { return std::string("edgeprobe-") + kVersion + "-linux-x86_64-linux-gnu"; }

std::string write_stand_in_bundle(const std::string& dist_dir) {
  const std::string name = x86_64_bundle_name(), stage = dist_dir + "/" + name;
  std::filesystem::create_directories(stage);
  write_file(stage + "/edgeprobe", std::string("#!/bin/sh\nexec ") + EDGEPROBE_BINARY + " \"$@\"\n");
  const auto r = run_process({"/bin/tar", "-C", dist_dir, "-czf", dist_dir + "/" + name + ".tar.gz", name}, 60);
  if (r.exit_code != 0) throw std::runtime_error("tar of the stand-in bundle failed: " + r.err);
  std::filesystem::remove_all(stage);
  return dist_dir;
}

}  // namespace edgeprobe::test_support
