#pragma once
// The roofline of one bench result: the device's ceilings for this model and how close the
// measurement came to them. probe/roofline.h computes it; it is part of the result document.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace edgeprobe::result {

// Like with like: every efficiency divides a median rate (the bench's median repetition)
// by a ceiling taken from the same statistic of its probe, the median pass or run: read
// bandwidth, the decode matvec kernels, the prefill matmuls. On a shared host a best pass
// sits above anything sustained, so measured / best would read low for reasons that are
// not the stack's. The JSON names it ("ceiling_statistic"); the best passes stay in the
// probe's own figures (STREAM reports the best, bench/bandwidth-check.sh compares those).
inline constexpr const char* kCeilingStatistic = "median";

// Ceilings for one bench result and how close the measurement came to them.
struct Roofline {
  std::string device;  // whose ceilings: "" the CPU, else the GPU that held the model ("Vulkan0")
  // decode (tg): attainable = min(memory bandwidth / bytes per token, the ggml matrix-vector
  // kernels streaming this model's weights); the lower one is the binding limit.
  double decode_bytes_per_token = 0;      // at the mean depth of the generated tokens
  double decode_mean_depth = 0;
  double bandwidth_gb_per_s = 0;          // device's read bandwidth: median pass, fastest thread count
  double decode_bandwidth_ceiling_tokens_per_s = 0;  // bandwidth / bytes per token
  double decode_bandwidth_efficiency = 0;            // measured / that: the share of pure bandwidth
  double decode_kernel_gb_per_s = 0;      // the model's matvecs, weight bytes/s (device threads)
  double decode_kernel_ceiling_tokens_per_s = 0;
  double decode_ceiling_tokens_per_s = 0; // the lower of the two above
  std::string decode_bound;               // "bandwidth" or "kernel" ("" when unknown)
  double decode_efficiency = 0;           // measured / ceiling; 0 when not measured
  double bandwidth_at_threads_gb_per_s = 0;  // median read pass with the bench's thread count
  double decode_kernel_at_threads_gb_per_s = 0;
  double decode_ceiling_at_threads_tokens_per_s = 0;
  std::string decode_bound_at_threads;
  double decode_efficiency_at_threads = 0;
  double decode_achieved_gb_per_s = 0;    // measured tokens/s x bytes per token
  // prefill (pp): compute-bound
  double prefill_flop_per_token = 0;
  double prefill_mean_context = 0;
  std::string prefill_compute_basis;      // "model shapes ..." or "generic ..." : which rates the ceiling used
  double prefill_compute_gflop_per_s = 0; // FLOPs per token / ceiling time per token
  double prefill_ceiling_tokens_per_s = 0;
  double prefill_efficiency = 0;
  double prefill_achieved_gflop_per_s = 0;
  // load: storage-bound
  uint64_t model_file_bytes = 0;
  double load_ceiling_ms = 0;             // file bytes / cold read rate (warm when cold is unavailable)
  std::string load_ceiling_basis;         // "cold", "warm" or "unavailable: ..."
  double load_efficiency = 0;             // ceiling / measured load time
  std::vector<std::string> notes;         // approximations and why a figure is missing
  // Honesty marks. A rate above its ceiling by more than probe::kSuspectMargin means the ceiling is
  // wrong (probed while the machine was slower, or contended), so that efficiency is not a
  // figure anywhere (0 here, null in JSON): it reads "ceiling suspect", with the measured /
  // ceiling ratio kept for the record and the command that measures the ceiling again.
  bool decode_ceiling_suspect = false;
  bool prefill_ceiling_suspect = false;
  double decode_over_ceiling = 0;   // measured / ceiling, when suspect
  double prefill_over_ceiling = 0;
  std::string remeasure_command;    // when either is suspect
  // The bytes a token reads fit in the last-level cache: DRAM bandwidth bounds nothing, and
  // decode is judged against the kernel probe alone, which runs on the model's own matrices
  // and so gets the same help from the cache as a generated token.
  bool decode_cache_resident = false;
  // What predict said of this test before it ran (app::bench_prediction, docs/predict.md:
  // its own document); null when none.
  nlohmann::json prediction;
  // A run that fell back to a lower CPU variant: this test's ceilings on the same device with
  // the best variant it can run ({"variant", "prefill_ceiling_tokens_per_s",
  // "decode_ceiling_tokens_per_s", "decode_bound"}), from that variant's probe, so explain
  // estimates the fallback's cost from the run alone. Null otherwise.
  nlohmann::json best_variant;
  // Keys to_json writes that the document this roofline was read from did not have, one
  // bit each: a result of an earlier release lacks the suspect marks and the cache flag,
  // which it never checked, so they stay absent rather than read "false". 0 when computed.
  uint64_t absent_keys = 0;
};

nlohmann::json to_json(const Roofline& roofline);
// The inverse: what to_json writes as null (not measured) reads as 0 or "", as the struct
// keeps it; a key a result of an earlier release lacks reads the same way.
Roofline roofline_from_json(const nlohmann::json& j);
// A test's roofline: an object; nullopt for anything else (null: no ceilings).
std::optional<Roofline> roofline_optional_from_json(const nlohmann::json& j);

}  // namespace edgeprobe::result
