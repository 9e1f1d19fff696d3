#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/gguf_info.h"

namespace edgeprobe::model {

// A llama-architecture shape. Throughput depends on shapes and types, not on weight
// values, so a synthesized model with random weights benchmarks like the real one.
struct SynthShape : ModelShape {
  std::string name;
};

struct SynthOptions {
  SynthShape shape;
  std::string quant = "q4_0";  // a name from synth_quant_types()
  uint64_t seed = 42;
  std::string output_path;
  int n_threads = 0;           // for quantization; 0 = all
};

// Named shapes: "tiny" (a few MB, for tests), "tinyllama-1.1b", "llama-7b".
std::vector<SynthShape> named_shapes();
SynthShape named_shape(const std::string& name);  // throws kBadInput listing the known names
std::vector<std::string> synth_quant_types();

// Writes a GGUF that llama.cpp loads: llama architecture, random weights from `seed`, a
// generated SentencePiece-style vocabulary with byte fallback and a ChatML template.
// Quantized types go through llama.cpp's own quantizer, so the tensor-type mix (e.g.
// q6_k output in q4_k_m) is what llama-quantize would produce. Deterministic per seed.
void synthesize_model(const SynthOptions& options);

// "synth:SHAPE[:QUANT]" or "" (the built-in default, synth:tinyllama-1.1b:q4_0) -> the
// path of that model in the model cache, synthesized on first use; "trained:NAME[:QUANT]"
// -> model::trained_model's path (trained on first use, with progress on stderr). Other
// specs are returned unchanged (they are paths).
// The tensors a model of this shape quantized to `quant` holds, without writing one: the
// per-tensor types come from llama.cpp's own quantizer in dry-run mode (run on an f16
// header whose data is a hole), so q4_k_m's q6_k tensors are where llama-quantize puts them.
// path is empty; file_bytes is what the file would be. Throws kBadInput for an unknown
// quantization (listing the known ones) or a bad shape.
GgufInfo planned_layout(const SynthShape& shape, const std::string& quant);

std::string resolve_model_spec(const std::string& spec);
// The path of that shape in that quantization in the model cache, synthesized on first use
// (named by shape.name: give custom shapes a name of their own).
std::string synthesized_model(const SynthShape& shape, const std::string& quant);
std::string default_model_cache_dir();

// A tokenizer's vocabulary as llama.cpp's SentencePiece ("llama") tokenizer reads it:
// tokenizer.ggml.tokens/scores/token_type and the special ids.
struct SpmVocabulary {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;  // llama_token_type: 1 normal, 2 unknown, 3 control, 6 byte
  int32_t unk_id = 0, bos_id = 1, eos_id = 2;
};

// Writes an f32 llama GGUF with this vocabulary and random weights from `seed` (the same
// initialisation as synthesize_model's): the starting point of a training. shape.n_vocab
// must equal the vocabulary's size; `name` goes to general.name.
void write_initial_model(const SynthShape& shape, const SpmVocabulary& vocab, uint64_t seed,
                         const std::string& name, const std::string& path);

// The quantization names synth accepts, with their llama_ftype; throws kBadInput listing
// the known ones for any other name.
int quant_ftype(const std::string& quant);
// The name of a llama_ftype (general.file_type) among those, or "" when it is none of them.
std::string quant_name_of_ftype(int64_t ftype);

}  // namespace edgeprobe::model
