#include "engine/llama_engine.h"

#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <llama.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "core/error.h"
#include "engine/backend.h"

namespace edgeprobe::engine {
namespace {

// The first error line llama.cpp logged since `mark` (a log size), to explain a null
// return: the first one names the cause ("unknown model architecture: 'x'"), the later
// ones only say that loading failed. Function-name prefixes are dropped.
std::string first_llama_error_since(size_t mark) {
  const auto log = captured_log();
  for (size_t i = mark; i < log.size(); ++i) {
    if (log[i].level != GGML_LOG_LEVEL_ERROR) continue;
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

}  // namespace

std::unique_ptr<Model> Model::load(const ModelOptions& options) {
  load_cpu_backend();  // no-op when already loaded; the best variant otherwise
  llama_model_params params = llama_model_default_params();
  params.n_gpu_layers = 0;
  params.load_mode = options.use_mmap ? LLAMA_LOAD_MODE_MMAP : LLAMA_LOAD_MODE_NONE;
  params.use_extra_bufts = options.use_repack;
  const size_t mark = captured_log().size();
  llama_model* model = llama_model_load_from_file(options.path.c_str(), params);
  if (!model) {
    const std::string why = first_llama_error_since(mark);
    throw_bad_input("llama.cpp could not load '{}'{}{}", options.path, why.empty() ? "" : ": ", why);
  }
  return std::unique_ptr<Model>(new Model(model, options));
}

Model::~Model() { llama_model_free(model_); }

const llama_vocab* Model::vocab() const { return llama_model_get_vocab(model_); }
int32_t Model::n_vocab() const { return llama_vocab_n_tokens(vocab()); }
int32_t Model::bos_token() const { return llama_vocab_bos(vocab()); }
bool Model::adds_bos() const { return llama_vocab_get_add_bos(vocab()); }
uint64_t Model::size_bytes() const { return llama_model_size(model_); }
uint64_t Model::n_params() const { return llama_model_n_params(model_); }

std::string Model::description() const {
  char buf[256];
  llama_model_desc(model_, buf, sizeof(buf));
  return buf;
}

std::string Model::chat_template() const {
  const char* t = llama_model_chat_template(model_, nullptr);
  return t ? t : "";
}

std::vector<int32_t> Model::tokenize(const std::string& text, bool add_special) const {
  std::vector<int32_t> tokens(text.size() + 8);
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

std::string Model::token_to_piece(int32_t token) const {
  char buf[256];
  const int32_t n = llama_token_to_piece(vocab(), token, buf, sizeof(buf), 0, false);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

bool Model::is_end_of_generation(int32_t token) const { return llama_vocab_is_eog(vocab(), token); }

std::string apply_chat_template(const Model& model, const std::vector<ChatMessage>& messages, bool add_assistant,
                                bool* used_fallback) {
  std::vector<llama_chat_message> chat;
  for (const auto& m : messages) chat.push_back({m.role.c_str(), m.content.c_str()});
  const std::string tmpl = model.chat_template();
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
  std::string text;
  for (const auto& m : messages) text += m.role + ": " + m.content + "\n";
  if (add_assistant) text += "assistant: ";
  return text;
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

std::vector<bool> parse_cpu_mask(const std::string& text) {
  std::string hex = text;
  if (hex.starts_with("0x") || hex.starts_with("0X")) hex = hex.substr(2);
  if (hex.empty() || hex.size() > GGML_MAX_N_THREADS / 4)
    throw_bad_input("invalid CPU mask '{}': expected a hex number such as 0x3", text);
  std::vector<bool> mask(hex.size() * 4, false);
  for (size_t i = 0; i < hex.size(); ++i) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(hex[hex.size() - 1 - i])));
    int v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else throw_bad_input("invalid CPU mask '{}': '{}' is not a hex digit", text, c);
    for (int b = 0; b < 4; ++b) mask[i * 4 + b] = (v >> b) & 1;
  }
  if (std::none_of(mask.begin(), mask.end(), [](bool b) { return b; }))
    throw_bad_input("CPU mask '{}' selects no CPU", text);
  return mask;
}

Context::Context(const Model& model, const ContextOptions& o) : model_(model), n_batch_(o.n_batch) {
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
  const size_t mark = captured_log().size();
  ctx_ = llama_init_from_model(model.raw(), params);
  if (!ctx_) {
    const std::string why = first_llama_error_since(mark);
    throw_bad_input("llama.cpp could not create a context{}{}", why.empty() ? "" : ": ", why);
  }

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

Context::~Context() {
  llama_free(ctx_);
  if (threadpool_) {
    using FreeFn = void (*)(ggml_threadpool*);
    if (auto free_fn = reinterpret_cast<FreeFn>(ggml_backend_reg_get_proc_address(cpu_reg(), "ggml_threadpool_free")))
      free_fn(threadpool_);
  }
}

void Context::decode(const std::vector<int32_t>& tokens, bool logits_for_last) {
  (void)logits_for_last;  // llama_batch_get_one outputs the last token's logits
  for (size_t i = 0; i < tokens.size(); i += static_cast<size_t>(n_batch_)) {
    const auto n = static_cast<int32_t>(std::min(tokens.size() - i, static_cast<size_t>(n_batch_)));
    llama_batch batch = llama_batch_get_one(const_cast<int32_t*>(tokens.data() + i), n);
    if (const int rc = llama_decode(ctx_, batch); rc != 0) {
      throw_environment("llama_decode failed (code {}) at position {}{}", rc, n_past(),
                        rc == 1 ? ": the KV cache is full; use a larger context" : "");
    }
  }
  llama_synchronize(ctx_);
}

void Context::decode_one(int32_t token) {
  llama_batch batch = llama_batch_get_one(&token, 1);
  if (const int rc = llama_decode(ctx_, batch); rc != 0) {
    throw_environment("llama_decode failed (code {}) at position {}{}", rc, n_past(),
                      rc == 1 ? ": the KV cache is full; use a larger context" : "");
  }
  llama_synchronize(ctx_);
}

bool Context::shift(int n_keep, int n_discard) {
  llama_memory_t mem = llama_get_memory(ctx_);
  if (!llama_memory_can_shift(mem)) return false;
  const int n_past_now = n_past();
  llama_memory_seq_rm(mem, 0, n_keep, n_keep + n_discard);
  llama_memory_seq_add(mem, 0, n_keep + n_discard, n_past_now, -n_discard);
  return true;
}

void Context::clear() { llama_memory_clear(llama_get_memory(ctx_), false); }
int32_t Context::n_ctx() const { return static_cast<int32_t>(llama_n_ctx(ctx_)); }
int32_t Context::n_past() const { return llama_memory_seq_pos_max(llama_get_memory(ctx_), 0) + 1; }

int32_t Context::argmax_last() const {
  const float* logits = llama_get_logits_ith(ctx_, -1);
  if (!logits) return 0;
  const int32_t n = model_.n_vocab();
  return static_cast<int32_t>(std::max_element(logits, logits + n) - logits);
}

std::vector<uint8_t> Context::save_state() const {
  std::vector<uint8_t> buf(llama_state_seq_get_size(ctx_, 0));
  const size_t n = llama_state_seq_get_data(ctx_, buf.data(), buf.size(), 0);
  buf.resize(n);
  return buf;
}

bool Context::restore_state(const std::vector<uint8_t>& state) {
  clear();
  return llama_state_seq_set_data(ctx_, state.data(), state.size(), 0) != 0;
}

}  // namespace edgeprobe::engine
