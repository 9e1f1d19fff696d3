#pragma once
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>

#include "probe/bandwidth.h"
#include "probe/compute.h"
#include "probe/storage.h"

namespace edgeprobe::probe {

// What a token costs beyond its weight matrices' multiplications, measured through the
// engine on two small synthesized models that differ only in depth (app/step_costs.h):
// graph and sampling work per step, per layer (norms, RoPE, adds, the thread barriers
// between ops) and attention per position of context. With the kernel probe's matmul
// times these make a prediction (src/predict); bench's ceilings leave them out.
struct StepCosts {
  int threads = 0;
  int method = 1;                      // how they were measured (app/step_costs.cpp's kMethod); 1 before it was recorded
  double decode_fixed_ms = 0;          // per generated token
  double decode_layer_ms = 0;          // per generated token and layer
  double decode_attention_ns = 0;      // per token, layer, n_embd element and context position
  double prefill_fixed_ms = 0;         // per ubatch
  double prefill_layer_ms = 0;         // per ubatch and layer
  double prefill_attention_ns = 0;     // per prompt token, layer, n_embd element and context position
  double decode_residual = 0;          // largest relative misfit of these figures on the runs' non-matmul time
  double prefill_residual = 0;
  std::string basis;                   // which models and runs they come from
  std::string measured_at_utc;
};

// The device's own measured ceilings: memory bandwidth bounds decode, matrix compute
// bounds prefill, storage read bounds load. Cached per device and build.
struct DeviceCeilings {
  static constexpr int kSchemaVersion = 2;  // 2: wide bandwidth kernels, huge pages (issue 19)
  std::string device_key;  // cpu model, topology, memory, host: what the figures belong to
  // "" for the CPU; a GPU's figures (an entry of `gpus`) carry ggml's device name
  // ("Vulkan0") and description, and no thread counts (threads 0).
  std::string device;
  std::string device_description;
  std::string build_key;   // edgeprobe + llama.cpp versions and the loaded ggml CPU variant
  std::string cpu_model;
  std::string measured_at_utc;  // ISO 8601
  double probe_seconds = 0;
  int threads = 0;              // max threads the probe used
  uint64_t llc_total_bytes = 0;
  uint64_t memory_bytes = 0;    // MemTotal (0 unknown): what a prediction's "will not fit" uses
  BandwidthResult bandwidth;
  ComputeResult compute;
  std::string compute_status;   // "measured" or "unavailable: ..."
  std::optional<StorageResult> storage;  // only when a model file was given
  // A model's own matmuls (prefill shapes, decode matvecs), measured the first time a bench
  // or `probe -m` needs them; absent from caches written before they existed.
  std::vector<KernelPoint> kernels;
  // Costs beyond the matmuls, per thread count (measured the first time a bench or
  // predict needs them; absent from older caches).
  std::vector<StepCosts> step_costs;
  const StepCosts* step_cost(int threads) const;
  // The GPUs' own ceilings, measured through ggml on each device (probe/gpu_ceilings.h):
  // absent until `probe --gpu` or a bench that offloads asks for them.
  std::vector<DeviceCeilings> gpus;
  const DeviceCeilings* gpu(const std::string& name) const;
  DeviceCeilings* gpu(const std::string& name);
  // Figures a refresh measured lower than the stored ones, which were kept (keep_higher).
  std::vector<std::string> kept_notes;  // not stored
  bool from_cache = false;      // not stored: set by load_or_measure
  std::string cache_path;       // not stored

  // The decode ceiling's bandwidth: best sustained read, GB/s (1e9 B/s).
  double bandwidth_gb_per_s() const { return bandwidth.read_best_gb_per_s; }
  // The decode point for that set of matrices at that thread count (nullptr when none).
  const KernelPoint* decode_kernel(const std::string& model_signature, int threads) const;
  // Best prefill GFLOP/s of that type and shape at `tokens` x `threads` (0 when none).
  double prefill_kernel_gflop_per_s(const MatrixShape& shape, int64_t tokens, int threads) const;
};

// The ceilings a run on that GPU is judged against: its entry, with the host's storage
// figure (the file is read by the host before it is uploaded). nullopt when not measured.
std::optional<DeviceCeilings> gpu_view(const DeviceCeilings& host, const std::string& device);

struct ProbeOptions {
  std::string sysfs_root = "/";
  int max_threads = 0;          // 0 = one per physical core
  std::string model_path;       // optional: storage probe on this file
  std::string variant;          // ggml CPU variant ("" = best)
  std::string backend_dir;
  uint64_t buffer_bytes = 0;    // bandwidth buffer (0 = auto)
  bool measure_compute = true;
  std::string cache_dir;        // "" = ${XDG_CACHE_HOME:-~/.cache}/edgeprobe/probe
  BandwidthOptions bandwidth;   // max_threads/buffer_bytes above override these
  ComputeOptions compute;       // threads/variant above override these
  StorageOptions storage;
  // A refresh (load_or_measure's `refresh`, ensure_model_kernels' `remeasure`) stores what it
  // measures even where the stored ceiling is higher; without it the higher figure stays.
  bool replace = false;
  bool remeasure_kernels = false;  // ensure_model_kernels measures present points again (a refresh)
  // Told before each measurement (bandwidth, compute, storage) and once at the end, with
  // how many are done of how many; between measurements, never inside one.
  std::function<void(const std::string& step, size_t done, size_t total)> progress;
};

// Measures everything now (no cache involved).
DeviceCeilings measure_ceilings(const ProbeOptions& options);

// Returns the cached ceilings for this device and build when present and `refresh` is
// false, else measures and writes the cache; a refresh keeps each stored figure that is
// higher than the fresh one (keep_higher) unless options.replace. A storage figure is reused only for the
// same file (path, size, mtime); otherwise it is measured and added.
DeviceCeilings load_or_measure(const ProbeOptions& options, bool refresh);
// The cached ceilings for this device and build, without measuring anything.
std::optional<DeviceCeilings> load_cached(const ProbeOptions& options);

// Rewrites `ceilings` to its cache_path (nothing when empty); a failed write is ignored.
void save_cache(const DeviceCeilings& ceilings);

// `fresh` with every figure of `stored` that is higher, or clean where the fresh one was
// measured while other processes held the CPUs; each kept figure is named in kept_notes.
DeviceCeilings keep_higher(const DeviceCeilings& stored, DeviceCeilings fresh);

// One kernel point measured again (ensure_model_kernels). The point with the higher ceiling
// rate (the median run) stays, so one busy moment does not lower a ceiling; its best run is
// the best of both measurements', since predict reads the best run: keeping whole points by
// their medians alone could lower it. `replace` stores the fresh point as measured (a
// measurement that failed never replaces). Returns the note naming a stored point kept.
std::optional<std::string> merge_kernel_point(KernelPoint& stored, KernelPoint fresh, bool replace);

std::string default_cache_dir();
// /proc/meminfo's MemTotal under the root, in bytes; 0 when unreadable.
uint64_t memory_total_bytes(const std::string& sysfs_root);
// Names the CPUs this process may run on when they are fewer than the machine's.
std::string device_key(const std::string& sysfs_root);
std::string build_key(const std::string& variant);

nlohmann::json to_json(const DeviceCeilings& ceilings);
DeviceCeilings ceilings_from_json(const nlohmann::json& j);

}  // namespace edgeprobe::probe
