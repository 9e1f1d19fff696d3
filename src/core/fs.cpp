#include "core/fs.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace edgeprobe {

FsRoot::FsRoot(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  if (root_.empty()) root_ = "/";
}

std::string FsRoot::path(const std::string& absolute) const {
  if (root_ == "/") return absolute;
  return root_ + (absolute.empty() || absolute.front() == '/' ? "" : "/") + absolute;
}

std::optional<std::string> FsRoot::read_text(const std::string& absolute) const {
  std::ifstream in(path(absolute), std::ios::binary);
  if (!in) {
    last_error_ = errno == ENOENT ? "absent" : std::strerror(errno);
    return std::nullopt;
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    last_error_ = std::strerror(errno);
    return std::nullopt;
  }
  std::string text = buffer.str();
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\0')) text.pop_back();
  return text;
}

std::optional<int64_t> FsRoot::read_int(const std::string& absolute) const {
  auto text = read_text(absolute);
  if (!text) return std::nullopt;
  try {
    size_t used = 0;
    const long long value = std::stoll(*text, &used, 10);
    return static_cast<int64_t>(value);
  } catch (const std::exception&) {
    last_error_ = "not a number: '" + text->substr(0, 40) + "'";
    return std::nullopt;
  }
}

bool FsRoot::exists(const std::string& absolute) const {
  std::error_code ec;
  return std::filesystem::exists(path(absolute), ec);
}

std::vector<std::string> FsRoot::list_dir(const std::string& absolute) const {
  std::vector<std::string> names;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(path(absolute), ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_file_or_throw(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_bad_input("cannot read {} '{}': {}", what, path, std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace edgeprobe
