#pragma once
// SHA-256 and base64 through OpenSSL, for what crosses a boundary: a deployed file, a
// framed stream in a lab engine's log, a migrated document.
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace edgeprobe {

// SHA-256 fed piece by piece: a stream hashed while it is written.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  void update(std::string_view bytes);
  std::string hex();  // the digest of everything so far, lowercase; the hash may go on after

 private:
  struct State;
  std::unique_ptr<State> state_;
};

std::string sha256_hex(std::string_view bytes);
// Throws Error(kBadInput) naming the file when it cannot be read.
std::string sha256_file(const std::string& path);

std::string base64_encode(std::string_view bytes);
// Standard alphabet with padding; nullopt for anything else (a character outside the
// alphabet, a length that is not a multiple of 4, padding in the middle).
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace edgeprobe
