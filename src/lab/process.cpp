#include "lab/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/text.h"

namespace edgeprobe::lab {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

constexpr size_t kErrTail = 4096;
// What a device may make us hold: the collected stdout, and one stdout line in progress
// (a stream's result line with every sample is a few MB; a line without end is a device's fault).
constexpr size_t kMaxCollected = 16 << 20;
constexpr size_t kMaxLine = 64 << 20;

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty()) throw Error(ErrorKind::kBug, "run_process: empty argv");
  int out_pipe[2], err_pipe[2], exec_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0 || pipe2(exec_pipe, O_CLOEXEC) != 0)
    throw_environment("cannot create pipes for {}: {}", argv[0], std::strerror(errno));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw_environment("cannot start {}: {}", argv[0], std::strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    const int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    for (const auto& [k, v] : options.env) setenv(k.c_str(), v.c_str(), 1);
    signal(SIGPIPE, SIG_DFL);
    execvp(args[0], args.data());
    const int e = errno;
    (void)!write(exec_pipe[1], &e, sizeof e);
    _exit(127);
  }
  setpgid(pid, pid);
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(exec_pipe[1]);
  int exec_errno = 0;
  const bool exec_failed = read(exec_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  close(exec_pipe[0]);
  if (exec_failed) {
    waitpid(pid, nullptr, 0);
    close(out_pipe[0]);
    close(err_pipe[0]);
    throw_environment("cannot run '{}': {}", argv[0], std::strerror(exec_errno));
  }

  ProcessResult r;
  std::string line_buf;
  auto take_out = [&](const char* data, size_t n) {
    if (!options.on_line) {
      r.out.append(data, std::min(n, kMaxCollected - std::min(kMaxCollected, r.out.size())));
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
    if (r.err.size() > 2 * kErrTail) r.err.erase(0, r.err.size() - kErrTail);
  };

  const double deadline = now_s() + options.timeout_s;
  bool out_open = true, err_open = true, exited = false;
  int status = 0;
  double exited_at = 0;
  char buf[65536];
  while (true) {
    if (!exited && waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      exited_at = now_s();
    }
    // After the exit, what is left in the pipes is drained for a moment; a descendant
    // holding them open (a persistent ssh master) does not keep us here.
    if ((!out_open && !err_open && exited) || (exited && now_s() - exited_at > 0.5)) break;
    const bool cancel = options.cancel && options.cancel();
    if (!exited && (now_s() > deadline || cancel)) {
      r.timed_out = !cancel;
      r.cancelled = cancel;
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      exited = true;
      exited_at = now_s();
    }
    pollfd fds[2] = {{out_open ? out_pipe[0] : -1, POLLIN, 0}, {err_open ? err_pipe[0] : -1, POLLIN, 0}};
    poll(fds, 2, 50);
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
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  if (options.on_line && !line_buf.empty()) options.on_line(line_buf);  // a last line without newline
  if (r.err.size() > kErrTail) r.err.erase(0, r.err.size() - kErrTail);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

std::string one_line(const std::string& text) {
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
  return edgeprobe::one_line(out, 600);
}

}  // namespace edgeprobe::lab
