#include "support/run_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace edgeprobe::test_support {

ProcessResult run_process(const std::vector<std::string>& argv, int timeout_s,
                          const std::vector<std::pair<std::string, std::string>>& env) {
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    close(out_pipe[0]);
    close(err_pipe[0]);
    const int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, STDIN_FILENO);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> cargv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  ProcessResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int open_fds = 2;
  bool killed = false;
  char buf[65536];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      kill(pid, SIGKILL);
      killed = true;
      break;
    }
    if (poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000))) <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        (i == 0 ? result.out : result.err).append(buf, static_cast<size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  waitpid(pid, &status, 0);
  if (killed) result.err += "\n[test harness: killed after " + std::to_string(timeout_s) + " s]";
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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

std::string tiny_model(const std::string& quant) {
  // Kept in the build tree so repeated test runs reuse it; synth is deterministic.
  const std::string dir = std::string(EDGEPROBE_BUILD_DIR) + "/test-models";
  const std::string path = dir + "/tiny-" + quant + ".gguf";
  if (std::filesystem::exists(path)) return path;
  std::filesystem::create_directories(dir);
  const auto r = run_edgeprobe({"synth", "--shape", "tiny", "-q", quant, "-o", path, "--force"}, 600);
  if (r.exit_code != 0) throw std::runtime_error("synth failed: " + r.err);
  return path;
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
