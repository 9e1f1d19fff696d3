#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
class ParseError;
}  // namespace CLI

namespace edgeprobe::cli {

// "edgeprobe lab run": the names from the root to `cmd`.
std::string command_path(const CLI::App& cmd);

// "-r" and "--repetitions" of every option a user may type in `cmd` (hidden ones left out).
std::vector<std::string> flag_names(const CLI::App& cmd);

// The deepest subcommand the parse reached (the root when none).
const CLI::App& deepest_parsed(const CLI::App& root);

// What a CLI11 parse error means, in one line without "edgeprobe: error: ": the unknown
// flag or subcommand with the nearest existing one, the flag a stray argument needs, both
// spellings of a flag given twice, and the help of the subcommand it happened in.
// `args` are the arguments as given (not reversed), without the program name.
std::string explain_parse_error(const CLI::App& root, const CLI::ParseError& error,
                                const std::vector<std::string>& args);

}  // namespace edgeprobe::cli
