#include "telemetry/file_reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <charconv>
#include <cstring>

namespace edgeprobe::telemetry {

CachedFile::CachedFile(CachedFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), buffer_(std::move(other.buffer_)),
      error_(std::move(other.error_)) {
  other.fd_ = -1;
}

CachedFile& CachedFile::operator=(CachedFile&& other) noexcept {
  if (this != &other) {
    close_fd();
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    buffer_ = std::move(other.buffer_);
    error_ = std::move(other.error_);
    other.fd_ = -1;
  }
  return *this;
}

CachedFile::~CachedFile() { close_fd(); }

void CachedFile::close_fd() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

static std::string errno_reason(int err) {
  if (err == ENOENT || err == ENOTDIR) return "absent";
  if (err == EACCES || err == EPERM) return "permission denied";
  return std::strerror(err);
}

std::string_view CachedFile::read() {
  if (fd_ < 0) {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      error_ = errno_reason(errno);
      return {};
    }
  }
  if (buffer_.size() < 256) buffer_.resize(256);
  size_t used = 0;
  for (;;) {
    const ssize_t n = ::pread(fd_, buffer_.data() + used, buffer_.size() - used, static_cast<off_t>(used));
    if (n < 0) {
      if (errno == EINTR) continue;
      error_ = errno_reason(errno);
      // A task that exited or a node that went away: reopen next time.
      close_fd();
      return {};
    }
    used += static_cast<size_t>(n);
    if (n == 0 || used < buffer_.size()) break;
    buffer_.resize(buffer_.size() * 2);  // grows once to the file's size, then stays
  }
  while (used > 0 && (buffer_[used - 1] == '\n' || buffer_[used - 1] == ' ' || buffer_[used - 1] == '\0')) {
    --used;
  }
  error_.clear();
  return std::string_view(buffer_.data(), used);
}

bool CachedFile::read_int(long long* out) {
  const std::string_view text = read();
  if (failed()) return false;
  if (!parse_ll(text, out)) {
    error_ = "not a number";
    return false;
  }
  return true;
}

bool parse_ll(std::string_view text, long long* out) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\n')) {
    text.remove_prefix(1);
  }
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  long long value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return false;
  *out = value;
  return true;
}

std::string_view next_token(std::string_view* text) {
  size_t i = 0;
  while (i < text->size() && std::isspace(static_cast<unsigned char>((*text)[i]))) ++i;
  size_t j = i;
  while (j < text->size() && !std::isspace(static_cast<unsigned char>((*text)[j]))) ++j;
  const std::string_view token = text->substr(i, j - i);
  text->remove_prefix(j);
  return token;
}

std::vector<int> parse_cpu_list(std::string_view text) {
  std::vector<int> cpus;
  std::string normalised(text);
  std::replace(normalised.begin(), normalised.end(), ',', ' ');
  std::string_view rest(normalised);
  for (std::string_view token = next_token(&rest); !token.empty(); token = next_token(&rest)) {
    const size_t dash = token.find('-');
    long long first = 0;
    long long last = 0;
    if (dash == std::string_view::npos) {
      if (!parse_ll(token, &first)) continue;
      last = first;
    } else if (!parse_ll(token.substr(0, dash), &first) || !parse_ll(token.substr(dash + 1), &last)) {
      continue;
    }
    for (long long cpu = first; cpu <= last && cpu - first < 4096; ++cpu) cpus.push_back(static_cast<int>(cpu));
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += '-' + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace edgeprobe::telemetry
