#pragma once
// A small trained model family, made by the project: the King James Bible (Debian's
// bible-kjv-text, public domain), a SentencePiece tokenizer trained on it, and two llama
// models trained from scratch through libllama's own training API (llama_opt_epoch).
// Random weights give near-uniform logits, on which a fidelity figure means nothing; these
// give real ones. Everything is cached in default_model_cache_dir(), keyed by the recipe's
// hash, made once (scripts/setup.sh does it) and never committed. docs/models.md.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/synth.h"

namespace edgeprobe::model {

struct TrainedRecipe {
  std::string name;  // "main", "draft": trained:NAME
  SynthShape shape;  // n_vocab is the tokenizer's
  int n_ctx = 256;   // sequence length; one sequence per optimizer step
  int64_t steps = 0;
  int warmup_steps = 0;
  float lr_max = 0, lr_min = 0;  // AdamW; linear warm-up, then cosine down to lr_min
  float weight_decay = 0;
  uint64_t seed = 0;  // initial weights and the order of the training windows
};

// main and draft, sharing the tokenizer.
std::vector<TrainedRecipe> trained_recipes();
const TrainedRecipe& trained_recipe(const std::string& name);  // throws kBadInput listing the known names

// What the recipe's hash covers besides the recipe: the trainer's code version, the corpus'
// SHA-256, the held-out rule and the tokenizer's settings. 16 hex digits.
std::string recipe_hash(const TrainedRecipe& recipe);

// "trained:NAME[:QUANT]" -> {NAME, QUANT} (QUANT "f32" when absent: the training's own
// output). nullopt when spec is not a trained: spec; kBadInput (one line listing the known
// names or quantizations) when it is one with an unknown part.
struct TrainedSpec {
  std::string name, quant;
};
std::optional<TrainedSpec> parse_trained_spec(const std::string& spec);

struct TrainOptions {
  int n_threads = 0;  // 0: all cores
  // Progress lines (training takes minutes); unset: none.
  std::function<void(const std::string&)> progress;
  // When the model is not cached: train it (true) or throw one line naming the command (false).
  bool train_if_missing = true;
};

// The path of that trained model in that quantization in the model cache: trained on first
// use (minutes, under a lock so two processes do not both train), quantized on first use
// with llama.cpp's quantizer. A cached file whose SHA-256 no longer matches the one recorded
// when it was written is refused (f32: one line saying to run `edgeprobe train NAME`, which
// makes it again) or made again (a quantization: seconds).
std::string trained_model(const std::string& name, const std::string& quant = "f32",
                          const TrainOptions& options = {});

// Where trained_model keeps that file (it may not exist yet).
std::string trained_model_path(const std::string& name, const std::string& quant = "f32");

// The held-out text (every 20th chapter of the KJV, never trained on), one verse a line:
// a cached file's path, extracted on first use. The built-in default text for fidelity.
std::string trained_held_out_text();
// The training part of the same extraction.
std::string trained_training_text();

// SHA-256 of the extracted corpus (all 31,102 verses, one a line, in order) that the recipe
// was made with; a different text (another Debian version of bible-kjv-text) is refused.
extern const char* const kKjvCorpusSha256;

}  // namespace edgeprobe::model
