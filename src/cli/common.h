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

// The command line as a shell would take it back (provenance): shell_join in core/text.h.
// {512, 128} -> {"512", "128"}: a plan's numeric defaults as the text a list flag shows.
std::vector<std::string> ints_as_text(const std::vector<int>& values);
// Each value of a repeatable list flag split on commas: {"1,2", "4"} -> {"1", "2", "4"}.
std::vector<std::string> split_all(const std::vector<std::string>& texts);

std::string join_command_line(const std::vector<std::string>& args);

// What --version prints: edgeprobe's version, git commit (-dirty), build type and compiler
// on the first line; llama.cpp's version and commit and the ggml CPU variants installed on
// the second.
std::string version_text();

}  // namespace edgeprobe::cli
