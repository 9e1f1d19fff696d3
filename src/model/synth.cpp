#include "model/synth.h"

#include <ggml.h>
#include <gguf.h>
#include <llama.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string_view>

#include "core/error.h"
#include "model/trained.h"

namespace edgeprobe::model {
namespace {

// Token types from llama.h's llama_token_type.
constexpr int32_t kTokenNormal = 1, kTokenUnknown = 2, kTokenControl = 3, kTokenByte = 6;

// A ChatML template: llama_chat_apply_template recognises it by "<|im_start|>".
constexpr const char* kChatTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// splitmix64: tiny, fast, and the same sequence on every platform (std distributions
// are not specified bit-exactly across standard libraries).
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // uniform in [-1, 1)
  float uniform() { return static_cast<float>(static_cast<double>(next() >> 11) * 0x1.0p-53 * 2.0 - 1.0); }
};

const std::map<std::string, llama_ftype>& quant_ftypes() {
  static const std::map<std::string, llama_ftype> types = {
      {"f32", LLAMA_FTYPE_ALL_F32},         {"f16", LLAMA_FTYPE_MOSTLY_F16},
      {"bf16", LLAMA_FTYPE_MOSTLY_BF16},    {"q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},
      {"q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},    {"q5_1", LLAMA_FTYPE_MOSTLY_Q5_1},
      {"q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},    {"q4_1", LLAMA_FTYPE_MOSTLY_Q4_1},
      {"q2_k", LLAMA_FTYPE_MOSTLY_Q2_K},    {"q3_k_s", LLAMA_FTYPE_MOSTLY_Q3_K_S},
      {"q3_k_m", LLAMA_FTYPE_MOSTLY_Q3_K_M}, {"q3_k_l", LLAMA_FTYPE_MOSTLY_Q3_K_L},
      {"q4_k_s", LLAMA_FTYPE_MOSTLY_Q4_K_S}, {"q4_k_m", LLAMA_FTYPE_MOSTLY_Q4_K_M},
      {"q5_k_s", LLAMA_FTYPE_MOSTLY_Q5_K_S}, {"q5_k_m", LLAMA_FTYPE_MOSTLY_Q5_K_M},
      {"q6_k", LLAMA_FTYPE_MOSTLY_Q6_K},    {"iq4_nl", LLAMA_FTYPE_MOSTLY_IQ4_NL},
      // Ternary: the pinned Vulkan backend has no TQ1_0 matmul, so its weights stay on the
      // CPU (the GPU's silent fallback, reproduced for real: docs/gpu.md).
      {"tq1_0", LLAMA_FTYPE_MOSTLY_TQ1_0},  {"tq2_0", LLAMA_FTYPE_MOSTLY_TQ2_0},
  };
  return types;
}

// A vocabulary llama.cpp's SentencePiece tokenizer accepts: special tokens, the 256 byte
// fallback tokens (so any UTF-8 text, Chinese included, tokenizes), then generated
// word pieces. "▁" (U+2581) marks a word start, as in SentencePiece.
SpmVocabulary make_vocab(int64_t n_vocab, uint64_t seed) {
  SpmVocabulary v;
  v.eos_id = 4;  // <|im_end|> ends a ChatML turn
  auto add = [&](std::string text, int32_t type) {
    v.scores.push_back(-static_cast<float>(v.tokens.size()));
    v.tokens.push_back(std::move(text));
    v.types.push_back(type);
  };
  add("<unk>", kTokenUnknown);
  add("<s>", kTokenControl);
  add("</s>", kTokenControl);
  add("<|im_start|>", kTokenControl);
  add("<|im_end|>", kTokenControl);
  for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), kTokenByte);
  const std::string word_start = "\xE2\x96\x81";
  add(word_start, kTokenNormal);
  for (char c = 33; c < 127; ++c) {
    add(std::string(1, c), kTokenNormal);
    add(word_start + std::string(1, c), kTokenNormal);
  }
  // Pronounceable pieces from a fixed syllable table, unique by construction order.
  static const char* kOnsets[] = {"", "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "st", "th", "ch"};
  static const char* kNuclei[] = {"a", "e", "i", "o", "u", "ai", "ea", "ou"};
  static const char* kCodas[] = {"", "n", "r", "s", "t", "l", "m", "nd", "ng", "st"};
  SplitMix64 rng{seed ^ 0x5eedf00dULL};
  std::set<std::string> seen(v.tokens.begin(), v.tokens.end());
  int attempts = 0;
  while (static_cast<int64_t>(v.tokens.size()) < n_vocab) {
    std::string piece;
    const int syllables = 1 + static_cast<int>(rng.next() % 3);
    for (int s = 0; s < syllables; ++s) {
      piece += kOnsets[rng.next() % std::size(kOnsets)];
      piece += kNuclei[rng.next() % std::size(kNuclei)];
      piece += kCodas[rng.next() % std::size(kCodas)];
    }
    if (rng.next() % 2 == 0) piece = word_start + piece;
    if (++attempts > 50 * n_vocab) piece = fmt::format("{}tok{}", word_start, v.tokens.size());
    if (seen.insert(piece).second) add(piece, kTokenNormal);
  }
  return v;
}

struct GgufDeleter {
  void operator()(gguf_context* ctx) const { gguf_free(ctx); }
};
struct GgmlDeleter {
  void operator()(ggml_context* ctx) const { ggml_free(ctx); }
};

void validate(const SynthShape& s) {
  if (s.n_vocab < 512 || s.n_vocab > 1'000'000) throw_bad_input("vocabulary size {} out of range (512..1000000)", s.n_vocab);
  if (s.n_embd < 32 || s.n_embd > 65536 || s.n_layer < 1 || s.n_layer > 512 || s.n_ff < 32 || s.n_ff > 262144)
    throw_bad_input("model dimensions out of range (n_embd 32..65536, n_layer 1..512, n_ff 32..262144)");
  if (s.n_head < 1 || s.n_embd % s.n_head != 0) throw_bad_input("n_embd {} must be a multiple of n_head {}", s.n_embd, s.n_head);
  if (s.n_head_kv < 1 || s.n_head % s.n_head_kv != 0) throw_bad_input("n_head {} must be a multiple of n_head_kv {}", s.n_head, s.n_head_kv);
  if ((s.n_embd / s.n_head) % 2 != 0) throw_bad_input("head dimension {} must be even for RoPE", s.n_embd / s.n_head);
  if (s.n_ctx_train < 64) throw_bad_input("context length {} must be at least 64", s.n_ctx_train);
  if (s.n_expert < 0 || s.n_expert > 256 || s.n_expert == 1)
    throw_bad_input("expert count {} out of range (0 for a dense model, 2..256)", s.n_expert);
  if (s.n_expert > 0 && (s.n_expert_used < 1 || s.n_expert_used > s.n_expert))
    throw_bad_input("experts used per token {} must be 1..{} (the expert count)", s.n_expert_used,
                    s.n_expert);
  if (s.n_expert == 0 && s.n_expert_used != 0)
    throw_bad_input("experts used per token ({}) needs an expert count (--n-expert)", s.n_expert_used);
}

// Writes an f16 (or f32) llama GGUF, streaming one tensor at a time so that even a 7B
// shape needs memory for one tensor only. Without `with_data` the tensor data is a hole
// (the file is extended to its full size, which takes no disk space): enough for readers
// of the header and for llama.cpp's quantizer in dry-run mode, which reads no weights.
// `trained` set: that vocabulary, no chat template, and every output row random (a training
// learns them); unset: the generated vocabulary of synthesized models.
void write_float_model(const SynthShape& s, ggml_type type, uint64_t seed, const std::string& path,
                       bool with_data = true, const SpmVocabulary* trained = nullptr,
                       const std::string& name = "") {
  std::unique_ptr<gguf_context, GgufDeleter> gguf(gguf_init_empty());
  gguf_context* g = gguf.get();
  gguf_set_val_str(g, "general.architecture", "llama");
  gguf_set_val_str(g, "general.name", (name.empty() ? "edgeprobe-synth-" + s.name : name).c_str());
  gguf_set_val_u32(g, "general.file_type", type == GGML_TYPE_F16 ? LLAMA_FTYPE_MOSTLY_F16 : LLAMA_FTYPE_ALL_F32);
  gguf_set_val_u64(g, "edgeprobe.synth.seed", seed);
  gguf_set_val_u32(g, "llama.vocab_size", static_cast<uint32_t>(s.n_vocab));
  gguf_set_val_u32(g, "llama.context_length", static_cast<uint32_t>(s.n_ctx_train));
  gguf_set_val_u32(g, "llama.embedding_length", static_cast<uint32_t>(s.n_embd));
  gguf_set_val_u32(g, "llama.block_count", static_cast<uint32_t>(s.n_layer));
  gguf_set_val_u32(g, "llama.feed_forward_length", static_cast<uint32_t>(s.n_ff));
  gguf_set_val_u32(g, "llama.attention.head_count", static_cast<uint32_t>(s.n_head));
  gguf_set_val_u32(g, "llama.attention.head_count_kv", static_cast<uint32_t>(s.n_head_kv));
  gguf_set_val_u32(g, "llama.rope.dimension_count", static_cast<uint32_t>(s.n_embd / s.n_head));
  gguf_set_val_f32(g, "llama.rope.freq_base", 10000.0f);
  gguf_set_val_f32(g, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
  if (s.n_expert > 0) {  // Mixtral's layout in the llama architecture
    gguf_set_val_u32(g, "llama.expert_count", static_cast<uint32_t>(s.n_expert));
    gguf_set_val_u32(g, "llama.expert_used_count", static_cast<uint32_t>(s.n_expert_used));
  }

  const SpmVocabulary vocab = trained ? *trained : make_vocab(s.n_vocab, seed);
  if (static_cast<int64_t>(vocab.tokens.size()) != s.n_vocab || vocab.scores.size() != vocab.tokens.size() ||
      vocab.types.size() != vocab.tokens.size())
    throw_bad_input("vocabulary of {} tokens does not match the shape's n_vocab {}", vocab.tokens.size(),
                    s.n_vocab);
  std::vector<const char*> token_ptrs;
  for (const auto& t : vocab.tokens) token_ptrs.push_back(t.c_str());
  gguf_set_val_str(g, "tokenizer.ggml.model", "llama");
  gguf_set_arr_str(g, "tokenizer.ggml.tokens", token_ptrs.data(), token_ptrs.size());
  gguf_set_arr_data(g, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, vocab.scores.data(), vocab.scores.size());
  gguf_set_arr_data(g, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, vocab.types.data(), vocab.types.size());
  gguf_set_val_u32(g, "tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(vocab.unk_id));
  gguf_set_val_u32(g, "tokenizer.ggml.bos_token_id", static_cast<uint32_t>(vocab.bos_id));
  gguf_set_val_u32(g, "tokenizer.ggml.eos_token_id", static_cast<uint32_t>(vocab.eos_id));
  gguf_set_val_bool(g, "tokenizer.ggml.add_bos_token", true);
  gguf_set_val_bool(g, "tokenizer.ggml.add_eos_token", false);
  if (!trained) gguf_set_val_str(g, "tokenizer.chat_template", kChatTemplate);

  // Tensor descriptors only (no_alloc): the data is generated and appended below.
  struct Spec {
    std::string name;
    int64_t ne0, ne1;       // ne1 == 0: a 1-D norm weight
    int64_t ne2 = 1;        // experts, for the `*_exps` tensors
    bool keep_f32 = false;  // the router: llama.cpp's quantizer leaves it in f32
  };
  std::vector<Spec> specs;
  const int64_t n_embd_kv = s.n_embd / s.n_head * s.n_head_kv;
  specs.push_back({"token_embd.weight", s.n_embd, s.n_vocab});
  for (int64_t i = 0; i < s.n_layer; ++i) {
    const std::string p = fmt::format("blk.{}.", i);
    specs.push_back({p + "attn_norm.weight", s.n_embd, 0});
    specs.push_back({p + "attn_q.weight", s.n_embd, s.n_embd});
    specs.push_back({p + "attn_k.weight", s.n_embd, n_embd_kv});
    specs.push_back({p + "attn_v.weight", s.n_embd, n_embd_kv});
    specs.push_back({p + "attn_output.weight", s.n_embd, s.n_embd});
    specs.push_back({p + "ffn_norm.weight", s.n_embd, 0});
    if (s.n_expert > 0) {
      specs.push_back({p + "ffn_gate_inp.weight", s.n_embd, s.n_expert, 1, true});
      specs.push_back({p + "ffn_gate_exps.weight", s.n_embd, s.n_ff, s.n_expert});
      specs.push_back({p + "ffn_down_exps.weight", s.n_ff, s.n_embd, s.n_expert});
      specs.push_back({p + "ffn_up_exps.weight", s.n_embd, s.n_ff, s.n_expert});
      continue;
    }
    specs.push_back({p + "ffn_gate.weight", s.n_embd, s.n_ff});
    specs.push_back({p + "ffn_down.weight", s.n_ff, s.n_embd});
    specs.push_back({p + "ffn_up.weight", s.n_embd, s.n_ff});
  }
  specs.push_back({"output_norm.weight", s.n_embd, 0});
  specs.push_back({"output.weight", s.n_embd, s.n_vocab});

  ggml_init_params params{ggml_tensor_overhead() * (specs.size() + 1), nullptr, /*no_alloc=*/true};
  std::unique_ptr<ggml_context, GgmlDeleter> meta(ggml_init(params));
  for (const auto& spec : specs) {
    ggml_tensor* t = spec.ne1 == 0  ? ggml_new_tensor_1d(meta.get(), GGML_TYPE_F32, spec.ne0)
                     : spec.ne2 > 1 ? ggml_new_tensor_3d(meta.get(), type, spec.ne0, spec.ne1, spec.ne2)
                                    : ggml_new_tensor_2d(meta.get(), spec.keep_f32 ? GGML_TYPE_F32 : type,
                                                         spec.ne0, spec.ne1);
    ggml_set_name(t, spec.name.c_str());
    gguf_add_tensor(g, t);
  }

  if (!gguf_write_to_file(g, path.c_str(), /*only_meta=*/true)) throw_environment("cannot write '{}'", path);
  if (!with_data) {
    const int64_t last = gguf_get_n_tensors(g) - 1;
    const size_t data_bytes = gguf_get_tensor_offset(g, last) + gguf_get_tensor_size(g, last);
    std::error_code ec;
    std::filesystem::resize_file(path, std::filesystem::file_size(path) + data_bytes, ec);
    if (ec) throw_environment("cannot extend '{}': {}", path, ec.message());
    return;
  }
  std::unique_ptr<FILE, decltype(&std::fclose)> out(std::fopen(path.c_str(), "ab"), &std::fclose);
  if (!out) throw_environment("cannot append to '{}'", path);

  const size_t alignment = gguf_get_alignment(g);
  std::vector<float> f32;
  std::vector<ggml_fp16_t> f16;
  for (size_t k = 0; k < specs.size(); ++k) {
    const auto& spec = specs[k];
    const int64_t n = spec.ne0 * std::max<int64_t>(spec.ne1, 1) * spec.ne2;
    // Per-tensor stream: the same tensor gets the same values whatever else changes.
    SplitMix64 rng{seed * 0x100000001b3ULL + k};
    f32.resize(static_cast<size_t>(n));
    if (spec.ne1 == 0) {
      std::fill(f32.begin(), f32.end(), 1.0f);  // RMS-norm gains of 1 keep activations sane
    } else {
      // Uniform with variance 1/fan_in keeps activations bounded through the layers.
      float scale = std::sqrt(3.0f / static_cast<float>(spec.ne0));
      // A training's start: the projections into the residual stream scaled by 1/sqrt(2 n_layer)
      // (GPT-2's initialisation), so the stream's variance does not grow with depth.
      if (trained && (spec.name.ends_with("attn_output.weight") || spec.name.ends_with("ffn_down.weight")))
        scale /= std::sqrt(2.0f * static_cast<float>(s.n_layer));
      for (auto& x : f32) x = rng.uniform() * scale;
    }
    // Generated text is whole UTF-8 characters: the byte-fallback tokens keep their place
    // in the vocabulary (any text still tokenizes) but their output rows are zero, so their
    // logit is exactly 0. Greedy decoding (temperature 0, what edgeprobe asks) picks one
    // only if every other row scores at most 0 at once; those rows are independent and
    // symmetric, so for any hidden state that is a chance of about 2^-(n_vocab - 256).
    // Without this, random weights emit lone UTF-8 bytes, which llama-server refuses.
    if (spec.name == "output.weight" && !trained)
      for (int64_t t = 0; t < spec.ne1; ++t)
        if (vocab.types[static_cast<size_t>(t)] == kTokenByte)
          std::fill_n(f32.begin() + t * spec.ne0, spec.ne0, 0.0f);
    size_t bytes = 0;
    if (spec.ne1 == 0 || spec.keep_f32 || type == GGML_TYPE_F32) {
      bytes = f32.size() * sizeof(float);
      if (std::fwrite(f32.data(), 1, bytes, out.get()) != bytes) throw_environment("write to '{}' failed", path);
    } else {
      f16.resize(f32.size());
      ggml_fp32_to_fp16_row(f32.data(), f16.data(), n);
      bytes = f16.size() * sizeof(ggml_fp16_t);
      if (std::fwrite(f16.data(), 1, bytes, out.get()) != bytes) throw_environment("write to '{}' failed", path);
    }
    static const char zeros[64] = {};
    const size_t pad = (alignment - bytes % alignment) % alignment;
    if (pad && std::fwrite(zeros, 1, pad, out.get()) != pad) throw_environment("write to '{}' failed", path);
  }
  if (std::fflush(out.get()) != 0) throw_environment("write to '{}' failed (disk full?)", path);
}

// Unique per process, so two processes synthesizing the same cached model never write
// the same temporary file; the final rename is atomic.
std::string tmp_suffix() { return fmt::format(".{}.partial", static_cast<long>(getpid())); }

}  // namespace

std::string default_model_cache_dir() {
  if (const char* env = std::getenv("EDGEPROBE_MODEL_CACHE"); env && *env) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/edgeprobe/models";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/edgeprobe/models";
}

std::string resolve_model_spec(const std::string& spec) {
  if (const auto trained = parse_trained_spec(spec)) {
    // Made by scripts/setup.sh; otherwise trained here, once, which takes minutes: say so.
    TrainOptions o;
    o.progress = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
    return trained_model(trained->name, trained->quant, o);
  }
  if (!spec.empty() && !spec.starts_with("synth:")) return spec;
  // "synth:SHAPE[:QUANT]"; empty = the built-in default.
  std::string shape = "tinyllama-1.1b", quant = "q4_0";
  if (!spec.empty()) {
    const std::string rest = spec.substr(6);
    const auto colon = rest.find(':');
    shape = rest.substr(0, colon);
    if (colon != std::string::npos) quant = rest.substr(colon + 1);
  }
  return synthesized_model(named_shape(shape), quant);
}

std::string synthesized_model(const SynthShape& shape, const std::string& quant) {
  SynthOptions o;
  o.shape = shape;
  o.quant = quant;
  // "-r2": the vocabulary revision (byte-fallback tokens are never generated), so a file cached
  // by an earlier edgeprobe is not taken for one of today's.
  o.output_path = fmt::format("{}/synth-{}-{}-seed{}-r2.gguf", default_model_cache_dir(), shape.name, quant, o.seed);
  if (!std::filesystem::exists(o.output_path)) synthesize_model(o);
  return o.output_path;
}

std::vector<SynthShape> named_shapes() {
  return {
      // A few MB: fast enough for every test. GQA (2 KV heads) so the KV path is exercised.
      {{"llama", 4096, 2048, 256, 4, 768, 4, 2}, "tiny"},
      // TinyLlama-1.1B (TinyLlama/TinyLlama-1.1B-Chat-v1.0 config.json).
      {{"llama", 32000, 2048, 2048, 22, 5632, 32, 4}, "tinyllama-1.1b"},
      // Llama-3.2-3B (meta-llama/Llama-3.2-3B config.json: GQA 24/8, a 128k vocabulary).
      {{"llama", 128256, 131072, 3072, 28, 8192, 24, 8}, "llama-3.2-3b"},
      // LLaMA-7B (Touvron et al. 2023, table 2; HF config).
      {{"llama", 32000, 4096, 4096, 32, 11008, 32, 32}, "llama-7b"},
  };
}

SynthShape named_shape(const std::string& name) {
  std::string known;
  for (const auto& s : named_shapes()) {
    if (s.name == name) return s;
    known += (known.empty() ? "" : ", ") + s.name;
  }
  throw_bad_input("unknown model shape '{}'; known shapes: {} (or give --n-embd, --n-layer, ... for a custom one)", name, known);
}

int quant_ftype(const std::string& quant) {
  const auto it = quant_ftypes().find(quant);
  if (it == quant_ftypes().end()) {
    std::string known;
    for (const auto& n : synth_quant_types()) known += (known.empty() ? "" : ", ") + n;
    throw_bad_input("unknown quantization type '{}'; choose one of: {}", quant, known);
  }
  return it->second;
}

std::string quant_name_of_ftype(int64_t ftype) {
  for (const auto& [name, type] : quant_ftypes())
    if (static_cast<int64_t>(type) == ftype) return name;
  return "";
}

void write_initial_model(const SynthShape& shape, const SpmVocabulary& vocab, uint64_t seed,
                         const std::string& name, const std::string& path) {
  validate(shape);
  write_float_model(shape, GGML_TYPE_F32, seed, path, /*with_data=*/true, &vocab, name);
}

std::vector<std::string> synth_quant_types() {
  std::vector<std::string> names;
  for (const auto& [name, ftype] : quant_ftypes()) names.push_back(name);
  return names;
}

void synthesize_model(const SynthOptions& options) {
  validate(options.shape);
  const auto it = quant_ftypes().find(options.quant);
  if (it == quant_ftypes().end()) {
    std::string known;
    for (const auto& n : synth_quant_types()) known += (known.empty() ? "" : ", ") + n;
    throw_bad_input("unknown quantization type '{}'; choose one of: {}", options.quant, known);
  }
  if (options.output_path.empty()) throw_bad_input("no output path given for the synthesized model");
  namespace fs = std::filesystem;
  const fs::path out(options.output_path);
  if (out.has_parent_path()) fs::create_directories(out.parent_path());

  if (options.quant == "f32" || options.quant == "f16") {
    const std::string tmp = options.output_path + tmp_suffix();
    write_float_model(options.shape, options.quant == "f32" ? GGML_TYPE_F32 : GGML_TYPE_F16, options.seed, tmp);
    fs::rename(tmp, out);
    return;
  }
  // Quantized: write f16 first, then let llama.cpp's quantizer choose per-tensor types
  // exactly as llama-quantize would.
  const std::string f16_path = options.output_path + ".f16" + tmp_suffix();
  const std::string tmp = options.output_path + tmp_suffix();
  write_float_model(options.shape, GGML_TYPE_F16, options.seed, f16_path);
  llama_model_quantize_params qp = llama_model_quantize_default_params();
  qp.ftype = it->second;
  qp.nthread = options.n_threads;
  const uint32_t rc = llama_model_quantize(f16_path.c_str(), tmp.c_str(), &qp);
  std::error_code ec;
  fs::remove(f16_path, ec);
  if (rc != 0) {
    fs::remove(tmp, ec);
    throw_environment("llama.cpp failed to quantize the synthesized model to {}", options.quant);
  }
  fs::rename(tmp, out);
}

namespace {

// llama.cpp's quantizer reports each tensor's choice in two log calls: "[ i/ n] NAME - [shape],
// type = f16, " then "size = A MiB -> B MiB (q6_K)" (converted) or "size = A MiB" (kept).
struct QuantizerLog {
  std::string text;
  static void callback(ggml_log_level, const char* piece, void* user) {
    if (piece) static_cast<QuantizerLog*>(user)->text += piece;
  }
};

// tensor name -> the type the dry run chose (kept tensors are absent: they keep theirs).
std::map<std::string, std::string> parse_dry_run(const std::string& log) {
  std::map<std::string, std::string> chosen;
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    const std::string_view line(log.data() + start, end - start);
    start = end + 1;
    const size_t close = line.find("] ");
    const size_t dash = line.find(" - [");
    if (line.empty() || line[0] != '[' || close == std::string_view::npos || dash == std::string_view::npos) continue;
    std::string_view name = line.substr(close + 2, dash - close - 2);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);  // "%-36s" pads it
    const size_t arrow = line.find(" -> ", dash);
    const size_t open = line.rfind('(');
    if (arrow == std::string_view::npos || open == std::string_view::npos || open < arrow || line.back() != ')') continue;
    chosen[std::string(name)] = std::string(line.substr(open + 1, line.size() - open - 2));
  }
  return chosen;
}

}  // namespace

GgufInfo planned_layout(const SynthShape& shape, const std::string& quant) {
  validate(shape);
  const auto it = quant_ftypes().find(quant);
  if (it == quant_ftypes().end()) {
    std::string known;
    for (const auto& n : synth_quant_types()) known += (known.empty() ? "" : ", ") + n;
    throw_bad_input("unknown quantization type '{}'; choose one of: {}", quant, known);
  }
  namespace fs = std::filesystem;
  const std::string base = (fs::temp_directory_path() / fmt::format("edgeprobe-layout-{}-{}", getpid(), quant)).string();
  const std::string f16_path = base + ".gguf";
  struct Remove {
    std::string path;
    ~Remove() { std::error_code ec; fs::remove(path, ec); }
  } remove_f16{f16_path};
  const ggml_type float_type = quant == "f32" ? GGML_TYPE_F32 : GGML_TYPE_F16;
  write_float_model(shape, float_type, /*seed=*/42, f16_path, /*with_data=*/false);
  GgufInfo info = read_gguf_info(f16_path);
  const uint64_t header_bytes = info.file_bytes - info.weight_bytes();
  if (quant != "f32" && quant != "f16") {
    QuantizerLog log;
    ggml_log_callback previous = nullptr;
    void* previous_user = nullptr;
    llama_log_get(&previous, &previous_user);
    llama_log_set(&QuantizerLog::callback, &log);
    llama_model_quantize_params qp = llama_model_quantize_default_params();
    qp.ftype = it->second;
    qp.dry_run = true;
    const uint32_t rc = llama_model_quantize(f16_path.c_str(), (base + ".out.gguf").c_str(), &qp);
    llama_log_set(previous, previous_user);
    if (rc != 0) throw_environment("llama.cpp's quantizer could not plan {} for this shape", quant);
    const auto chosen = parse_dry_run(log.text);
    if (chosen.empty()) throw_environment("llama.cpp's quantizer reported no tensor types for {} (its log format changed?)", quant);
    for (auto& t : info.tensors) {
      const auto c = chosen.find(t.name);
      if (c == chosen.end()) continue;
      ggml_type type = GGML_TYPE_COUNT;
      for (int k = 0; k < GGML_TYPE_COUNT; ++k)
        if (const char* n = ggml_type_name(static_cast<ggml_type>(k)); n && c->second == n) type = static_cast<ggml_type>(k);
      if (type == GGML_TYPE_COUNT) throw_environment("llama.cpp's quantizer chose an unknown type '{}' for {}", c->second, t.name);
      t.type = c->second;
      t.n_bytes = ggml_row_size(type, t.shape[0]) * static_cast<uint64_t>(t.n_elements / t.shape[0]);
    }
    info.file_type = it->second;
  }
  info.path.clear();
  info.name = fmt::format("{} {} (planned layout, no file)", shape.name, quant);
  info.file_bytes = header_bytes + info.weight_bytes();
  return info;
}

}  // namespace edgeprobe::model
