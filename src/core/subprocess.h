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
