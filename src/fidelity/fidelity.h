#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "fidelity/reference_file.h"
#include "fidelity/score.h"

// Fidelity: how far a model's next-token distributions are from a reference's over a text,
// measured the way llama-perplexity's --kl-divergence does (docs/fidelity.md), in one
// process with both models loaded and no file of full-vocabulary logits. The text is cut
// into chunks of n_ctx tokens (BOS in place of each chunk's first token when the model
// adds one); each chunk is decoded from an empty cache and the positions from n_ctx/2 to
// n_ctx-2 are scored against the token that follows them.
namespace edgeprobe::fidelity {

// The one place the default evaluation text is chosen: the trained models' held-out text
// (model::trained_held_out_text, docs/models.md), public domain, never trained on.
std::string default_text_path();

struct ChunkSettings {
  int n_ctx = 512;    // -c: tokens per chunk
  int n_chunks = -1;  // --chunks: at most this many (-1: as many as the text holds)
  int first() const { return n_ctx / 2; }
  int scored_per_chunk() const { return n_ctx - 1 - first(); }
};

// The text tokenized with the model's tokenizer (BOS first as it wants) and cut to whole
// chunks. Throws Error(kBadInput) for a text shorter than one chunk, naming both lengths.
std::vector<engine::Token> chunk_text(const engine::LoadedModel& model, const std::string& text,
                                      ChunkSettings& settings);

// "" when two models share a vocabulary (size and every token's text), else one line
// naming the first difference.
std::string vocab_difference(const engine::LoadedModel& model, const engine::LoadedModel& ref);
std::string vocab_hash(const engine::LoadedModel& model);

// Wall time of each part, seconds.
struct Timings {
  double decode_model = 0, decode_ref = 0, score = 0;
};

using Progress = std::function<void(int chunk, int n_chunks)>;

// Model against a reference model, chunk by chunk (each chunk decoded by both, then scored
// on n_threads threads). The scores are in text order.
std::vector<PositionScore> compare_models(const engine::LoadedModel& model, const engine::LoadedModel& ref,
                                          const std::vector<engine::Token>& tokens,
                                          const ChunkSettings& settings,
                                          const engine::ContextOptions& context, Timings& timings,
                                          const Progress& progress = {});

// Model against a stored compact reference (its tokens and chunking are the file's).
// rest_mass_mean: the reference's mean probability outside its top k (how loose the KLD's
// lower bound can be).
std::vector<PositionScore> compare_stored(const engine::LoadedModel& model, ReferenceReader& ref,
                                          const engine::ContextOptions& context, Timings& timings,
                                          double& rest_mass_mean, const Progress& progress = {});

// Decodes the reference over the text and writes its compact rows.
void save_reference(const engine::LoadedModel& ref, const std::vector<engine::Token>& tokens,
                    const ChunkSettings& settings, const engine::ContextOptions& context, int top_k,
                    int samples, ReferenceWriter& writer, Timings& timings, const Progress& progress = {});

// The compact reference's own error, measured: a model against a reference model scored
// both ways at once (full and through compact_row at top_k), for docs and tests.
struct CompactError {
  Summary full, compact;
};
CompactError measure_compact_error(const engine::LoadedModel& model, const engine::LoadedModel& ref,
                                   const std::vector<engine::Token>& tokens, const ChunkSettings& settings,
                                   const engine::ContextOptions& context, int top_k);

// What `edgeprobe fidelity` reports: the figures and what they were computed from.
struct Report {
  nlohmann::json model;      // path, sha256, description, architecture, n_vocab
  nlohmann::json reference;  // kind ("model" or "stored"), path, sha256, description, top_k
  nlohmann::json text;       // path, sha256, tokens
  nlohmann::json engine;     // what ran it: CPU variant, devices
  ChunkSettings settings;
  int n_threads = 0;
  Summary summary;
  Timings timings;
  double seconds = 0;
  // Against a stored reference: the KLD is a lower bound (the rest mass is one bucket).
  bool kld_lower_bound = false;
  int top_k = 0;
  int samples = 0;              // stored reference: draws from the rest per position
  double rest_mass_mean = 0;    // stored reference: mean P(outside its top k)
  std::string saved_reference;  // --save-reference: the file written (no comparison then)
  int64_t saved_bytes = 0;
  // --check-quantization: the same figures for llama.cpp's own quantization of the
  // reference to the model's file type, made here; the model's KLD judged against it.
  struct QuantizationCheck {
    std::string quant;  // the model's file type, "q4_k_m"
    std::string path;   // the fresh quantization
    Summary summary;
  };
  std::optional<QuantizationCheck> quantization_check;
};

// How the model's KLD compares with a fresh quantization's of the same type: "further"
// when the gap is over three combined standard errors and the ratio over 1.25 (the file is
// not what a correct quantization of the reference gives: corrupted, mis-converted, or made
// from another file), "closer" alike the other way (an importance matrix, a better recipe),
// else "as_fresh".
std::string quantization_verdict(const Summary& model, const Summary& fresh);

}  // namespace edgeprobe::fidelity
