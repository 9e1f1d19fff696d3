#include "core/subprocess.h"

#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace edgeprobe {

SubprocessResult run_subprocess(const std::vector<std::string>& argv, double timeout_s,
                                const std::vector<std::pair<std::string, std::string>>& env) {
  if (argv.empty()) throw Error(ErrorKind::kBug, "run_subprocess: empty argv");
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) throw_environment("cannot create a pipe: {}", std::strerror(errno));
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    throw_environment("cannot create a pipe: {}", std::strerror(errno));
  }
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw_environment("cannot start {}: {}", argv[0], std::strerror(errno));
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> cargv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  SubprocessResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  const auto deadline = t0 + std::chrono::duration<double>(timeout_s);
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      kill(pid, SIGKILL);
      result.timed_out = true;
      break;
    }
    const int ready = poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    for (auto& f : fds) {
      if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(f.fd, buf, sizeof(buf));
      if (n > 0) {
        (&f == &fds[0] ? result.out : result.err).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(f.fd);
        f.fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  rusage usage{};
  while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result.cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                 static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

namespace {

// The directories the loaded shared libraries came from, in load order.
int collect_library_dir(dl_phdr_info* info, size_t, void* data) {
  auto& dirs = *static_cast<std::vector<std::string>*>(data);
  const std::string dir = std::filesystem::path(info->dlpi_name ? info->dlpi_name : "").parent_path().string();
  if (!dir.empty() && std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  return 0;
}

// The file this very function's code was mapped from (/proc/self/maps): the program, even
// when the loader was the command that started it.
std::string program_file() {
  const auto here = reinterpret_cast<uintptr_t>(&program_file);
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    uintptr_t from = 0, to = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR, &from, &to) != 2 || here < from || here >= to) continue;
    const auto slash = line.find('/');
    return slash == std::string::npos ? "" : line.substr(slash);
  }
  return "";
}

}  // namespace

std::vector<std::string> self_command() {
  std::vector<std::string> command;
  if (const char* emulator = std::getenv("EDGEPROBE_EMULATOR"); emulator && *emulator) {
    std::istringstream words(emulator);
    for (std::string w; words >> w;) command.push_back(w);
  }
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw_environment("cannot find edgeprobe's own executable: /proc/self/exe: {}", ec.message());
  command.push_back(exe.string());
  const std::string program = program_file();
  if (program.empty() || program == exe.string()) return command;
  // Started as `loader --library-path DIRS program`: the same loader, the same places.
  std::vector<std::string> dirs;
  dl_iterate_phdr(collect_library_dir, &dirs);
  std::string path;
  for (const auto& dir : dirs) path += (path.empty() ? "" : ":") + dir;
  if (!path.empty()) command.insert(command.end(), {"--library-path", path});
  command.push_back(program);
  return command;
}

}  // namespace edgeprobe
