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
#include <string_view>
#include <sstream>

#include "core/error.h"
#include "core/text.h"

namespace edgeprobe {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr size_t kMaxLine = 64u << 20;  // a stream's result line with every sample is a few MB

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// A write to the child's stdin that cannot kill us with SIGPIPE when the child has gone
// without reading it (a pipe has no MSG_NOSIGNAL): the signal is blocked in this thread
// around the write, and the one it raised is taken back before it is unblocked.
ssize_t write_quietly(int fd, const char* data, size_t n) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  const ssize_t written = write(fd, data, n);
  const int e = errno;
  if (written < 0 && e == EPIPE) {
    const timespec zero{0, 0};
    sigtimedwait(&pipe_set, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  errno = e;
  return written;
}

// The child's environment, built before fork: between fork and exec a threaded process
// may only make async-signal-safe calls, and setenv is not one.
std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string_view entry(*e);
    const auto name = entry.substr(0, entry.find('='));
    if (std::none_of(extra.begin(), extra.end(), [&](const auto& kv) { return kv.first == name; }))
      env.emplace_back(entry);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

}  // namespace

SubprocessResult run_subprocess(const std::vector<std::string>& argv, const SubprocessOptions& options) {
  if (argv.empty()) throw Error(ErrorKind::kBug, "run_subprocess: empty argv");
  // Close-on-exec everywhere: a child another thread starts does not inherit our pipes.
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1}, exec_pipe[2] = {-1, -1}, in_pipe[2] = {-1, -1};
  auto close_all = [&] {
    for (int* p : {out_pipe, err_pipe, exec_pipe, in_pipe}) {
      close_fd(p[0]);
      close_fd(p[1]);
    }
  };
  const bool feed = options.stdin_data.has_value();
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0 || pipe2(exec_pipe, O_CLOEXEC) != 0 ||
      (feed && pipe2(in_pipe, O_CLOEXEC) != 0)) {
    const int e = errno;
    close_all();
    throw_environment("cannot create pipes for {}: {}", argv[0], std::strerror(e));
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<std::string> env = child_environment(options.env);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const int stdin_fd = feed ? in_pipe[0] : open("/dev/null", O_RDONLY | O_CLOEXEC);

  const double t0 = now_s();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close_all();
    if (!feed && stdin_fd >= 0) close(stdin_fd);
    throw_environment("cannot start {}: {}", argv[0], std::strerror(e));
  }
  if (pid == 0) {
    if (options.own_group) setpgid(0, 0);
    dup2(stdin_fd, STDIN_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    signal(SIGPIPE, SIG_DFL);
    execvpe(args[0], args.data(), envp.data());
    const int e = errno;
    (void)!write(exec_pipe[1], &e, sizeof e);
    _exit(127);
  }
  if (options.own_group) setpgid(pid, pid);  // also here: no kill may come before the child's own call
  if (!feed && stdin_fd >= 0) close(stdin_fd);
  close_fd(out_pipe[1]);
  close_fd(err_pipe[1]);
  close_fd(exec_pipe[1]);
  close_fd(in_pipe[0]);
  int exec_errno = 0;
  ssize_t got;
  while ((got = read(exec_pipe[0], &exec_errno, sizeof exec_errno)) < 0 && errno == EINTR) {
  }
  close_fd(exec_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof exec_errno)) {
    waitpid(pid, nullptr, 0);
    close_all();
    throw_environment("cannot run '{}': {}", argv[0], std::strerror(exec_errno));
  }

  SubprocessResult r;
  std::string line_buf;
  auto take_out = [&](const char* data, size_t n) {
    if (!options.on_line) {
      r.out.append(data, std::min(n, options.out_limit - std::min(options.out_limit, r.out.size())));
      return;
    }
    line_buf.append(data, n);
    size_t start = 0;
    for (size_t nl; (nl = line_buf.find('\n', start)) != std::string::npos; start = nl + 1)
      options.on_line(std::string_view(line_buf).substr(start, nl - start));
    line_buf.erase(0, start);
    if (line_buf.size() > kMaxLine) {  // handed over cut: the reader refuses it as a line it cannot use
      options.on_line(line_buf);
      line_buf.clear();
    }
  };
  auto take_err = [&](const char* data, size_t n) {
    r.err.append(data, n);
    if (r.err.size() > 2 * options.err_limit) r.err.erase(0, r.err.size() - options.err_limit);
  };

  const std::string_view input = feed ? std::string_view(*options.stdin_data) : std::string_view();
  size_t fed = 0;
  if (feed && input.empty()) close_fd(in_pipe[1]);
  if (in_pipe[1] >= 0) fcntl(in_pipe[1], F_SETFL, O_NONBLOCK);
  const double deadline = t0 + options.timeout_s;
  bool out_open = true, err_open = true, exited = false;
  int status = 0;
  rusage usage{};
  double exited_at = 0;
  char buf[65536];
  while (true) {
    if (!exited && wait4(pid, &status, WNOHANG, &usage) == pid) {
      exited = true;
      exited_at = now_s();
      close_fd(in_pipe[1]);
    }
    // After the exit, what is left in the pipes is drained for a moment; a descendant
    // holding them open (a persistent ssh master) does not keep us here.
    if ((!out_open && !err_open && exited) || (exited && now_s() - exited_at > 0.5)) break;
    const bool cancel = !exited && options.cancel && options.cancel();
    if (!exited && (now_s() > deadline || cancel)) {
      r.timed_out = !cancel;
      r.cancelled = cancel;
      kill(options.own_group ? -pid : pid, SIGKILL);
      while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
      }
      exited = true;
      exited_at = now_s();
      close_fd(in_pipe[1]);
    }
    pollfd fds[3] = {{out_open ? out_pipe[0] : -1, POLLIN, 0},
                     {err_open ? err_pipe[0] : -1, POLLIN, 0},
                     {in_pipe[1], POLLOUT, 0}};
    // With the pipes closed only the exit is awaited: often, so the wall time is the child's.
    poll(fds, 3, out_open || err_open || in_pipe[1] >= 0 ? 50 : 5);
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0 && i == 0) {
        take_out(buf, static_cast<size_t>(n));
      } else if (n > 0) {
        take_err(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        (i == 0 ? out_open : err_open) = false;
      }
    }
    if (fds[2].revents & (POLLOUT | POLLERR | POLLHUP)) {
      const ssize_t n = write_quietly(in_pipe[1], input.data() + fed, input.size() - fed);
      if (n > 0) fed += static_cast<size_t>(n);
      // Everything written, or a child that stopped reading (EPIPE): stdin ends.
      if (fed == input.size() || (n < 0 && errno != EAGAIN && errno != EINTR)) close_fd(in_pipe[1]);
    }
  }
  close_all();
  if (options.on_line && !line_buf.empty()) options.on_line(line_buf);  // a last line without newline
  if (r.err.size() > options.err_limit) r.err.erase(0, r.err.size() - options.err_limit);
  r.wall_s = exited_at - t0;
  r.cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
            static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string output_line(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\r') continue;
    if (c == '\n') {
      if (!out.empty() && !out.ends_with("; ")) out += "; ";
      continue;
    }
    out += c;
  }
  while (out.ends_with("; ") || out.ends_with(" ")) out.pop_back();
  if (out.ends_with(";")) out.pop_back();
  // The tail says what went wrong; the cut falls on a character's first byte.
  if (out.size() > 300) {
    size_t cut = out.size() - 297;
    while (cut < out.size() && (static_cast<unsigned char>(out[cut]) & 0xc0) == 0x80) ++cut;
    out = "..." + out.substr(cut);
  }
  // A device's or a tool's words reach the terminal and the store: controls escaped.
  return one_line(out, 600);
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
