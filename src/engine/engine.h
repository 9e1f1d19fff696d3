#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "core/context_defaults.h"
#include "engine/placement.h"

// The engine seam: what a runner needs from an inference engine, and nothing of how one
// works. Implementations: llama.cpp in-process (llama_engine.h), a scripted fake for
// tests (fake_engine.h). No llama.cpp or ggml type may appear here.
namespace edgeprobe::engine {

using Token = int32_t;

struct ModelOptions {
  std::string path;
  bool use_mmap = true;
  bool use_repack = true;  // llama.cpp's CPU_REPACK extra buffer types
  // GPU offload, as llama-bench takes it: layers on the GPU (-1 all, 0 none), the devices
  // ("" llama.cpp's choice, "none" no GPU, else names joined by '/'), how layers split
  // over several GPUs ("none", "layer", "row") and which GPU holds the model for "none".
  int n_gpu_layers = kDefaultGpuLayers;
  std::string devices{};
  std::string split_mode = "layer";
  int main_gpu = 0;
  // The tokenizer only, no weights: how bench --draft checks in a second that a draft
  // shares the target's vocabulary, before anything is measured.
  bool vocab_only = false;
  bool operator==(const ModelOptions&) const = default;
};

struct ContextOptions {
  int n_ctx = 0;  // 0 = from the model
  int n_batch = kDefaultBatch;
  int n_ubatch = kDefaultUbatch;
  int n_threads = 1;
  std::vector<bool> cpu_mask;  // empty = default affinity; else one flag per CPU
  bool cpu_strict = false;
  int poll = kDefaultPoll;
  int flash_attn = -1;  // -1 auto, 0 off, 1 on
  // Ops whose weights sit in host memory may run on a GPU for large batches (llama.cpp's
  // op_offload; llama-bench's -nopo turns it off).
  bool op_offload = true;
  std::string type_k = kDefaultCacheType;
  std::string type_v = "f16";
  // Room for a scratch sequence beside the cache's own, so that a tail of the cache can be
  // saved and appended (save_tail/restore_tail: a later turn's KV delta).
  bool tail_states = false;
  // Independent sequences decoded side by side (decode_scoring), each with n_ctx / n_seqs
  // cells of the cache, as llama-perplexity runs several chunks per batch.
  int n_seqs = 1;
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

// What an engine can do, so a runner refuses a test it cannot run, or takes a slower
// path, with a clear message instead of a wrong figure.
struct Capabilities {
  bool kv_state = false;          // save_state/restore_state round-trip
  bool kv_tail = false;           // save_tail/restore_tail, in a context made with tail_states
  bool context_shift = false;     // shift() can drop old tokens and keep the rest
  bool cpu_placement = false;     // cpu_mask, cpu_strict and poll are honoured
  bool per_token_timing = false;  // decode_one returns when its token is computed
  // Token level: tokenize, contexts, decode steps (an in-process engine). Without it only
  // whole requests run (new_completer), as through an HTTP server.
  bool token_level = true;
  // Request level: new_completer runs a completion request (every engine can).
  bool requests = true;
  // The model runs in this process, so its load time, threads and peak RSS are this
  // process's to measure. Not so behind an HTTP server: those figures are the server's.
  bool in_process = true;
  // Context::decode_scoring gives the logits of every scored position (fidelity).
  bool logits = false;
  // Context::decode_greedy_all and truncate: a draft's tokens verified in one batch and
  // the rejected ones dropped from the cache (bench --draft).
  bool speculative = false;
  nlohmann::json to_json() const;
};

// The request level: one completion as a server runs it, so an in-process engine and an
// HTTP endpoint run the same workload through the same code. Temperature is 0 (greedy).
struct CompletionRequest {
  std::string api = "completions";    // "completions": `prompt` as is; "chat": `messages`
  std::string prompt;                 // completions: text, or ...
  std::vector<Token> prompt_tokens;   // ... token ids (exact lengths; when not empty)
  std::vector<ChatMessage> messages;  // chat: through the model's chat template
  int max_tokens = 16;
  uint64_t seed = 42;
  bool ignore_eos = false;  // generate max_tokens even past end-of-generation
  // A server may reuse the cached prefix of an earlier request (a conversation's history,
  // as the in-process session keeps it); off for benchmarks of a whole prefill.
  bool cache_prompt = false;
};

// A piece of the reply as the client saw it arrive, on the run clock. `tokens` is how
// many tokens it carries when known (1 in-process and for one token per chunk), 0 unknown.
struct ContentDelta {
  int64_t t_ns = 0;
  std::string text;
  int tokens = 0;
};

struct CompletionResult {
  int64_t start_ns = 0, end_ns = 0;  // request sent .. last byte (run clock)
  std::vector<ContentDelta> deltas;  // content only: a role-only chunk is not one
  std::string text;
  int prompt_tokens = -1, completion_tokens = -1;  // -1: the engine did not say
  std::string finish_reason;                       // "stop", "length", ...
  std::vector<Token> completion_token_ids;         // in-process only (a session's history)
  // What the server said about its own work (llama-server's `timings`, Ollama's
  // prompt_eval_*/eval_*), the model it reports, its headers: null in-process.
  nlohmann::json server;
};

using DeltaCallback = std::function<void(const ContentDelta&)>;

// Runs completion requests one after another (a server slot, an in-process context).
// Throws Error: kEnvironment for a failed request (a server error, a broken stream, a
// timeout), kBadInput for a request the engine cannot take.
class Completer {
 public:
  virtual ~Completer() = default;
  virtual CompletionResult complete(const CompletionRequest& request, const RunClock& clock,
                                    const DeltaCallback& on_delta = {}) = 0;
};

class Context;

// A loaded model: its tokenizer, chat template and facts, and contexts to run it in.
class LoadedModel {
 public:
  virtual ~LoadedModel() = default;

