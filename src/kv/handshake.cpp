#include "kv/handshake.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "edgeprobe_version.h"
#include "model/gguf_info.h"

namespace edgeprobe::kv {
namespace {

std::string hex(const unsigned char* data, size_t size) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < size; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 15];
  }
  return out;
}

}  // namespace

nlohmann::json Fingerprint::to_json() const {
  return {{"model_sha256", model_sha256},
          {"n_layer", n_layer},
          {"n_head_kv", n_head_kv},
          {"n_embd", n_embd},
          {"n_vocab", n_vocab},
          {"type_k", type_k},
          {"type_v", type_v},
          {"flash_attn", flash_attn},
          {"engine_commit", engine_commit},
          {"n_ctx", n_ctx}};
}

Fingerprint Fingerprint::from_json(const nlohmann::json& j) {
  try {
    Fingerprint f;
    f.model_sha256 = j.at("model_sha256").get<std::string>();
    f.n_layer = j.at("n_layer").get<int64_t>();
    f.n_head_kv = j.at("n_head_kv").get<int64_t>();
    f.n_embd = j.at("n_embd").get<int64_t>();
    f.n_vocab = j.at("n_vocab").get<int64_t>();
    f.type_k = j.at("type_k").get<std::string>();
    f.type_v = j.at("type_v").get<std::string>();
    f.flash_attn = j.at("flash_attn").get<int>();
    f.engine_commit = j.at("engine_commit").get<std::string>();
    f.n_ctx = j.at("n_ctx").get<int>();
    return f;
  } catch (const nlohmann::json::exception& e) {
    throw_environment("kv peer sent a malformed fingerprint: {}", e.what());
  }
}

Fingerprint with_context(Fingerprint f, const engine::ContextOptions& context) {
  f.type_k = context.type_k;
  f.type_v = context.type_v;
  f.flash_attn = context.flash_attn;
  f.n_ctx = context.n_ctx;
  return f;
}

Fingerprint make_fingerprint(const std::string& model_path, const engine::ContextOptions& context) {
  const auto info = model::read_gguf_info(model_path);
  Fingerprint f;
  f.model_sha256 = model::sha256_file(model_path);
  f.n_layer = info.shape.n_layer;
  f.n_head_kv = info.shape.n_head_kv;
  f.n_embd = info.shape.n_embd;
  f.n_vocab = info.shape.n_vocab;
  f.engine_commit = kLlamaCppCommit;
  return with_context(f, context);
}

std::string fingerprint_mismatch(const Fingerprint& server, const Fingerprint& client) {
  std::string out;
  auto check = [&](const char* name, const auto& there, const auto& here) {
    if (there == here) return;
    if (!out.empty()) out += "; ";
    out += fmt::format("{}: {} on the server, {} here", name, there, here);
  };
  check("model_sha256", server.model_sha256, client.model_sha256);
  check("n_layer", server.n_layer, client.n_layer);
  check("n_head_kv", server.n_head_kv, client.n_head_kv);
  check("n_embd", server.n_embd, client.n_embd);
  check("n_vocab", server.n_vocab, client.n_vocab);
  check("type_k", server.type_k, client.type_k);
  check("type_v", server.type_v, client.type_v);
  check("flash_attn", server.flash_attn, client.flash_attn);
  check("engine_commit", server.engine_commit, client.engine_commit);
  if (client.n_ctx > server.n_ctx) {
    if (!out.empty()) out += "; ";
    out += fmt::format("n_ctx: the server holds at most {}, {} asked", server.n_ctx, client.n_ctx);
  }
  return out;
}

std::string new_nonce() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1)
    throw_environment("no random bytes for a nonce (OpenSSL RAND_bytes)");
  return hex(bytes, sizeof(bytes));
}

std::string token_mac(const std::string& token, const std::string& role, const std::string& nonce,
                      const Fingerprint& fingerprint) {
  // to_json() is an object with sorted keys and integers and strings only: one dump per value.
  const std::string message = role + ":" + nonce + ":" + fingerprint.to_json().dump();
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (!HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
            reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &size))
    throw_environment("HMAC-SHA-256 failed (OpenSSL)");
  return hex(mac, size);
}

bool same_mac(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

std::string load_token(const std::string& token_file) {
  std::string token;
  if (!token_file.empty()) {
    std::ifstream in(token_file);
    if (!in) throw_bad_input("cannot read the token file '{}'", token_file);
    std::stringstream ss;
    ss << in.rdbuf();
    token = ss.str();
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
    if (token.empty()) throw_bad_input("the token file '{}' is empty", token_file);
  } else if (const char* env = std::getenv(kTokenEnv)) {
    token = env;
  }
  if (token.empty())
    throw_bad_input("no shared-secret token: set {} or pass --token-file FILE (the same on both nodes)",
                    kTokenEnv);
  return token;
}

}  // namespace edgeprobe::kv
