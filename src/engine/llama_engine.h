#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct llama_model;
struct llama_context;
struct llama_vocab;
struct ggml_threadpool;

namespace edgeprobe::engine {

struct ModelOptions {
  std::string path;
  bool use_mmap = true;
  bool use_repack = true;  // llama.cpp's CPU_REPACK extra buffer types
  bool operator==(const ModelOptions&) const = default;
};

// A loaded model. Load failures throw Error(kBadInput) with llama.cpp's own last error
// line, so a user sees "unknown model architecture: 'foo'" rather than a null pointer.
class Model {
 public:
  static std::unique_ptr<Model> load(const ModelOptions& options);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  llama_model* raw() const { return model_; }
  const llama_vocab* vocab() const;
  const ModelOptions& options() const { return options_; }
  int32_t n_vocab() const;
  int32_t bos_token() const;   // -1 when the vocabulary has none
  bool adds_bos() const;
  std::string description() const;
  uint64_t size_bytes() const;
  uint64_t n_params() const;
  std::string chat_template() const;  // "" when the model has none

  // Text <-> tokens with the model's own tokenizer. add_special adds BOS where the
  // model wants one (the first turn of a conversation); special tokens in the text
  // (a chat template's markers) are parsed as such.
  std::vector<int32_t> tokenize(const std::string& text, bool add_special) const;
  std::string token_to_piece(int32_t token) const;
  bool is_end_of_generation(int32_t token) const;

 private:
  Model(llama_model* model, ModelOptions options) : model_(model), options_(std::move(options)) {}
  llama_model* model_;
  ModelOptions options_;
};

struct ContextOptions {
  int n_ctx = 0;  // 0 = from the model
  int n_batch = 2048;
  int n_ubatch = 512;
  int n_threads = 1;
  std::vector<bool> cpu_mask;  // empty = default affinity; else one flag per CPU
  bool cpu_strict = false;
  int poll = 50;
  int flash_attn = -1;  // -1 auto, 0 off, 1 on
  std::string type_k = "f16";
  std::string type_v = "f16";
};

// A context with its own ggml threadpool (so -C/--cpu-strict/--poll apply, as in
// llama-bench). Decode calls are synchronous from the caller's view: each call ends
// with llama_synchronize so a timing taken around it is real.
class Context {
 public:
  Context(const Model& model, const ContextOptions& options);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Decodes tokens in batches of at most n_batch, then synchronizes. Positions continue
  // from what the KV cache holds. Throws Error(kEnvironment) on a decode failure.
  void decode(const std::vector<int32_t>& tokens, bool logits_for_last = false);
  void decode_one(int32_t token);
  void clear();  // empties the KV cache
  int32_t n_ctx() const;
  int32_t n_past() const;  // tokens in the KV cache of sequence 0
  // Greedy pick from the logits of the last decoded token.
  int32_t argmax_last() const;

  // Drops n_discard tokens after the first n_keep and moves the rest down, as
  // llama.cpp's context shift does; false when the memory cannot shift.
  bool shift(int n_keep, int n_discard);

  // Snapshot and restore of sequence 0 (to reuse a depth fill across repetitions).
  std::vector<uint8_t> save_state() const;
  bool restore_state(const std::vector<uint8_t>& state);

  llama_context* raw() const { return ctx_; }

 private:
  const Model& model_;
  llama_context* ctx_ = nullptr;
  ggml_threadpool* threadpool_ = nullptr;
  int n_batch_;
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};
// Formats a conversation with the model's chat template (llama_chat_apply_template, which
// knows llama.cpp's built-in templates); a model without one, or with a template
// llama.cpp does not know, gets a plain "role: content" rendering, and `used_fallback`
// says so.
std::string apply_chat_template(const Model& model, const std::vector<ChatMessage>& messages, bool add_assistant,
                                bool* used_fallback = nullptr);

// "f16", "q8_0", ... -> ggml_type; throws kBadInput for a type the KV cache cannot hold.
int parse_cache_type(const std::string& name);
// "0x3", "3", "ff" -> one flag per CPU (lowest bit = CPU 0); throws kBadInput.
std::vector<bool> parse_cpu_mask(const std::string& hex);

}  // namespace edgeprobe::engine
