#include "engine/llama_engine.h"

#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <llama.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/stop_token.h"
#include "engine/llama_placement.h"
#include "edgeprobe_version.h"

namespace edgeprobe::engine {
namespace {

static_assert(kMaxCpus == GGML_MAX_N_THREADS, "a CPU mask holds one flag per ggml thread slot");

// The first error line llama.cpp logged since `mark` (a log size), to explain a null
// return: the first one names the cause ("unknown model architecture: 'x'"), the later
// ones only say that loading failed. Function-name prefixes are dropped.
std::string first_llama_error_since(size_t mark) {
  const auto log = captured_log();
  for (size_t i = mark; i < log.size(); ++i) {
    if (log[i].level != LogLevel::kError) continue;
    std::string text = log[i].text;
    for (const char* prefix : {"error loading model: ", ": "}) {
      if (const auto at = text.find(prefix); at != std::string::npos) {
        text = text.substr(at + std::strlen(prefix));
        break;
      }
    }
    return text;
  }
  return "";
}

ggml_backend_reg_t cpu_reg() {
  ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
  if (!dev) throw_environment("the ggml CPU backend is not loaded");
  return ggml_backend_dev_backend_reg(dev);
}

[[noreturn]] void throw_decode_failure(int rc, int n_past) {
  throw_environment("llama_decode failed (code {}) at position {}{}", rc, n_past,
                    rc == 1   ? ": the KV cache is full; use a larger context"
                    : rc == 2 ? ": aborted (stopped at once)"
                              : "");
}

class LlamaModel;

// A context with its own ggml threadpool, exactly like llama-bench. Every decode ends
// with llama_synchronize so a timing taken around it is real.
class LlamaContext : public Context {
 public:
  LlamaContext(const LlamaModel& model, llama_model* raw_model, const ContextOptions& options,
               NodeTally* tally = nullptr);
  ~LlamaContext() override;
  LlamaContext(const LlamaContext&) = delete;
  LlamaContext& operator=(const LlamaContext&) = delete;

  void decode(const std::vector<Token>& tokens, bool logits_for_last) override;
  void decode_one(Token token) override;
  void clear() override { llama_memory_clear(llama_get_memory(ctx_), false); }
  int32_t n_ctx() const override { return static_cast<int32_t>(llama_n_ctx(ctx_)); }
  int32_t n_past() const override { return llama_memory_seq_pos_max(llama_get_memory(ctx_), 0) + 1; }
  Token argmax_last() const override;
  const float* decode_scoring(const std::vector<Token>& tokens, int first, int n_seqs) override;
  std::vector<Token> decode_greedy_all(const std::vector<Token>& tokens) override;
  bool truncate(int32_t n_keep) override;
  bool shift(int n_keep, int n_discard) override;
  std::vector<uint8_t> save_state() const override;
  bool restore_state(const std::vector<uint8_t>& state) override;
  std::vector<uint8_t> save_tail(int32_t from) const override;
  bool restore_tail(const std::vector<uint8_t>& tail, int32_t from) override;

 private:
  static constexpr llama_seq_id kScratchSeq = 1;  // a tail passes through it (tail_states)
  const LlamaModel& model_;
  bool tail_states_ = false;
  llama_context* ctx_ = nullptr;
  ggml_threadpool* threadpool_ = nullptr;
  int n_batch_;
  std::vector<float> scored_;  // decode_scoring's rows when they took several batches
  int n_seq_max_ = 1;
};

class LlamaModel : public LoadedModel {
 public:
  LlamaModel(llama_model* model, ModelOptions options, Placement placement)
      : model_(model), options_(std::move(options)), placement_(std::move(placement)) {}
  ~LlamaModel() override { llama_model_free(model_); }
  LlamaModel(const LlamaModel&) = delete;
  LlamaModel& operator=(const LlamaModel&) = delete;

