#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace edgeprobe::probe {

// Matrix throughput through ggml itself, on the CPU variant that is loaded: a weight of
// each type times f32 activations at a prefill-like shape, the op that dominates prefill.
struct ComputeOptions {
  std::vector<std::string> types = {"q4_0", "q8_0", "f16", "f32"};
  int threads = 0;       // 0 = hardware_concurrency
  int64_t rows = 4096;   // weight output features (ne1)
  int64_t cols = 4096;   // weight input features (ne0)
  int64_t tokens = 512;  // activation columns, like a 512-token prompt batch
  int reps = 3;          // timed runs after one warm-up
  double max_seconds_per_type = 3.0;  // stop repeating once a type has used this much
  std::string variant;   // ggml CPU variant to load ("" = best for this CPU)
  std::string backend_dir;
};

struct ComputePoint {
  std::string type;
  int threads = 0;
  int64_t rows = 0, cols = 0, tokens = 0;
  std::string weight_buffer;  // "CPU_REPACK" when ggml repacks the weight (as llama.cpp does), else "CPU"
  double best_gflop_per_s = 0;
  double median_gflop_per_s = 0;
  int reps = 0;
  double cpu_share = 0;  // process CPU time over threads x wall of the timed runs (< ~0.9: disturbed)
  std::string error;  // non-empty: this type could not be measured
};

struct ComputeResult {
  std::string variant;       // the ggml CPU variant that ran
  std::vector<ComputePoint> points;
  std::vector<std::string> notes;
  // Best GFLOP/s for a weight type at any thread count (0 when not measured).
  double gflop_per_s(const std::string& type) const;
  double min_cpu_share() const;  // lowest over the measured points (1 when none)
};

// Loads the CPU backend through engine::load_cpu_backend (once per process) and runs one
// ggml_mul_mat graph per type. Throws Error(kEnvironment) when no CPU backend can be set up.
ComputeResult measure_compute(const ComputeOptions& options = {});

nlohmann::json to_json(const ComputeResult& result);
ComputeResult compute_from_json(const nlohmann::json& j);

}  // namespace edgeprobe::probe
