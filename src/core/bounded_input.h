#pragma once
#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

namespace edgeprobe {

// Files and pipes from outside (plans, result files, baselines, prompt sets) are read
// through these, so none is read without a bound: a FIFO or /dev/zero stops at max_bytes,
// and JSON nested deeper than max_depth is refused while it is parsed. nlohmann's parser
// itself is iterative, but copying, dumping and comparing a document recurse, so a
// document a few hundred thousand levels deep would overflow the stack later, anywhere.
// Every refusal is one kBadInput line naming the source (escaped with one_line) and what
// was expected of it ("plan", "result file").

// The bytes of a file, or of stdin for "-", at most max_bytes.
std::string read_bounded(const std::string& source, size_t max_bytes, std::string_view what);

// `text` as JSON, at most max_depth levels of arrays and objects; `name` is where it came
// from, for the error line. Text that is not JSON is refused as "NAME:LINE:COLUMN: not a
// JSON WHAT: REASON", the one shape for every JSON file a user gives (plans, result files,
// baselines, prompt sets). `first_line` > 0: `text` is that line of the file (a JSON Lines
// row), and every refusal names it.
nlohmann::json parse_json_bounded(std::string_view text, std::string_view name, std::string_view what,
                                  int max_depth, int first_line = 0);

// read_bounded and parse_json_bounded together.
nlohmann::json read_json_bounded(const std::string& source, std::string_view what, size_t max_bytes,
                                 int max_depth);

// The name a source has in error lines: "stdin" for "-", else the path, one line and bounded.
std::string source_name(const std::string& source);

// Whether `text` is well-formed UTF-8 (no overlong forms, no surrogates, nothing past
// U+10FFFF).
bool valid_utf8(std::string_view text);

}  // namespace edgeprobe