  const ModelOptions& options() const override { return options_; }
  std::vector<Token> tokenize(const std::string& text, bool add_special) const override;
  std::string token_to_piece(Token token) const override;
  bool is_end_of_generation(Token token) const override { return llama_vocab_is_eog(vocab(), token); }
  int32_t n_vocab() const override { return llama_vocab_n_tokens(vocab()); }
  std::string token_text(Token token) const override {
    if (token < 0 || token >= n_vocab()) return "";
    const char* t = llama_vocab_get_text(vocab(), token);
    return t ? t : "";
  }
  Token bos_token() const override { return llama_vocab_bos(vocab()); }
  bool adds_bos() const override { return llama_vocab_get_add_bos(vocab()); }
  std::string description() const override;
  uint64_t size_bytes() const override { return llama_model_size(model_); }
  uint64_t n_params() const override { return llama_model_n_params(model_); }
  std::string chat_template() const override;
  std::string apply_chat_template(const std::vector<ChatMessage>& messages, bool add_assistant,
                                  bool* used_fallback) const override;
  std::unique_ptr<Context> new_context(const ContextOptions& options) const override {
    return std::make_unique<LlamaContext>(*this, model_, options);
  }
  Placement placement() const override { return placement_; }
  std::optional<Placement> probe_placement(const ContextOptions& options, int n_prompt) const override;

