#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace edgeprobe {

// One CSV field (RFC 4180): quoted when it holds a comma, a double quote, CR or LF, with
// each inner double quote doubled; any other field is written as it is.
std::string csv_field(std::string_view field);

// Text from outside (a server's message, a peer's refusal, a name in its reply) as one valid UTF-8
// line a terminal shows as it is: line breaks, tabs, every other C0/C1 control (ESC, U+0080..U+009F)
// and bytes that are not UTF-8 are written as escapes (\n, \t, \x1b), and text longer than
// max_bytes is cut at a character boundary with the size it had ("… (900000 bytes)").
std::string one_line(std::string_view text, size_t max_bytes = 300);

// One word for a POSIX shell: left bare when it is made only of [A-Za-z0-9_@%+=:,./-],
// else single-quoted, with each ' inside written as '\''. The empty word is ''.
std::string shell_quote(std::string_view word);

// The words quoted with shell_quote and joined by spaces: pasted into sh, the command
// receives exactly these arguments.
std::string shell_join(const std::vector<std::string>& words);

// Edits between two words: insertions, deletions, substitutions, and a swap of two
// neighbours counted as one (optimal string alignment), so "bnech" is one edit from "bench".
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `word` when it is near enough to be a typo of it (one edit for
// short words, two for longer ones; none for words of one or two letters), the first of
// equals; "" when none is. A flag's dashes do not count.
std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace edgeprobe
