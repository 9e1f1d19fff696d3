#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "model/gguf_info.h"
#include "probe/ceilings.h"

namespace edgeprobe::probe {

// Bytes of weights one generated token reads: every weight matrix once, except the token
// embedding, of which only the looked-up row is read (ggml_get_rows). When the model has no
// output.weight the embedding doubles as the output matrix and is read in full.
uint64_t decode_weight_bytes_per_token(const model::GgufInfo& info);

// KV cache bytes read per generated token with `depth` entries cached:
// 2 (K and V) x n_layer x n_head_kv x head_dim x depth x bytes per element.
double kv_bytes_per_token(const model::ModelShape& shape, double depth, double kv_bytes_per_element = 2.0);

// Bytes per element of a KV cache type ("f16" 2, "q8_0" 34/32, "q4_0" 18/32, ...): ggml's
// block sizes. 0 for a type edgeprobe does not know.
double kv_type_bytes_per_element(const std::string& ggml_type);

// Weights plus KV cache at that depth (f16 KV cache by default, llama.cpp's default type).
double decode_bytes_per_token(const model::GgufInfo& info, int64_t depth, double kv_bytes_per_element = 2.0);

// Matrix-multiply FLOPs per weight type for one token: 2 x the parameters of every 2-D weight
// that a token multiplies (all but the token embedding, which is gathered).
struct TypeFlops {
  std::string type;
  double flop = 0;
};
std::vector<TypeFlops> weight_flops_per_token(const model::GgufInfo& info);

// Attention FLOPs for one token that attends to `context` positions: Q.K^T and softmax.V,
// each 2 x n_head x head_dim x context per layer.
double attention_flops_per_token(const model::ModelShape& shape, double context);

// Weights plus attention for a token with `context` positions before and including it.
double prefill_flops_per_token(const model::GgufInfo& info, double context);

// Ceilings for one bench result and how close the measurement came to them.
struct Roofline {
  // decode (tg): bandwidth-bound
  double decode_bytes_per_token = 0;      // at the mean depth of the generated tokens
  double decode_mean_depth = 0;
  double bandwidth_gb_per_s = 0;          // device's best sustained read bandwidth
  double decode_ceiling_tokens_per_s = 0;
  double decode_efficiency = 0;           // measured / ceiling; 0 when not measured
  double bandwidth_at_threads_gb_per_s = 0;  // read bandwidth with the bench's thread count
  double decode_ceiling_at_threads_tokens_per_s = 0;
  double decode_efficiency_at_threads = 0;
  double decode_achieved_gb_per_s = 0;    // measured tokens/s x bytes per token
  // prefill (pp): compute-bound
  double prefill_flop_per_token = 0;
  double prefill_mean_context = 0;
  double prefill_ceiling_tokens_per_s = 0;
  double prefill_efficiency = 0;
  double prefill_achieved_gflop_per_s = 0;
  // load: storage-bound
  uint64_t model_file_bytes = 0;
  double load_ceiling_ms = 0;             // file bytes / cold read rate (warm when cold is unavailable)
  std::string load_ceiling_basis;         // "cold", "warm" or "unavailable: ..."
  double load_efficiency = 0;             // ceiling / measured load time
  std::vector<std::string> notes;         // approximations and why a figure is missing
};

// n_threads: the bench's thread count (0 = unknown): adds the same-thread-count ceiling,
// which says whether too few threads, rather than the kernels, leave bandwidth unused.
// Measured values <= 0 mean "not measured": their efficiency stays 0 with a note.
// kv_bytes_per_element: mean of the K and V cache types' (see kv_type_bytes_per_element),
// f16 by default.
Roofline compute_roofline(const model::GgufInfo& info, const DeviceCeilings& ceilings, int64_t n_prompt, int64_t n_gen,
                          int64_t depth, double measured_pp_tps, double measured_tg_tps, double load_ms,
                          int n_threads = 0, double kv_bytes_per_element = 2.0);

nlohmann::json to_json(const Roofline& roofline);
std::string to_text(const Roofline& roofline);

}  // namespace edgeprobe::probe
