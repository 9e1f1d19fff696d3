#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace edgeprobe::test_support {

struct ProcessResult {
  int exit_code = -1;  // 128+N when killed by signal N
  std::string out;
  std::string err;
};

// Runs a real process (fork/exec), captures stdout and stderr, and kills it after
// timeout_s so a hang fails the test instead of stalling the suite.
ProcessResult run_process(const std::vector<std::string>& argv, int timeout_s = 300,
                          const std::vector<std::pair<std::string, std::string>>& env = {});
ProcessResult run_edgeprobe(const std::vector<std::string>& args, int timeout_s = 300);
// A llama.cpp tool whose summary is printed through llama.cpp's asynchronous logger: on a
// loaded machine the process can exit before the logger's thread writes the last lines
// (llama.cpp leaks the logger on purpose, issue 22142). Runs it again, up to `tries` times,
// while it exits 0 without `final_line` in its output.
ProcessResult run_llama_tool(const std::vector<std::string>& argv, const std::string& final_line,
                             int timeout_s = 900, int tries = 3);

// A child process in the background: argv run through `sh -c` after `prefix` (a cgroup
// entry, `ip netns exec NS`), stdout and stderr into files ("" = /dev/null), in a process
// group of its own; SIGTERM to the group, then SIGKILL after 5 s, when the object goes away.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& argv, const std::string& stderr_path,
                    const std::string& prefix = "",
                    const std::vector<std::pair<std::string, std::string>>& env = {},
                    const std::string& stdout_path = "");
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;
  bool running();
  // Waits up to timeout_ms for `text` in the stdout file; false when the process ended or
  // the time ran out first.
  bool wait_for_output(const std::string& text, int timeout_ms);

 private:
  int pid_ = -1;
  std::string stdout_path_;
};

// A fresh temporary directory, removed when the object goes away.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A tiny synthesized model shared by the tests of one binary (made once, then reused).
std::string tiny_model(const std::string& quant = "q4_0");
// A synthesized model made once with these `edgeprobe synth` arguments and kept in the
// build tree as <name>.gguf.
std::string synth_model(const std::string& name, const std::vector<std::string>& synth_args);
// A cgroup v1 group made for one test, removed when the object goes away (waiting briefly
// for its processes to exit). `error()` says why it could not be made (no root, no
// controller, a setting refused): skip then. `enter_prefix()` is a shell prefix that
// moves the shell into it and execs the command.
class TestCgroup {
 public:
  ~TestCgroup();
  const std::string& error() const { return error_; }
  std::string enter_prefix() const { return enter_command() + " && exec "; }
  // The shell command that moves the shell into the group: two of them joined with &&
  // put a command in two controllers' groups at once (a cpuset and a quota).
  std::string enter_command() const { return "echo $$ > " + dir_ + "/cgroup.procs"; }

 protected:
  // Creates a group under /sys/fs/cgroup/<controller> when `probe_file` is there.
  TestCgroup(const std::string& controller, const std::string& probe_file);
  // Writes `value` to the group's `file`; an error when the file then reads back empty.
  void set(const std::string& file, const std::string& value);
  std::string dir_, error_;
};

// The cpu controller: quota_us of CPU time per period_us (the default period, 100 ms).
class QuotaCgroup : public TestCgroup {
 public:
  explicit QuotaCgroup(int quota_us, int period_us = 100000);
};

// The cpuset controller: its tasks run only on `cpus` ("0", "0-1").
class CpusetCgroup : public TestCgroup {
 public:
  explicit CpusetCgroup(const std::string& cpus);
};

// The message of the edgeprobe Error that f throws, or "" when it throws none.
std::string error_message(const std::function<void()>& f);
// The arm64 bundle the tests run: $EDGEPROBE_ARM_BUNDLE, else the newest
// dist/edgeprobe-*-linux-aarch64-linux-gnu.tar.gz (scripts/setup-arm.sh); "" when none.
std::string arm64_bundle();

// The name of this machine's bundle (edgeprobe-VERSION-linux-x86_64-linux-gnu), and a
// stand-in for it in `dist_dir`: a tarball laid out as scripts/package.sh lays it out whose
// launcher starts the edgeprobe under test (a real one takes a Release build). Returns
// dist_dir.
std::string x86_64_bundle_name();
std::string write_stand_in_bundle(const std::string& dist_dir);

// How many times `what` occurs in `text` (overlapping occurrences count).
size_t count_of(const std::string& text, const std::string& what);
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& data);

}  // namespace edgeprobe::test_support
