#pragma once
#include <string>
#include <utility>
#include <vector>

namespace edgeprobe {

struct SubprocessResult {
  int exit_code = -1;     // 128+N when killed by signal N
  bool timed_out = false;
  std::string out, err;
  double wall_s = 0;
  double cpu_s = 0;       // the child's user + system time (wait4 rusage)
};

// Runs argv[0] (a path, not searched in PATH) with stdin from /dev/null, captures stdout
// and stderr, and kills it after timeout_s so a hang ends as an error instead of
// stalling the caller. `env` entries are added to the inherited environment.
// Throws Error(kEnvironment) when the process cannot be started.
SubprocessResult run_subprocess(const std::vector<std::string>& argv, double timeout_s,
                                const std::vector<std::pair<std::string, std::string>>& env = {});

// The path of the running executable (/proc/self/exe), to run edgeprobe's own subcommands.
std::string self_executable();

}  // namespace edgeprobe
