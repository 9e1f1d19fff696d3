#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <set>
#include <string>
#include <vector>

#include "model/gguf_info.h"
#include "probe/ceilings.h"
#include "core/context_defaults.h"
#include "result/roofline.h"

namespace edgeprobe::probe {

// Bytes of weights one generated token reads: every weight matrix once, except the token
// embedding, of which only the looked-up row is read (ggml_get_rows). When the model has no
// output.weight the embedding doubles as the output matrix and is read in full.
// An expert tensor of a mixture of experts (`blk.N.ffn_{gate,up,down}_exps`, one slice per
// expert), and the share of a tensor one token reads and multiplies: n_expert_used /
// n_expert of an expert tensor (the router picks them), all of any other.
bool is_expert_tensor(const model::TensorInfo& t, const model::ModelShape& shape);
double token_share(const model::TensorInfo& t, const model::ModelShape& shape);

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
// output_share: how many of the tokens multiply the output matrix (output.weight, or the
// tied token_embd). A generated token does; in a prompt only the tokens whose logits are
// asked for do: llama.cpp skips the rest (inp_out_ids), and edgeprobe, like llama-bench,
// asks for the last token of each llama_decode call only.
std::vector<TypeFlops> weight_flops_per_token(const model::GgufInfo& info, double output_share = 1.0);

// The weight matrices a generated token multiplies, grouped by type and shape: what the
// decode kernel probe runs.
std::vector<MatrixShape> decode_matrices(const model::GgufInfo& info);

// The shapes whose rate bounds prefill: for every weight type with at least 5 % of the
// per-token matmul FLOPs (the output matrix left out: it runs for one token per batch),
// its distinct shapes, the 4 with most FLOPs. One matrix each (count 1).
std::vector<MatrixShape> prefill_shapes(const model::GgufInfo& info);

// The ubatch a prompt of n_prompt tokens runs in: what the prefill probe multiplies by.
int64_t prefill_kernel_tokens(int64_t n_prompt, int64_t n_ubatch);

// Attention FLOPs for one token that attends to `context` positions: Q.K^T and softmax.V,
// each 2 x n_head x head_dim x context per layer.
double attention_flops_per_token(const model::ModelShape& shape, double context);

// Weights plus attention for a token with `context` positions before and including it.
double prefill_flops_per_token(const model::GgufInfo& info, double context, double output_share = 1.0);

// The roofline of one bench result is part of the result document (result/roofline.h).
using result::kCeilingStatistic;
using result::Roofline;

// How far above 1 a measured / ceiling ratio may go before the ceiling is called suspect:
// repeated medians of one probe on this project's quiet 2-core VM spread by up to ~9 %
// (bench/bandwidth-check.sh, paired interval 0.912-1.011), so 10 % is noise, more is not.
constexpr double kSuspectMargin = 0.10;

// Below this share of the bandwidth ceiling, the decode kernel ceiling is named the binding
// limit; above it the kernels stream the weights at about memory speed (the kernel probe
// reads the weights from memory too, so it can only come near the bandwidth, not pass it).
constexpr double kKernelBoundShare = 0.9;

// n_threads: the bench's thread count (0 = unknown): adds the same-thread-count ceiling,
// which says whether too few threads, rather than the kernels, leave bandwidth unused.
// Measured values <= 0 mean "not measured": their efficiency stays 0 with a note.
// kv_bytes_per_element: mean of the K and V cache types' (see kv_type_bytes_per_element),
// f16 by default. n_batch / n_ubatch: the bench's batch sizes (how many prompt tokens get
// logits, and which prefill kernel points apply).
Roofline compute_roofline(const model::GgufInfo& info, const DeviceCeilings& ceilings, int64_t n_prompt, int64_t n_gen,
                          int64_t depth, double measured_pp_tps, double measured_tg_tps, double load_ms,
                          int n_threads = 0, double kv_bytes_per_element = 2.0, int64_t n_batch = kDefaultBatch,
                          int64_t n_ubatch = kDefaultUbatch);

// What the roofline of a set of bench tests needs from the kernel probe.
struct KernelNeeds {
  std::set<int64_t> prefill_tokens;  // prefill_kernel_tokens of each test with a prompt
  std::set<int> decode_threads;      // thread counts of the tests that generate
  // Prefill points at these thread counts too (the ceiling uses the device's own count; a
  // prediction for a test with fewer threads needs the rate at its count).
  std::set<int> prefill_threads;
};

// Measures the model's kernel points that `ceilings` lacks, or has only contended (all of
// them again when options.remeasure_kernels; a stored point stays where it is higher, unless
// options.replace) (prefill at the device's thread
// count, decode at the device's and at each needed thread count), adds them and rewrites
// the cache file. Nothing when compute is unavailable. Returns how many were measured.
int ensure_model_kernels(DeviceCeilings& ceilings, const model::GgufInfo& info, const KernelNeeds& needs,
                         const ProbeOptions& options);

// ensure_model_kernels on the GPU entry `device` of `host` (nothing when it has none), then
// the host's cache rewritten: a GPU's points have no thread count.
int ensure_gpu_model_kernels(DeviceCeilings& host, const std::string& device, const model::GgufInfo& info,
                             const KernelNeeds& needs, const ProbeOptions& options);

}  // namespace edgeprobe::probe
