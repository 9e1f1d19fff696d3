#pragma once
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "engine/engine.h"
#include "kv/client.h"

// An engine decorator for the decode node: contexts whose prefill runs on a kv server,
// whose state comes back over TCP and is restored here, after which decoding is local.
// Runners see an ordinary engine. Any failure (no server, a refusal, a bad frame, a
// restore llama.cpp rejects) falls back to a local prefill, and the record says so; with
// `required` it is an error instead (the repetition or turn fails).
namespace edgeprobe::kv {

struct RemotePrefillOptions {
  ClientOptions client;
  // Also prefill locally before each remote prefill (timed apart, same tokens), so a
  // result holds both paths as interleaved pairs and the first tokens can be compared.
  bool compare_local = false;
  // After the first prefill of a sequence, ask for the cells this node lacks only (the new
  // turn's and the reply decoded here), not the whole state again.
  bool send_tail = true;
  // The model's fingerprint, instead of hashing and reading its file (engines whose
  // models are not GGUF files: the fake one in tests).
  std::optional<Fingerprint> fingerprint;
  // A failed remote path throws Error(kEnvironment) instead of prefilling locally
  // (--prefill-remote-required: a run that must measure the remote path).
  bool required = false;
};

// One prefill as the decode node lived it. JSON (to_json) goes into the result. Only what
// was measured is there: a fallback has no transfer, so its record holds the mode, the
// reason, the tokens and the TTFT of the whole attempt, and no remote figure at all.
struct PrefillRecord {
  std::string mode;             // "remote", or "local" after a fallback
  std::string fallback_reason;  // why the remote path was not taken
  int tokens = 0;               // this call's tokens
  int n_past = 0;
  double ttft_ms = 0;  // the whole remote path (or the failed attempt and the fallback) on this node's clock
  // The remote path's own figures, set when it completed.
  std::optional<std::string> transfer;  // "whole" state or "tail" (the cells after what this node held)
  std::optional<int> tokens_sent;       // with what the server had not seen (earlier replies)
  std::optional<double> connect_ms;     // connection and handshake, when this prefill opened one
  std::optional<double> remote_prefill_ms, serialize_ms, transfer_ms, restore_ms, first_token_ms;
  std::optional<uint64_t> state_bytes;
  std::optional<double> kv_bytes_per_token;
  std::optional<double> link_mbit_s;       // the state frame's bytes over its receive time, when that was timed
  std::optional<double> local_prefill_ms;  // compare_local: the same tokens prefilled here
  std::optional<bool> first_token_matches_local;
  nlohmann::json to_json() const;
};

// What to do about a fallback, for the line a job prints: start kv-serve, check the
// token, use the same model file and cache types. `server` is HOST:PORT.
std::string fallback_advice(const std::string& reason, const std::string& server);

// Where a job reads the last prefill's record after a runner's repetition or turn.
class PrefillLog {
 public:
  void add(PrefillRecord record);
  std::optional<PrefillRecord> take_last();  // and forgets the rest

 private:
  std::mutex mutex_;
  std::optional<PrefillRecord> last_;
};

class RemotePrefillEngine : public engine::Engine {
 public:
  RemotePrefillEngine(engine::Engine& inner, RemotePrefillOptions options, std::shared_ptr<PrefillLog> log)
      : inner_(inner), options_(std::move(options)), log_(std::move(log)) {}
  std::string name() const override { return inner_.name(); }
  engine::Capabilities capabilities() const override { return inner_.capabilities(); }
  nlohmann::json provenance() const override;
  std::unique_ptr<engine::LoadedModel> load(const engine::ModelOptions& options) override;

 private:
  engine::Engine& inner_;
  RemotePrefillOptions options_;
  std::shared_ptr<PrefillLog> log_;
};

}  // namespace edgeprobe::kv
