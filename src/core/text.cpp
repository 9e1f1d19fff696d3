#include "core/text.h"

#include <fmt/format.h>

#include <algorithm>

namespace edgeprobe {

std::string csv_field(std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(field);
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

namespace {

// The length of the well-formed UTF-8 character at text[i] (1..4), or 0 when the bytes
// there are not one (a stray continuation, an overlong form, a surrogate, past U+10FFFF).
size_t utf8_length(std::string_view text, size_t i) {
  const auto at = [&](size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
  const unsigned c = at(0);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned lo = 0x80, hi = 0xbf;  // the range of the second byte
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c >= 0xe0 && c <= 0xef) n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
  else return 0;
  if (at(1) < lo || at(1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (at(k) < 0x80 || at(k) > 0xbf) return 0;
  return n;
}

}  // namespace

std::string one_line(std::string_view text, size_t max_bytes) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    const size_t n = utf8_length(text, i);
    std::string piece;
    if (c == '\n') piece = "\\n";
    else if (c == '\r') piece = "\\r";
    else if (c == '\t') piece = "\\t";
    else if (c < 0x20 || c == 0x7f || n == 0) piece = fmt::format("\\x{:02x}", c);  // invalid UTF-8 too
    else if (n == 2 && c == 0xc2 && static_cast<unsigned char>(text[i + 1]) <= 0x9f)
      piece = fmt::format("\\u{:04x}", static_cast<unsigned char>(text[i + 1]));  // a C1 control (CSI is U+009B)
    else piece = std::string(text.substr(i, n));
    if (out.size() + piece.size() > max_bytes) break;  // whole characters and escapes only
    out += piece;
    i += n == 0 ? 1 : n;
  }
  if (i < text.size()) out += fmt::format("… ({} bytes)", text.size());
  return out;
}

std::string shell_quote(std::string_view word) {
  static constexpr std::string_view kSafe =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-";
  if (!word.empty() && word.find_first_not_of(kSafe) == std::string_view::npos) return std::string(word);
  // Nothing is special inside single quotes but the quote itself: close, escape, reopen.
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string shell_join(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) {
    if (!out.empty()) out += ' ';
    out += shell_quote(w);
  }
  return out;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  // d[i][j]: edits between a's first i and b's first j characters.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

namespace {

// A flag's dashes are no part of its spelling: "-output" is a typo of "--output".
std::string_view without_dashes(std::string_view word) {
  const size_t start = word.find_first_not_of('-');
  return start == std::string_view::npos ? std::string_view() : word.substr(start);
}

}  // namespace

std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string_view typed = without_dashes(word);
  if (typed.size() < 3) return "";  // one or two letters are a step from too many words
  const size_t allowed = typed.size() <= 4 ? 1 : 2;
  std::string best;
  size_t best_distance = allowed + 1;
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(typed, without_dashes(c));
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace edgeprobe
