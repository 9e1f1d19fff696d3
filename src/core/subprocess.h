#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace edgeprobe {

// How run_subprocess runs a command. The defaults suit a short local tool; each field
// says who needs more.
struct SubprocessOptions {
  double timeout_s = 60;
  // Bytes written to the child's stdin, which is then closed (a plan for `run --plan -`);
  // nullopt: stdin is /dev/null.
  std::optional<std::string> stdin_data;
  // Each complete stdout line (without the newline) as it arrives; when unset, stdout is
  // collected in SubprocessResult::out.
  std::function<void(std::string_view)> on_line;
  std::vector<std::pair<std::string, std::string>> env;  // added to the inherited environment
  std::function<bool()> cancel;                          // polled; true: the process is killed
  // Its own process group, killed whole at the time limit (`sh -c`, ssh and their
  // children). false keeps it in ours, so that a Ctrl-C at the terminal reaches it too;
  // then only the process itself is killed.
  bool own_group = true;
  // What a child may make us hold: collected stdout beyond out_limit is dropped, stderr
  // keeps its last err_limit bytes, a stdout line longer than 64 MiB goes to on_line cut.
  size_t out_limit = 64u << 20;
  size_t err_limit = 64u << 10;
};

// Options with only a time limit, for the many short commands.
inline SubprocessOptions within(double timeout_s) {
  SubprocessOptions o;
  o.timeout_s = timeout_s;
  return o;
}

struct SubprocessResult {
  int exit_code = -1;  // 128+N when killed by signal N
  bool timed_out = false;
  bool cancelled = false;
  std::string out;  // stdout when no on_line was given
  std::string err;  // stderr (its tail, see err_limit)
  double wall_s = 0;
  double cpu_s = 0;  // the child's user + system time (wait4 rusage; descendants it waited for count)
};

// Runs argv (argv[0] searched in PATH when it has no '/') and captures its output. Ends
// when the process exits: a descendant that keeps the pipes open (ssh's ControlPersist
// master) does not hold it. Throws Error(kEnvironment) when the program cannot be started.
SubprocessResult run_subprocess(const std::vector<std::string>& argv, const SubprocessOptions& options = {});

// A child's stderr as one line for a message: trimmed, newlines as "; ", its last 300
// bytes, other controls (ESC) escaped as edgeprobe::one_line does.
std::string output_line(const std::string& text);

// The command that starts this executable again, to run edgeprobe's own subcommands:
//  - normally its path (/proc/self/exe);
//  - when a glibc loader started it explicitly (`ld-linux-*.so --library-path DIR bin/edgeprobe`,
//    as the dist bundle's launcher does), /proc/self/exe is that loader: the same loader with
//    the directories this process's libraries were loaded from, then the program;
//  - under emulation, EDGEPROBE_EMULATOR (words split on spaces, e.g. "qemu-aarch64 -cpu
//    cortex-a76 -L /sysroot") goes first: an emulated process cannot start a binary of its
//    own architecture unless the host's binfmt_misc runs it, and then not on the same CPU.
std::vector<std::string> self_command();

}  // namespace edgeprobe
