#pragma once
#include <string>
#include <vector>

#include "core/text.h"  // shell_join: the commands doctor prints
#include "core/context_defaults.h"

namespace edgeprobe::doctor {

// The llama.cpp settings a run used: what doctor diagnoses and what --tune searches.
// Flag names and values are edgeprobe bench's, which are llama-bench's.
struct RunConfig {
  int threads = 0;           // resolved before use; 0 only before resolution
  std::string cpu_mask;      // hex, "" = no mask
  int cpu_strict = 0;
  int poll = kDefaultPoll;
  int n_batch = kDefaultBatch;
  int n_ubatch = kDefaultUbatch;
  std::string flash_attn = "auto";  // "0", "1" or "auto"
  std::string type_k = kDefaultCacheType, type_v = kDefaultCacheType;
  bool use_mmap = true;
  std::string cpu_variant;   // "" = the best for this CPU
  int n_gpu_layers = kDefaultGpuLayers;  // -ngl; -1 = all
  std::string devices;                   // -dev; "" = llama.cpp's choice, "none" = CPU only
  bool op_offload = true;                // -nopo 1 turns it off

  // The settings as `edgeprobe bench` arguments (only those that differ from the
  // defaults, so the command line stays readable).
  std::vector<std::string> bench_args() const;
  // "-t 2 -C 0x3 --cpu-strict 1": the same as text.
  std::string flags_text() const;
  // The same settings for llama.cpp's own tools (llama-bench / llama-cli flags), and the
  // environment or build change a variant needs (llama.cpp has no --cpu-variant flag).
  std::string llama_cpp_flags_text() const;
  bool operator==(const RunConfig&) const = default;
};

// ggml's -C mask for a set of CPUs: hex, bit i = CPU i ({0,1} -> "0x3").
std::string cpu_mask_of(const std::vector<int>& cpus);


}  // namespace edgeprobe::doctor
