#include "core/digest.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/error.h"

namespace edgeprobe {

struct Sha256::State {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx{EVP_MD_CTX_new(), EVP_MD_CTX_free};
};

Sha256::Sha256() : state_(std::make_unique<State>()) {
  if (!state_->ctx || EVP_DigestInit_ex(state_->ctx.get(), EVP_sha256(), nullptr) != 1)
    throw_environment("OpenSSL SHA-256 is unavailable");
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(std::string_view bytes) {
  if (EVP_DigestUpdate(state_->ctx.get(), bytes.data(), bytes.size()) != 1)
    throw_environment("OpenSSL SHA-256 failed");
}

std::string Sha256::hex() {
  // Finish a copy, so that the running hash can take more bytes.
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> copy(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!copy || EVP_MD_CTX_copy_ex(copy.get(), state_->ctx.get()) != 1 ||
      EVP_DigestFinal_ex(copy.get(), digest, &length) != 1)
    throw_environment("OpenSSL SHA-256 failed");
  std::string out;
  for (unsigned int i = 0; i < length; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 h;
  h.update(bytes);
  return h.hex();
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_bad_input("cannot read '{}' to hash it: {}", path, std::strerror(errno));
  Sha256 h;
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    if (in.gcount() > 0) h.update({buffer.data(), static_cast<size_t>(in.gcount())});
  }
  if (in.bad()) throw_environment("reading '{}' to hash it failed", path);
  return h.hex();
}

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0) return std::nullopt;
  // EVP_DecodeBlock skips leading and trailing whitespace and takes '=' anywhere: check
  // the alphabet and where padding stands first.
  size_t pad = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
                       c == '/';
    if (c == '=') {
      if (i + 2 < text.size()) return std::nullopt;
      ++pad;
    } else if (!alpha || pad) {
      return std::nullopt;
    }
  }
  std::string out(3 * (text.size() / 4), '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return std::nullopt;
  out.resize(static_cast<size_t>(n) - pad);  // DecodeBlock counts the padding as zero bytes
  return out;
}

}  // namespace edgeprobe
