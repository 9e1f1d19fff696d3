#pragma once
// Write tokens: a hub accepts submissions only from a token in its token file, where each
// is kept as its SHA-256 (a leaked file names no token), with its own limits:
//   NAME SHA256HEX [MAX_BYTES [PER_MINUTE]]
// one a line; '#' starts a comment. Removing a line revokes the token; the hub reads the
// file again when it changes.
#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace edgeprobe::hub {

struct TokenEntry {
  std::string name, sha256;
  size_t max_bytes = 16u << 20;  // of one submission's body
  double per_minute = 30;        // submissions, as a bucket that refills continuously
};

// Throws Error(kBadInput) naming the file and line for a line that is not one of these.
std::vector<TokenEntry> read_token_file(const std::string& path);

// A fresh token (32 random bytes, hex, "ept_" in front) added to the file under `name`
// (created if absent, mode 0600); returns the token, which is nowhere else. A name
// already in the file is refused.
std::string add_token(const std::string& path, const TokenEntry& limits);
// Removes `name`'s line; throws kBadInput when the file has no such name.
void revoke_token(const std::string& path, const std::string& name);

// The tokens a running hub checks against, with each token's rate bucket.
class TokenBook {
 public:
  explicit TokenBook(std::string path);  // "" = no tokens: the hub is read-only
  bool writable() const { return !path_.empty(); }

  enum class Verdict { kOk, kMissing, kUnknown, kRateLimited };
  struct Admission {
    Verdict verdict = Verdict::kMissing;
    TokenEntry entry;  // for kOk and kRateLimited
  };
  // `authorization`: the request's Authorization header. kOk takes one from the bucket.
  Admission admit(const std::string& authorization);
  // The entry for a header without taking from its bucket (to bound a body before reading it).
  std::optional<TokenEntry> peek(const std::string& authorization);

 private:
  void reload_if_changed();  // with mutex_ held
  std::optional<TokenEntry> find(const std::string& authorization);

  std::string path_;
  std::mutex mutex_;
  std::string version_;  // the file's inode, size and mtime when last read
  std::map<std::string, TokenEntry> by_hash_;
  struct Bucket {
    double tokens = 0;
    std::chrono::steady_clock::time_point at{};
  };
  std::map<std::string, Bucket> buckets_;  // by name: one per token in the file, so bounded
};

}  // namespace edgeprobe::hub
