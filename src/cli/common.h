#pragma once
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace edgeprobe::cli {

// llama-bench spells some flags with one dash and several letters (-pg, -ub, -fa, -ctk);
// CLI11 allows one-letter short names only, so those are rewritten to long names first.
std::vector<std::string> rewrite_llama_bench_aliases(const std::vector<std::string>& args);

// Progress on stderr: one rewritten line on a terminal, plain lines otherwise.
class Progress {
 public:
  explicit Progress(bool enabled);
  ~Progress();
  void update(const std::string& text);
  void finish();

 private:
  bool enabled_;
  bool tty_;
  bool dirty_ = false;
};

// The command line as a shell would take it back (provenance): shell_join in core/text.h.
// {512, 128} -> {"512", "128"}: a plan's numeric defaults as the text a list flag shows.
std::vector<std::string> ints_as_text(const std::vector<int>& values);

std::string join_command_line(const std::vector<std::string>& args);

}  // namespace edgeprobe::cli
