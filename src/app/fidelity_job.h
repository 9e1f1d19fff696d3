#pragma once
#include <string>

#include "app/job.h"
#include "app/plan.h"
#include "fidelity/fidelity.h"

namespace edgeprobe::app {

// `edgeprobe fidelity` as a function of its settings (docs/fidelity.md).
struct FidelityPlan {
  std::string model;      // spec: path or synth:...
  std::string reference;  // spec of a reference model, or a stored reference file
  std::string text;       // "" = fidelity::default_text_path()
  fidelity::ChunkSettings chunks;
  bool n_ctx_given = false;
  int n_threads = 0;                       // 0 = the device's default
  bool op_offload = true;                  // -nopo 1: false (both contexts)
  engine::ModelOptions model_options;      // offload of the model (and of the reference, unless...)
  int reference_gpu_layers = -2;           // -2: as the model's
  std::string reference_devices = "\x01";  // "\x01": as the model's
  // The reference computed in a child process on this ggml CPU variant (the variant is
  // chosen once per process), stored compactly and compared against: the reference's
  // figures are then those of a stored reference (KLD a lower bound).
  std::string reference_cpu_variant;
  std::string save_reference;  // write the compact reference of `model` instead of comparing
  int top_k = fidelity::kDefaultTopK;
  int samples = fidelity::kDefaultSamples;
  Environment env;  // the CPU variant
  // Also measure llama.cpp's own quantization of the reference to the model's file type
  // (made here, cached) and judge the model's KLD against it (--check-quantization).
  bool check_quantization = false;
};

// Resolves and checks both files (our GGUF header reader first: a missing, truncated or
// hostile file is one line, exit 2), refuses a reference of another architecture or
// vocabulary, loads both, measures. Throws Error.
fidelity::Report run_fidelity(const FidelityPlan& plan, const JobContext& context);

}  // namespace edgeprobe::app
