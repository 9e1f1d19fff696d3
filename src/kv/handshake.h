#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "engine/engine.h"

// What both nodes must agree on before a state crosses: the combinations llama.cpp
// refuses (or, worse, accepts and decodes wrongly) on restore. Both sides check.
namespace edgeprobe::kv {

struct Fingerprint {
  std::string model_sha256;
  int64_t n_layer = 0, n_head_kv = 0, n_embd = 0, n_vocab = 0;
  std::string type_k, type_v;
  int flash_attn = -1;        // decides whether V is stored transposed
  std::string engine_commit;  // llama.cpp's state format is its own
  int n_ctx = 0;              // the client's context; the server's largest one
  nlohmann::json to_json() const;
  static Fingerprint from_json(const nlohmann::json& j);  // throws Error(kEnvironment)
};

// The model's part (SHA-256 and shape from the GGUF) plus a context's settings.
Fingerprint make_fingerprint(const std::string& model_path, const engine::ContextOptions& context);
Fingerprint with_context(Fingerprint base, const engine::ContextOptions& context);

// Empty when a state from `server` restores into `client`, else every difference, e.g.
// "type_k: f16 on the server, q8_0 here".
std::string fingerprint_mismatch(const Fingerprint& server, const Fingerprint& client);

// Shared secret: the token proves itself by an HMAC-SHA-256 over the peer's nonce and the
// sender's own fingerprint, so it never crosses the link, and a relay that rewrites a
// fingerprint (to pass the other side's check) breaks the MAC (protocol 2; protocol 1's
// MAC left the fingerprint out).
std::string new_nonce();  // 32 random bytes, hex
// HMAC-SHA-256(token, role ":" nonce ":" fingerprint's canonical JSON), hex. The
// receiver computes it over the fingerprint it read (Fingerprint::from_json), so the MAC
// covers every field it then checks.
std::string token_mac(const std::string& token, const std::string& role, const std::string& nonce,
                      const Fingerprint& fingerprint);
bool same_mac(const std::string& a, const std::string& b);  // constant time

// The token: from the file when one is named, else the environment variable
// EDGEPROBE_KV_TOKEN; throws Error(kBadInput) when neither gives one. Never printed.
std::string load_token(const std::string& token_file);
inline constexpr const char* kTokenEnv = "EDGEPROBE_KV_TOKEN";

}  // namespace edgeprobe::kv
