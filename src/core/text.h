#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace edgeprobe {

// One CSV field (RFC 4180): quoted when it holds a comma, a double quote, CR or LF, with
// each inner double quote doubled; any other field is written as it is.
std::string csv_field(std::string_view field);

// One word for a POSIX shell: left bare when it is made only of [A-Za-z0-9_@%+=:,./-],
// else single-quoted, with each ' inside written as '\''. The empty word is ''.
std::string shell_quote(std::string_view word);

// The words quoted with shell_quote and joined by spaces: pasted into sh, the command
// receives exactly these arguments.
std::string shell_join(const std::vector<std::string>& words);

}  // namespace edgeprobe
