#include "hub/tokens.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/digest.h"
#include "core/error.h"
#include "core/text.h"

namespace edgeprobe::hub {

namespace {

bool valid_name(const std::string& name) {
  return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '@';
  });
}

bool is_hex64(const std::string& s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c); });
}

TokenEntry parse_line(const std::string& line, const std::string& where) {
  std::istringstream in(line);
  TokenEntry e;
  in >> e.name >> e.sha256;
  if (!valid_name(e.name) || !is_hex64(e.sha256))
    throw_bad_input(
        "{}: expected 'NAME SHA256HEX [MAX_BYTES [PER_MINUTE]]' (NAME of letters, digits, - _ . @)", where);
  if (std::string extra; in >> extra) {
    try {
      e.max_bytes = std::stoull(extra);
      if (in >> extra) e.per_minute = std::stod(extra);
    } catch (const std::exception&) {
      throw_bad_input("{}: MAX_BYTES and PER_MINUTE are numbers, got '{}'", where, one_line(extra, 40));
    }
  }
  if (e.max_bytes == 0 || !(e.per_minute > 0))
    throw_bad_input("{}: MAX_BYTES and PER_MINUTE must be positive", where);
  return e;
}

std::string random_hex(size_t bytes) {
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  std::string raw(bytes, '\0');
  if (!urandom.read(raw.data(), static_cast<std::streamsize>(bytes)))
    throw_environment("cannot read /dev/urandom for a new token");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) out += {kHex[c >> 4], kHex[c & 15]};
  return out;
}

// "Bearer TOKEN" -> TOKEN; "" for anything else.
std::string bearer(const std::string& header) {
  constexpr std::string_view kScheme = "Bearer ";
  if (header.size() <= kScheme.size() || header.compare(0, kScheme.size(), kScheme) != 0) return "";
  return header.substr(kScheme.size());
}

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& l : lines) out << l << "\n";
    if (!out) throw_environment("cannot write {}", tmp);
  }
  ::chmod(tmp.c_str(), 0600);
  std::filesystem::rename(tmp, path);
}

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

std::vector<TokenEntry> read_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw_bad_input("cannot read the token file {}", one_line(path));
  std::vector<TokenEntry> out;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    out.push_back(parse_line(line, fmt::format("{}:{}", one_line(path), n)));
  }
  return out;
}

std::string add_token(const std::string& path, const TokenEntry& limits) {
  if (!valid_name(limits.name))
    throw_bad_input("token name '{}': letters, digits, - _ . @, at most 64", one_line(limits.name, 80));
  std::vector<std::string> lines;
  if (std::filesystem::exists(path)) {
    for (const auto& e : read_token_file(path))
      if (e.name == limits.name) throw_bad_input("{} already has a token named '{}'", one_line(path), e.name);
    lines = read_lines(path);
  }
  const std::string token = "ept_" + random_hex(32);
  lines.push_back(
      fmt::format("{} {} {} {}", limits.name, sha256_hex(token), limits.max_bytes, limits.per_minute));
  write_lines(path, lines);
  return token;
}

void revoke_token(const std::string& path, const std::string& name) {
  read_token_file(path);  // refuses a broken file before rewriting it
  std::vector<std::string> kept;
  bool found = false;
  for (const auto& line : read_lines(path)) {
    std::istringstream in(line);
    std::string first;
    in >> first;
    if (first == name)
      found = true;
    else
      kept.push_back(line);
  }
  if (!found) throw_bad_input("{} has no token named '{}'", one_line(path), one_line(name, 80));
  write_lines(path, kept);
}

TokenBook::TokenBook(std::string path) : path_(std::move(path)) {
  if (!path_.empty()) {
    std::lock_guard lock(mutex_);
    reload_if_changed();
  }
}

void TokenBook::reload_if_changed() {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) {  // the file is gone: every token is revoked
    by_hash_.clear();
    version_.clear();
    return;
  }
  // A timestamp alone misses two writes within the file system's clock tick; a rewrite
  // (add_token, revoke_token) is a new file, so its inode differs too.
  const std::string version =
      fmt::format("{}:{}:{}.{}", st.st_ino, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  if (version == version_) return;
  std::map<std::string, TokenEntry> fresh;
  for (auto& e : read_token_file(path_)) fresh[e.sha256] = e;
  by_hash_ = std::move(fresh);
  version_ = version;
  std::erase_if(buckets_, [&](const auto& b) {
    return std::none_of(by_hash_.begin(), by_hash_.end(),
                        [&](const auto& e) { return e.second.name == b.first; });
  });
}

std::optional<TokenEntry> TokenBook::find(const std::string& authorization) {
  const std::string token = bearer(authorization);
  if (token.empty() || path_.empty()) return std::nullopt;
  try {
    reload_if_changed();
  } catch (const Error&) {
    // A file broken while the hub runs refuses every token rather than keep stale ones.
    by_hash_.clear();
  }
  const auto it = by_hash_.find(sha256_hex(token));
  if (it == by_hash_.end()) return std::nullopt;
  return it->second;
}

std::optional<TokenEntry> TokenBook::peek(const std::string& authorization) {
  std::lock_guard lock(mutex_);
  return find(authorization);
}

TokenBook::Admission TokenBook::admit(const std::string& authorization) {
  std::lock_guard lock(mutex_);
  if (bearer(authorization).empty()) return {Verdict::kMissing, {}};
  const auto entry = find(authorization);
  if (!entry) return {Verdict::kUnknown, {}};
  // A bucket of per_minute submissions, refilled continuously.
  const auto now = std::chrono::steady_clock::now();
  auto [it, fresh] = buckets_.try_emplace(entry->name, Bucket{entry->per_minute, now});
  Bucket& b = it->second;
  const double elapsed_min = std::chrono::duration<double>(now - b.at).count() / 60.0;
  b.tokens = std::min(entry->per_minute, b.tokens + elapsed_min * entry->per_minute);
  b.at = now;
  if (b.tokens < 1) return {Verdict::kRateLimited, *entry};
  b.tokens -= 1;
  return {Verdict::kOk, *entry};
}

}  // namespace edgeprobe::hub
