#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
class ParseError;
}  // namespace CLI

namespace edgeprobe::cli {

// Edits between two words: insertions, deletions, substitutions, and a swap of two
// neighbours counted as one (optimal string alignment), so "bnech" is one edit from "bench".
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `word` when it is near enough to be a typo of it (one edit for
// short words, two for longer ones; none for words of one or two letters), the first of
// equals; "" when none is. A flag's dashes do not count.
std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates);

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
