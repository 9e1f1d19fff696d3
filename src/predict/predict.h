#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/context_defaults.h"
#include "model/gguf_info.h"
#include "predict/published.h"
#include "probe/ceilings.h"

// What a model will do on a device before it runs there, from the device's own measured
// figures (docs/predict.md):
//   decode, per token = the model's matrices at the decode kernel probe's rate
//                     + the other bytes a token reads at the memory bandwidth
//                     + attention over the KV cache (bandwidth or measured cost, the larger)
//                     + the measured per-step and per-layer costs (probe::StepCosts);
//   prefill, per token = each matrix's FLOPs at the prefill kernel probe's rate for its type
//                     and shape + measured attention cost + per-ubatch costs spread over it.
namespace edgeprobe::predict {

struct Config {
  int threads = 1;
  int64_t n_prompt = 512;
  int64_t n_gen = 128;
  int64_t depth = 0;
  int64_t n_batch = kDefaultBatch;
  int64_t n_ubatch = kDefaultUbatch;
  std::string type_k = kDefaultCacheType;
  std::string type_v = kDefaultCacheType;
  // Logits for every prompt token (a speculative verify batch), not only each batch's last:
  // the output matrix then runs over the whole ubatch at the prefill kernel's rate.
  bool logits_all = false;
};

// A predicted figure and its interval; value 0 = unavailable (the notes say why).
struct Estimate {
  double value = 0, low = 0, high = 0;
};

// How far measurements have fallen from predictions: measured / predicted, low and high.
struct Spread {
  double low = 1, high = 1;
  std::string basis;  // where the range comes from ("12 checked runs on this device", ...)
};

struct Memory {
  int64_t n_ctx = 0;               // the context llama.cpp allocates (padded to 256)
  uint64_t weights_bytes = 0;      // the model's tensors, as the file holds them (mapped)
  uint64_t repacked_bytes = 0;     // copies ggml makes of the weights it repacks (CPU_REPACK)
  uint64_t kv_bytes = 0;           // K and V caches at n_ctx
  uint64_t compute_bytes = 0;      // llama.cpp's compute buffer (an upper estimate: docs/predict.md)
  uint64_t total_bytes() const { return weights_bytes + repacked_bytes + kv_bytes + compute_bytes; }
  uint64_t device_bytes = 0;       // the device's memory (0 = unknown)
  bool fits = true;                // total within the device's memory (true when unknown)
};

struct Prediction {
  Config config;
  Estimate prefill_tokens_per_s, decode_tokens_per_s;
  Estimate ttft_ms;        // the prompt's prefill
  Estimate generation_ms;  // n_gen decode steps
  // Where a token's time goes (ms per token), so the bound is plain.
  double decode_matmul_ms = 0, decode_memory_ms = 0, decode_attention_ms = 0, decode_step_ms = 0;
  double prefill_matmul_ms = 0, prefill_attention_ms = 0, prefill_step_ms = 0;
  std::string decode_bound;   // bench's words: "bandwidth", "kernel", "kernel (fits LLC)"
  std::string prefill_bound;  // "compute" (the matmuls), or what dominates otherwise
  Memory memory;
  Estimate load_cold_ms, load_warm_ms;  // file bytes over the storage probe's read rates
  std::string load_basis;
  Spread decode_spread, prefill_spread;
  std::vector<std::string> notes;  // interpolated rates, missing figures, approximations
};

// The memory accounting, as llama.cpp allocates at load (tests hold these to llama.cpp's
// own "model buffer size" and "KV buffer size" lines).
int64_t context_size(const Config& config);
uint64_t kv_cache_bytes(const model::ModelShape& shape, int64_t n_ctx, const std::string& type_k,
                        const std::string& type_v);
uint64_t compute_buffer_bytes(const model::GgufInfo& info, int64_t n_ctx, int64_t n_ubatch);
// The bytes ggml copies into repacked buffers: the matrices (not the gathered embedding) of
// the types this device repacks, which the kernel probe saw (KernelPoint::weight_buffer).
uint64_t repacked_bytes(const model::GgufInfo& info, const std::set<std::string>& repacked_types);
std::set<std::string> repacked_types(const probe::DeviceCeilings& ceilings);

// For a device whose ceilings were measured (this machine, or one in the store).
// device_memory_bytes 0 = unknown.
Prediction predict(const model::GgufInfo& info, const probe::DeviceCeilings& ceilings, const Config& config,
                   const Spread& decode_spread, const Spread& prefill_spread, uint64_t device_memory_bytes);

// A device never measured: its memory bandwidth (required), matmul rate and storage read
// rate (optional). The measured share of such roofs that stored runs reached stands in for
// kernels and step costs: `decode_efficiency` and `prefill_efficiency` are those shares'
// median and range, from runs on other devices.
struct DeviceSpec {
  double bandwidth_gb_per_s = 0;
  double matmul_gflop_per_s = 0;   // 0 = unknown: no prefill prediction
  double storage_mb_per_s = 0;     // 0 = unknown
  uint64_t memory_bytes = 0;       // 0 = unknown
  int cores = 0;
};
struct Efficiency {
  double median = 0, low = 0, high = 0;
  int runs = 0, devices = 0;
};
Prediction predict_from_spec(const model::GgufInfo& info, const DeviceSpec& spec, const Config& config,
                             const Efficiency& decode_efficiency, const Efficiency& prefill_efficiency);

// A device from the catalogue (data/predict, or a spec given by flags with no stored run to
// scale by): the efficiencies fitted on the published FIT measurements (published.h) for the
// backend, with intervals from their left-out residuals. `storage_mb_per_s` 0 = unknown.
Prediction predict_from_catalogue(const model::GgufInfo& info, const published::Calibration& calibration,
                                  const published::Figures& figures, const std::string& backend,
                                  const Config& config, double storage_mb_per_s = 0);

nlohmann::json to_json(const Prediction& prediction);

// A phase's measured rate: its best repetition (what a prediction of the undisturbed speed
// is checked against: noise only slows a run) and its median one.
struct Measured {
  double best = 0, median = 0;
};
// The part of a prediction a bench result carries next to its measurement.
nlohmann::json check_json(const Prediction& prediction, Measured prefill, Measured decode);

}  // namespace edgeprobe::predict