  virtual const ModelOptions& options() const = 0;
  // Text <-> tokens with the model's own tokenizer. add_special adds BOS where the model
  // wants one (the first turn of a conversation); special tokens in the text (a chat
  // template's markers) are parsed as such.
  virtual std::vector<Token> tokenize(const std::string& text, bool add_special) const = 0;
  virtual std::string token_to_piece(Token token) const = 0;
  virtual bool is_end_of_generation(Token token) const = 0;
  virtual int32_t n_vocab() const = 0;
  // The vocabulary entry's own text (special tokens included), "" when the engine cannot
  // say: how fidelity checks that a reference shares the model's vocabulary.
  virtual std::string token_text(Token token) const {
    (void)token;
    return "";
  }
  virtual Token bos_token() const = 0;  // -1 when the vocabulary has none
  virtual bool adds_bos() const = 0;
  virtual std::string description() const = 0;
  virtual uint64_t size_bytes() const = 0;
  virtual uint64_t n_params() const = 0;
  virtual std::string chat_template() const = 0;  // "" when the model has none
  // Where the load put the model: devices, layers offloaded, model buffers (no graphs).
  virtual Placement placement() const { return {}; }
  // The placement with a context like `options` made, and, from an untimed pass, the
  // backend of each node of a prefill of `n_prompt` tokens (none when 0) and of one decode
  // step. nullopt when the engine cannot tell.
  virtual std::optional<Placement> probe_placement(const ContextOptions& options, int n_prompt) const {
    (void)options;
    (void)n_prompt;
    return std::nullopt;
  }

  // Formats a conversation with the model's chat template; a model without one (or with
  // one the engine cannot apply) gets plain_chat_text, and `used_fallback` says so.
  virtual std::string apply_chat_template(const std::vector<ChatMessage>& messages, bool add_assistant,
                                          bool* used_fallback = nullptr) const = 0;

  // Throws Error(kBadInput) for options the engine refuses, kEnvironment when it fails.
  virtual std::unique_ptr<Context> new_context(const ContextOptions& options) const = 0;
  // The request level. By default a context of its own that tokenizes the prompt (BOS
  // added as the model wants), prefills, and decodes greedily, one delta per token:
  // what llama-server does for a request, without the server.
  virtual std::unique_ptr<Completer> new_completer(const ContextOptions& options) const;
};

// One sequence's KV cache and the compute behind it. Every call returns when its work is
// done, so a timing taken around it is real.
class Context {
 public:
  virtual ~Context() = default;

