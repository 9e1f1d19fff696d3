#pragma once
#include <atomic>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace edgeprobe::lab {

struct ProcessOptions {
  double timeout_s = 60;
  // Each complete stdout line (without the newline) as it arrives; when unset, stdout
  // is collected in ProcessResult::out.
  std::function<void(std::string_view)> on_line;
  std::vector<std::pair<std::string, std::string>> env;  // added to the inherited environment
  std::function<bool()> cancel;                          // polled; true: the process is killed
};

// Options with only a time limit, for the many short commands.
inline ProcessOptions within(double timeout_s) {
  ProcessOptions o;
  o.timeout_s = timeout_s;
  return o;
}

struct ProcessResult {
  int exit_code = -1;  // 128+N when killed by signal N
  bool timed_out = false;
  bool cancelled = false;
  std::string out;  // stdout when no on_line was given
  std::string err;  // the last 4 KiB of stderr
};

// Runs argv (argv[0] searched in PATH) in its own process group with stdin from
// /dev/null and kills the group at the time limit. Ends when the process exits: a
// descendant that keeps the pipes open (ssh's ControlPersist master) does not hold it.
// Throws Error(kEnvironment) when the program cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// The stderr text as one line for a message: trimmed, newlines as "; ", its last 300 bytes,
// other controls (ESC) escaped as edgeprobe::one_line does.
std::string one_line(const std::string& text);

}  // namespace edgeprobe::lab
