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
  std::string device;    // a GPU device by ggml's name ("Vulkan0"); "" = the CPU variant
};

struct ComputePoint {
  std::string type;
  int threads = 0;
  int64_t rows = 0, cols = 0, tokens = 0;
  std::string weight_buffer;  // "CPU_REPACK" when ggml repacks the weight (as llama.cpp does), else "CPU"
  double best_gflop_per_s = 0;
  double median_gflop_per_s = 0;
  int reps = 0;
  // Share of the CPU the process's threads wanted that they got in the timed runs (schedstat
  // run over run + run-queue wait; CPU time over threads x wall without schedstat); < ~0.9:
  // other processes took the cores.
  double cpu_share = 0;
  std::string error;  // non-empty: this type could not be measured
  bool usable() const;  // measured, and not while other processes held the CPUs (contention.h)
};

struct ComputeResult {
  std::string variant;       // the ggml CPU variant that ran (on a GPU: the device's name)
  std::vector<ComputePoint> points;
  std::vector<std::string> notes;
  // Best GFLOP/s for a weight type at any thread count over usable points (0 when none).
  double gflop_per_s(const std::string& type) const;
  double min_cpu_share() const;  // lowest over the measured points (1 when none)
};

// Loads the CPU backend through engine::load_cpu_backend (once per process) and runs one
// ggml_mul_mat graph per type. Throws Error(kEnvironment) when no CPU backend can be set up.
ComputeResult measure_compute(const ComputeOptions& options = {});

nlohmann::json to_json(const ComputeResult& result);
ComputeResult compute_from_json(const nlohmann::json& j);

// `count` weight matrices of one type and shape, as a model holds them: ne0 = cols (input
// features), ne1 = rows (output features).
struct MatrixShape {
  std::string type;
  int64_t cols = 0, rows = 0;
  int count = 1;
  uint64_t bytes() const;  // all `count` of them, by ggml's block sizes (0 for an unknown type)
};

// "q4_0:2048x5632x44,..." sorted: names the set of matrices a kernel point was measured for.
std::string matrices_signature(const std::vector<MatrixShape>& matrices);

// A model's own matmuls timed through ggml, on the loaded CPU variant, with the weight
// buffers llama.cpp would use:
//  - "prefill": one matrix of the model's shape times `tokens` f32 activations (an ubatch);
//  - "decode": every matrix of the model once times one token, as a generated token does,
//    so the time includes streaming the weights from memory, not only the arithmetic.
struct KernelPoint {
  std::string phase;      // "prefill" or "decode"
  std::string model;      // matrices_signature of the model it was measured for
  std::string type;       // prefill: the weight type; decode: the types in the graph, '+'-joined
  int64_t rows = 0, cols = 0;  // prefill: the matrix shape (0 for decode)
  int64_t tokens = 0;
  int threads = 0;
  int matrices = 0;            // weight matrices in the graph
  uint64_t weight_bytes = 0;   // the weights one run reads (decode: the working set)
  uint64_t model_bytes = 0;    // decode: the model's matrices' bytes (more when the working set was capped)
  std::string weight_buffer;   // ggml buffer type(s) of the weights, '+'-joined
  // Where the weights not repacked lay: "mapped file" (as in a model llama.cpp maps),
  // "allocated" (ggml's buffer), "" in points from before this was recorded (allocated).
  std::string weight_memory;
  double best_gflop_per_s = 0, median_gflop_per_s = 0;
  double best_gb_per_s = 0, median_gb_per_s = 0;  // weight bytes streamed per second
  int reps = 0;
  double cpu_share = 0;
  std::string error;
  bool usable() const;  // measured, and not while other processes held the CPUs (contention.h)
  // The rate a decode point stands for as a ceiling: the median run, not the best. Decode
  // efficiency divides the median decode rate by it, and on a host whose speed swings from
  // one 20 ms run to the next the best of many runs sits well above what any sustained
  // stretch gets, so measured / best would read low for reasons that are not the stack's.
  double decode_ceiling_gb_per_s() const { return median_gb_per_s; }
};

struct KernelOptions {
  int threads = 0;  // 0 = hardware_concurrency
  int reps = 5;     // timed runs after one warm-up (prefill)
  // Decode: one run is a few ms to ~0.1 s, and the ceiling is the median run (see
  // KernelPoint::decode_ceiling_gb_per_s), so take enough runs for a median that a few
  // lucky or preempted ones do not move.
  int decode_reps = 40;
  double max_seconds = 1.5;  // stop repeating once a point has used this much
  // Decode working set cap: the model's matrices are thinned (each shape keeps at least one)
  // to fit, so a 7B model does not need 4 GB of extra memory to be probed.
  uint64_t max_working_set_bytes = 1ull << 30;
  std::string variant;
  std::string backend_dir;
  std::string device;  // a GPU device by ggml's name; "" = the CPU (threads then do not apply)
  // Decode: a directory to map the weights from (a file there, unlinked at once), as
  // llama.cpp maps the model; "" = ggml's allocation (a GPU's, or no writable place).
  std::string weights_dir;
};

KernelPoint measure_prefill_kernel(const MatrixShape& shape, int64_t tokens, const KernelOptions& options);
KernelPoint measure_decode_kernel(const std::vector<MatrixShape>& matrices, const KernelOptions& options);

nlohmann::json to_json(const KernelPoint& point);
KernelPoint kernel_point_from_json(const nlohmann::json& j);

}  // namespace edgeprobe::probe
