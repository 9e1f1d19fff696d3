#include "core/bounded_input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/text.h"

namespace edgeprobe {

std::string source_name(const std::string& source) { return source == "-" ? "stdin" : one_line(source); }

std::string read_bounded(const std::string& source, size_t max_bytes, std::string_view what) {
  const std::string name = source_name(source);
  if (source.find('\0') != std::string::npos)
    throw_bad_input("{}: a path with a NUL byte cannot name a {}", name, what);
  int fd = 0;
  if (source != "-") {
    fd = ::open(source.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw_bad_input("cannot read {} '{}': {}", what, name, std::strerror(errno));
  }
  std::string text;
  std::string chunk(1 << 20, '\0');
  int read_errno = 0;
  while (text.size() <= max_bytes) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) read_errno = errno;
    if (n <= 0) break;
    text.append(chunk.data(), static_cast<size_t>(n));
  }
  if (fd != 0) ::close(fd);
  if (read_errno != 0) throw_bad_input("cannot read {} '{}': {}", what, name, std::strerror(read_errno));
  if (text.size() > max_bytes)
    throw_bad_input("{}: over {} MiB, larger than any {} edgeprobe writes; not read further", name,
                    max_bytes >> 20, what);
  return text;
}

namespace {

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1,
// column 5: " prefix: the line and column are said once, in the shape of the other errors.
std::string parse_reason(const std::string& what) {
  size_t at = what.find("] ");
  at = what.find(": ", at == std::string::npos ? 0 : at);
  return one_line(at == std::string::npos ? what : what.substr(at + 2));
}

}  // namespace

nlohmann::json parse_json_bounded(std::string_view text, std::string_view name, std::string_view what,
                                  int max_depth, int first_line) {
  const std::string where = first_line > 0 ? fmt::format("{}:{}", name, first_line) : std::string(name);
  try {
    return nlohmann::json::parse(text, [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      if (depth > max_depth)
        throw_bad_input("{}: nested deeper than {} levels, deeper than any {} edgeprobe writes", where,
                        max_depth, what);
      return true;
    });
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte counts from 1 and is the last byte read: the line and column a person's
    // editor shows for it.
    const size_t end = std::min(e.byte > 0 ? e.byte - 1 : 0, text.size());
    const std::string_view before = text.substr(0, end);
    const size_t line = static_cast<size_t>(std::max(first_line, 1)) +
                        static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
    const size_t newline = before.rfind('\n');
    const size_t column = end - (newline == std::string_view::npos ? 0 : newline + 1) + 1;
    throw_bad_input("{}:{}:{}: not a JSON {}: {}", name, line, column, what, parse_reason(e.what()));
  } catch (const nlohmann::json::exception& e) {  // a number past a double's range (1e400): out_of_range
    throw_bad_input("{}: not a JSON {} edgeprobe can read: {}", where, what, one_line(e.what()));
  }
}

nlohmann::json read_json_bounded(const std::string& source, std::string_view what, size_t max_bytes,
                                 int max_depth) {
  return parse_json_bounded(read_bounded(source, max_bytes, what), source_name(source), what, max_depth);
}

bool valid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    size_t extra = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0xc2 && c <= 0xdf) {
      extra = 1;
      cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      extra = 2;
      cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      extra = 3;
      cp = c & 0x07;
    } else
      return false;
    if (i + extra >= text.size()) return false;  // cut short
    for (size_t k = 1; k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    const uint32_t min = extra == 1 ? 0x80 : extra == 2 ? 0x800 : 0x10000;
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += extra + 1;
  }
  return true;
}

}  // namespace edgeprobe