 private:
  const llama_vocab* vocab() const { return llama_model_get_vocab(model_); }
  llama_model* model_;
  ModelOptions options_;
  Placement placement_;
};

// A context of its own with the node tally on: the context's log lines (buffers, graph
// splits), then a prefill of n_prompt tokens (at most one physical batch: the graph of
// every later batch is the same) and one decode step, each tallied apart.
std::optional<Placement> LlamaModel::probe_placement(const ContextOptions& options, int n_prompt) const {
  Placement p = placement_;
  NodeTally tally;
  const size_t mark = captured_log().size();
  LlamaContext ctx(*this, model_, options, &tally);
  read_placement_lines(captured_log(), mark, p);
  const int n_ctx = ctx.n_ctx();
  const int n_tokens = std::clamp(std::min(n_prompt, options.n_ubatch), 0, std::max(0, n_ctx - 2));
  const Token token = bos_token() >= 0 ? bos_token() : 0;
  if (n_tokens > 0) {
    ctx.decode(std::vector<Token>(static_cast<size_t>(n_tokens), token), true);
    p.prefill = tally.result(n_tokens);
    tally = NodeTally{};
  }
  ctx.decode_one(token);
  p.decode = tally.result(1);
  return p;
}

std::vector<Token> LlamaModel::tokenize(const std::string& text, bool add_special) const {
  std::vector<Token> tokens(text.size() + 8);
  int32_t n = llama_tokenize(vocab(), text.data(), static_cast<int32_t>(text.size()), tokens.data(),
                             static_cast<int32_t>(tokens.size()), add_special, true);
  if (n < 0) {
    tokens.resize(static_cast<size_t>(-n));
    n = llama_tokenize(vocab(), text.data(), static_cast<int32_t>(text.size()), tokens.data(),
                       static_cast<int32_t>(tokens.size()), add_special, true);
  }
  if (n < 0) throw_environment("llama.cpp could not tokenize a prompt of {} bytes", text.size());
  tokens.resize(static_cast<size_t>(n));
  return tokens;
}

std::string LlamaModel::token_to_piece(Token token) const {
  char buf[256];
  const int32_t n = llama_token_to_piece(vocab(), token, buf, sizeof(buf), 0, false);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

std::string LlamaModel::description() const {
  char buf[256];
  llama_model_desc(model_, buf, sizeof(buf));
  return buf;
}

std::string LlamaModel::chat_template() const {
  const char* t = llama_model_chat_template(model_, nullptr);
  return t ? t : "";
}

// llama_chat_apply_template knows llama.cpp's built-in templates; one it does not know
// falls back to plain text.
std::string LlamaModel::apply_chat_template(const std::vector<ChatMessage>& messages, bool add_assistant,
                                            bool* used_fallback) const {
  std::vector<llama_chat_message> chat;
  for (const auto& m : messages) chat.push_back({m.role.c_str(), m.content.c_str()});
  const std::string tmpl = chat_template();
  if (!tmpl.empty()) {
    std::vector<char> buf(4096);
    int32_t n = llama_chat_apply_template(tmpl.c_str(), chat.data(), chat.size(), add_assistant, buf.data(),
                                          static_cast<int32_t>(buf.size()));
    if (n > static_cast<int32_t>(buf.size())) {
      buf.resize(static_cast<size_t>(n));
      n = llama_chat_apply_template(tmpl.c_str(), chat.data(), chat.size(), add_assistant, buf.data(),
                                    static_cast<int32_t>(buf.size()));
    }
    if (n >= 0) {
      if (used_fallback) *used_fallback = false;
      return std::string(buf.data(), static_cast<size_t>(n));
    }
  }
  if (used_fallback) *used_fallback = true;
  return plain_chat_text(messages, add_assistant);
}

LlamaContext::LlamaContext(const LlamaModel& model, llama_model* raw_model, const ContextOptions& o,
                           NodeTally* tally)
    : model_(model), tail_states_(o.tail_states), n_batch_(o.n_batch) {
  if (o.n_threads < 1 || o.n_threads > GGML_MAX_N_THREADS) throw_bad_input("thread count {} out of range", o.n_threads);
  if (o.n_batch < 1 || o.n_ubatch < 1) throw_bad_input("batch sizes must be positive (got -b {} -ub {})", o.n_batch, o.n_ubatch);
  if (o.poll < 0 || o.poll > 100) throw_bad_input("--poll {} out of range 0..100", o.poll);
  llama_context_params params = llama_context_default_params();
  params.n_ctx = static_cast<uint32_t>(o.n_ctx);
  params.n_batch = static_cast<uint32_t>(o.n_batch);
  params.n_ubatch = static_cast<uint32_t>(o.n_ubatch);
  params.n_threads = o.n_threads;
  params.n_threads_batch = o.n_threads;
  params.type_k = static_cast<ggml_type>(parse_cache_type(o.type_k));
  params.type_v = static_cast<ggml_type>(parse_cache_type(o.type_v));
  params.flash_attn_type = o.flash_attn < 0 ? LLAMA_FLASH_ATTN_TYPE_AUTO
                           : o.flash_attn == 0 ? LLAMA_FLASH_ATTN_TYPE_DISABLED
                                               : LLAMA_FLASH_ATTN_TYPE_ENABLED;
  params.no_perf = true;
  params.op_offload = o.op_offload;
  if (tally) {
    params.cb_eval = &NodeTally::on_node;
    params.cb_eval_user_data = tally;
  }
  if (o.tail_states) {
    // One unified cache for both sequences: a scratch sequence's cells can then be
    // shared with the real one (llama_memory_seq_cp), which is how a tail is cut and
    // appended: llama.cpp saves and restores whole sequences only.
    params.n_seq_max = 2;
    params.kv_unified = true;
  }
  if (o.n_seqs > 1 && !o.tail_states)
    params.n_seq_max = static_cast<uint32_t>(o.n_seqs);  // a cache split per sequence
  n_seq_max_ = static_cast<int>(params.n_seq_max);
  const size_t mark = captured_log().size();
  ctx_ = llama_init_from_model(raw_model, params);
  if (!ctx_) {
    const std::string why = first_llama_error_since(mark);
    throw_bad_input("llama.cpp could not create a context{}{}", why.empty() ? "" : ": ", why);
  }
  // A second Ctrl-C aborts the graph in flight: llama_decode then returns 2 (aborted).
  llama_set_abort_callback(ctx_, [](void*) { return process_stop_now_requested(); }, nullptr);
  // llama.cpp caps the batch at the context size (-b 512 with -c 64 runs batches of 64);
  // a prompt is split at the cap it took, or llama_decode aborts the process.
  n_batch_ = static_cast<int>(llama_n_batch(ctx_));

  // Our own threadpool, exactly like llama-bench, so that -C/--cpu-strict/--poll apply.
  ggml_backend_reg_t reg = cpu_reg();
  using NewFn = ggml_threadpool* (*)(ggml_threadpool_params*);
  auto threadpool_new = reinterpret_cast<NewFn>(ggml_backend_reg_get_proc_address(reg, "ggml_threadpool_new"));
  if (!threadpool_new) {
    llama_free(ctx_);
    throw_environment("the loaded ggml CPU backend has no ggml_threadpool_new");
  }
  ggml_threadpool_params tpp = ggml_threadpool_params_default(o.n_threads);
  for (size_t i = 0; i < o.cpu_mask.size() && i < GGML_MAX_N_THREADS; ++i) tpp.cpumask[i] = o.cpu_mask[i];
  tpp.strict_cpu = o.cpu_strict;
  tpp.poll = static_cast<uint32_t>(o.poll);
  threadpool_ = threadpool_new(&tpp);
  if (!threadpool_) {
    llama_free(ctx_);
    throw_environment("ggml could not create a threadpool of {} threads", o.n_threads);
  }
  llama_attach_threadpool(ctx_, threadpool_, nullptr);
}

LlamaContext::~LlamaContext() {
  llama_free(ctx_);
  if (threadpool_) {
    using FreeFn = void (*)(ggml_threadpool*);
    if (auto free_fn = reinterpret_cast<FreeFn>(ggml_backend_reg_get_proc_address(cpu_reg(), "ggml_threadpool_free")))
      free_fn(threadpool_);
  }
}

void LlamaContext::decode(const std::vector<Token>& tokens, bool logits_for_last) {
  (void)logits_for_last;  // llama_batch_get_one outputs the last token's logits anyway
  for (size_t i = 0; i < tokens.size(); i += static_cast<size_t>(n_batch_)) {
    const auto n = static_cast<int32_t>(std::min(tokens.size() - i, static_cast<size_t>(n_batch_)));
    llama_batch batch = llama_batch_get_one(const_cast<Token*>(tokens.data() + i), n);
    if (const int rc = llama_decode(ctx_, batch); rc != 0) throw_decode_failure(rc, n_past());
  }
  llama_synchronize(ctx_);
}

void LlamaContext::decode_one(Token token) {
  llama_batch batch = llama_batch_get_one(&token, 1);
  if (const int rc = llama_decode(ctx_, batch); rc != 0) throw_decode_failure(rc, n_past());
  llama_synchronize(ctx_);
}

// Sequences side by side, positions 0.. each, outputs from `first` on: the batches
// llama-perplexity's --kl-divergence builds for n_batch / n_ctx chunks. With one batch the
// rows are llama.cpp's own output buffer (no copy); with several they are gathered, as
// llama-perplexity gathers them.
const float* LlamaContext::decode_scoring(const std::vector<Token>& tokens, int first, int n_seqs) {
  const int total = static_cast<int>(tokens.size());
  if (n_seqs < 1 || total % n_seqs != 0)
    throw_bad_input("{} tokens do not split into {} sequences", total, n_seqs);
  const int len = total / n_seqs;
  if (first < 0 || first >= len) throw_bad_input("scored positions from {} of {} tokens", first, len);
  if (n_seqs > n_seq_max_) throw_bad_input("{} sequences in a context made for {}", n_seqs, n_seq_max_);
  llama_memory_clear(llama_get_memory(ctx_), true);
  const size_t n_vocab = static_cast<size_t>(model_.n_vocab());
  const int n_batches = (total + n_batch_ - 1) / n_batch_;
  scored_.clear();
  if (n_batches > 1)
    scored_.reserve(static_cast<size_t>(n_seqs) * static_cast<size_t>(len - first) * n_vocab);
  llama_batch batch = llama_batch_init(std::min(total, n_batch_), 0, 1);
  for (int start = 0; start < total; start += n_batch_) {
    const int size = std::min(total - start, n_batch_);
    int n_outputs = 0;
    batch.n_tokens = size;
    for (int k = 0; k < size; ++k) {
      const int t = start + k, pos = t % len;
      batch.token[k] = tokens[static_cast<size_t>(t)];
      batch.pos[k] = pos;
      batch.n_seq_id[k] = 1;
      batch.seq_id[k][0] = t / len;
      batch.logits[k] = pos >= first ? 1 : 0;
      n_outputs += pos >= first ? 1 : 0;
    }
    if (const int rc = llama_decode(ctx_, batch); rc != 0) {
      llama_batch_free(batch);
      throw_decode_failure(rc, start);
    }
    if (n_batches > 1 && n_outputs > 0) {
      const float* rows = llama_get_logits(ctx_);
      scored_.insert(scored_.end(), rows, rows + static_cast<size_t>(n_outputs) * n_vocab);
    }
  }
  llama_batch_free(batch);
  llama_synchronize(ctx_);
  return n_batches > 1 ? scored_.data() : llama_get_logits(ctx_);
}

// One batch on sequence 0 from the cache's end, logits for every token; a batch longer
// than n_batch goes in pieces (a draft is rarely that long).
std::vector<Token> LlamaContext::decode_greedy_all(const std::vector<Token>& tokens) {
  std::vector<Token> picks;
  picks.reserve(tokens.size());
  const int total = static_cast<int>(tokens.size());
  const int32_t n_vocab = model_.n_vocab();
  llama_batch batch = llama_batch_init(std::min(std::max(total, 1), n_batch_), 0, 1);
  for (int start = 0; start < total; start += n_batch_) {
    const int size = std::min(total - start, n_batch_);
    const int pos0 = n_past();
    batch.n_tokens = size;
    for (int k = 0; k < size; ++k) {
      batch.token[k] = tokens[static_cast<size_t>(start + k)];
      batch.pos[k] = pos0 + k;
      batch.n_seq_id[k] = 1;
      batch.seq_id[k][0] = 0;
      batch.logits[k] = 1;
    }
    if (const int rc = llama_decode(ctx_, batch); rc != 0) {
      llama_batch_free(batch);
      throw_decode_failure(rc, pos0);
    }
    for (int k = 0; k < size; ++k) {
      const float* row = llama_get_logits_ith(ctx_, k);
      picks.push_back(row ? static_cast<Token>(std::max_element(row, row + n_vocab) - row) : 0);
    }
  }
  llama_batch_free(batch);
  llama_synchronize(ctx_);
  return picks;
}

bool LlamaContext::truncate(int32_t n_keep) {
  if (n_keep < 0) return false;
  return llama_memory_seq_rm(llama_get_memory(ctx_), 0, n_keep, -1);
}

bool LlamaContext::shift(int n_keep, int n_discard) {
  llama_memory_t mem = llama_get_memory(ctx_);
  if (!llama_memory_can_shift(mem)) return false;
  const int n_past_now = n_past();
  llama_memory_seq_rm(mem, 0, n_keep, n_keep + n_discard);
  llama_memory_seq_add(mem, 0, n_keep + n_discard, n_past_now, -n_discard);
  return true;
}

Token LlamaContext::argmax_last() const {
  const float* logits = llama_get_logits_ith(ctx_, -1);
  if (!logits) return 0;
  const int32_t n = model_.n_vocab();
  return static_cast<Token>(std::max_element(logits, logits + n) - logits);
}

std::vector<uint8_t> LlamaContext::save_state() const {
  std::vector<uint8_t> buf(llama_state_seq_get_size(ctx_, 0));
  const size_t n = llama_state_seq_get_data(ctx_, buf.data(), buf.size(), 0);
  buf.resize(n);
  return buf;
}

bool LlamaContext::restore_state(const std::vector<uint8_t>& state) {
  clear();
  return llama_state_seq_set_data(ctx_, state.data(), state.size(), 0) != 0;
}

// The cells from `from` on join the scratch sequence, which llama.cpp then saves whole.
std::vector<uint8_t> LlamaContext::save_tail(int32_t from) const {
  if (!tail_states_ || from < 0 || from >= n_past()) return {};
  llama_memory_t mem = llama_get_memory(ctx_);
  llama_memory_seq_rm(mem, kScratchSeq, -1, -1);
  llama_memory_seq_cp(mem, 0, kScratchSeq, from, -1);
  std::vector<uint8_t> buf(llama_state_seq_get_size(ctx_, kScratchSeq));
  buf.resize(llama_state_seq_get_data(ctx_, buf.data(), buf.size(), kScratchSeq));
  llama_memory_seq_rm(mem, kScratchSeq, -1, -1);
  return buf;
}

// The tail is restored into the scratch sequence, its cells are shared with the real one,
// and the scratch sequence lets go of them; the tail must start right where this cache,
// cut at `from`, ends.
bool LlamaContext::restore_tail(const std::vector<uint8_t>& tail, int32_t from) {
  if (!tail_states_ || from < 0 || from > n_past()) return false;
  llama_memory_t mem = llama_get_memory(ctx_);
  llama_memory_seq_rm(mem, 0, from, -1);
  llama_memory_seq_rm(mem, kScratchSeq, -1, -1);
  if (llama_state_seq_set_data(ctx_, tail.data(), tail.size(), kScratchSeq) == 0) return false;
  const bool joins = llama_memory_seq_pos_min(mem, kScratchSeq) == from;
  if (joins) llama_memory_seq_cp(mem, kScratchSeq, 0, -1, -1);
  llama_memory_seq_rm(mem, kScratchSeq, -1, -1);
  return joins;
}

}  // namespace

Capabilities LlamaEngine::capabilities() const {
  Capabilities c;
  c.kv_state = true;
  c.kv_tail = true;
  c.context_shift = true;  // for attention caches; shift() says false for a recurrent model
  c.cpu_placement = true;
  c.per_token_timing = true;
  c.logits = true;
  c.speculative = true;
  return c;
}

nlohmann::json LlamaEngine::provenance() const {
  nlohmann::json features = nlohmann::json::object();
  for (const auto& [key, value] : backend_.features) features[key] = value;
  nlohmann::json j = {{"name", name()},
          {"kind", "in-process"},
          {"version", kLlamaCppVersion},
          {"commit", kLlamaCppCommit},
          {"cpu_variant", backend_.variant},
          {"cpu_variant_library", backend_.library_path},
          {"cpu_variant_features", features},
          {"backends", registered_backends()},
          {"capabilities", capabilities().to_json()}};
  if (!backend_.passed_over.empty()) j["details"]["cpu_variants_passed_over"] = backend_.passed_over;
  return j;
}

namespace {

// -dev as llama-bench takes it: "" = llama.cpp's choice (nullptr), "none" = no GPU (an
// empty list), else device names joined by '/'. The list ends with nullptr.
std::vector<ggml_backend_dev_t> parse_devices(const std::string& text) {
  std::vector<ggml_backend_dev_t> devices;
  if (text != "none") {
    size_t start = 0;
    while (start <= text.size()) {
      const size_t end = std::min(text.find('/', start), text.size());
      const std::string name = text.substr(start, end - start);
      ggml_backend_dev_t dev = ggml_backend_dev_by_name(name.c_str());
      if (!dev || ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_CPU) {
        std::string known;
        for (size_t i = 0; i < ggml_backend_dev_count(); ++i) {
          ggml_backend_dev_t d = ggml_backend_dev_get(i);
          if (ggml_backend_dev_type(d) != GGML_BACKEND_DEVICE_TYPE_CPU) known += std::string(known.empty() ? "" : ", ") + ggml_backend_dev_name(d);
        }
        throw_bad_input("-dev: no GPU device named '{}' here (devices: {}; 'none' runs on the CPU only)", name,
                        known.empty() ? "none: no GPU backend found a device" : known);
      }
      devices.push_back(dev);
      start = end + 1;
    }
  }
  devices.push_back(nullptr);
  return devices;
}

llama_split_mode parse_split_mode(const std::string& text) {
  if (text == "none") return LLAMA_SPLIT_MODE_NONE;
  if (text == "layer") return LLAMA_SPLIT_MODE_LAYER;
  if (text == "row") return LLAMA_SPLIT_MODE_ROW;
  throw_bad_input("-sm: unknown split mode '{}'; use none, layer or row", text);
}

}  // namespace

std::unique_ptr<LoadedModel> LlamaEngine::load(const ModelOptions& options) {
  llama_model_params params = llama_model_default_params();
  params.n_gpu_layers = options.n_gpu_layers;
  params.split_mode = parse_split_mode(options.split_mode);
  params.main_gpu = options.main_gpu;
  std::vector<ggml_backend_dev_t> devices;
  if (!options.devices.empty()) {
    devices = parse_devices(options.devices);
    params.devices = devices.data();
  }
  params.load_mode = options.use_mmap ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
  params.use_extra_bufts = options.use_repack;
  params.vocab_only = options.vocab_only;
  const size_t mark = captured_log().size();
  llama_model* model = llama_model_load_from_file(options.path.c_str(), params);
  if (!model) {
    const std::string why = first_llama_error_since(mark);
    throw_bad_input("llama.cpp could not load '{}'{}{}", options.path, why.empty() ? "" : ": ", why);
  }
  Placement placement;
  read_placement_lines(captured_log(), mark, placement);
  return std::make_unique<LlamaModel>(model, options, std::move(placement));
}

int parse_cache_type(const std::string& name) {
  // The types llama.cpp's KV cache accepts (llama-bench's list, research notes 1.1).
  static const std::pair<const char*, ggml_type> kTypes[] = {
      {"f16", GGML_TYPE_F16},   {"bf16", GGML_TYPE_BF16}, {"q8_0", GGML_TYPE_Q8_0},   {"q4_0", GGML_TYPE_Q4_0},
      {"q4_1", GGML_TYPE_Q4_1}, {"q5_0", GGML_TYPE_Q5_0}, {"q5_1", GGML_TYPE_Q5_1}, {"iq4_nl", GGML_TYPE_IQ4_NL},
      {"f32", GGML_TYPE_F32}};
  for (const auto& [n, t] : kTypes)
    if (name == n) return t;
  throw_bad_input("unsupported KV cache type '{}'; use f16, bf16, f32, q8_0, q4_0, q4_1, q5_0, q5_1 or iq4_nl", name);
}

}  // namespace edgeprobe::engine