  // Prefill: decodes the tokens (positions continue from what the cache holds);
  // logits_for_last asks for what argmax_last needs next. Throws Error(kEnvironment) on a
  // failure, e.g. a full cache.
  virtual void decode(const std::vector<Token>& tokens, bool logits_for_last = false) = 0;
  // One generation step.
  virtual void decode_one(Token token) = 0;
  virtual void clear() = 0;  // empties the KV cache
  virtual int32_t n_ctx() const = 0;
  virtual int32_t n_past() const = 0;  // tokens in the cache
  // Greedy pick from the logits of the last decoded token.
  virtual Token argmax_last() const = 0;

  // Scoring, as llama-perplexity does it: empties the cache, decodes `tokens` as n_seqs
  // sequences of equal length L (each its own sequence from position 0; the context made
  // with ContextOptions::n_seqs >= n_seqs) and keeps the logits of every position from
  // `first` on. Returns them, sequence by sequence: row s * (L - first) + r (n_vocab floats)
  // for position first + r of sequence s, valid until the next call on this context; null
  // when the engine cannot (Capabilities::logits).
  virtual const float* decode_scoring(const std::vector<Token>& tokens, int first, int n_seqs = 1) {
    (void)tokens;
    (void)first;
    (void)n_seqs;
    return nullptr;
  }

  // Speculative verification: decodes `tokens` after what the cache holds, in one batch
  // (split only past n_batch), and returns the greedy pick after each of them: element i
  // is the token that follows tokens[0..i]. Empty when the engine cannot
  // (Capabilities::speculative).
  virtual std::vector<Token> decode_greedy_all(const std::vector<Token>& tokens) {
    (void)tokens;
    return {};
  }
  // Keeps the first n_keep positions of the cache and drops the rest (a draft's rejected
  // tokens); false when the engine cannot (Capabilities::speculative).
  virtual bool truncate(int32_t n_keep) {
    (void)n_keep;
    return false;
  }

  // Drops n_discard tokens after the first n_keep and moves the rest down, as llama.cpp's
  // context shift does; false when the engine cannot (Capabilities::context_shift).
  virtual bool shift(int n_keep, int n_discard) = 0;

  // Snapshot of the cache, and its restore (to reuse a depth fill across repetitions, or
  // hand a cache to another process); empty / false when the engine cannot
  // (Capabilities::kv_state). restore_state replaces what the cache held.
  virtual std::vector<uint8_t> save_state() const = 0;
  virtual bool restore_state(const std::vector<uint8_t>& state) = 0;

  // The cache from position `from` on, and its append: restore_tail replaces what this
  // cache holds from `from` on with the tail, keeping the positions before it (a peer
  // that prefilled a later turn sends only that turn's cells). Empty / false when the
  // engine or the context cannot (Capabilities::kv_tail, ContextOptions::tail_states).
  virtual std::vector<uint8_t> save_tail(int32_t from) const {
    (void)from;
    return {};
  }
  virtual bool restore_tail(const std::vector<uint8_t>& tail, int32_t from) {
    (void)tail;
    (void)from;
    return false;
  }
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;
  virtual Capabilities capabilities() const = 0;
  // The engine object of a result's provenance: {"name", "kind", ...what it is built of}.
  virtual nlohmann::json provenance() const = 0;
  // Throws Error(kBadInput) for a file the engine cannot load (with the engine's own
  // reason), Error(kEnvironment) when something around it is missing.
  virtual std::unique_ptr<LoadedModel> load(const ModelOptions& options) = 0;
};

// "role: content" lines, ending "assistant: " when add_assistant: the rendering for a
// model without a usable chat template.
std::string plain_chat_text(const std::vector<ChatMessage>& messages, bool add_assistant);

// "0x3", "3", "ff" -> one flag per CPU (lowest bit = CPU 0); throws kBadInput.
std::vector<bool> parse_cpu_mask(const std::string& hex);
// The most CPUs a mask may name (ggml's GGML_MAX_N_THREADS).
inline constexpr int kMaxCpus = 512;

}  // namespace edgeprobe::engine
