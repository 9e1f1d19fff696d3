#pragma once
#include <memory>
#include <string>

#include "engine/backend.h"
#include "engine/engine.h"

namespace edgeprobe::engine {

// llama.cpp in-process, on the ggml CPU backend that load_cpu_backend() loaded and the
// GPU backends installed beside it (load_gpu_backends(), called here). Models load with
// the offload ModelOptions asks for (all layers by default, as llama-bench); each context runs on its own ggml threadpool (so -C,
// --cpu-strict and --poll apply, as in llama-bench) and synchronizes after every decode.
// Load failures throw Error(kBadInput) with llama.cpp's own first error line, so a user
// sees "unknown model architecture: 'foo'" rather than a null pointer.
class LlamaEngine : public Engine {
 public:
  explicit LlamaEngine(const CpuBackendInfo& backend) : backend_(backend), gpus_(load_gpu_backends()) {}
  std::string name() const override { return "llama.cpp"; }
  Capabilities capabilities() const override;
  nlohmann::json provenance() const override;
  // The GPU backend libraries and their devices (result::EngineIdentity::gpu_backends, whose
  // to_json is the one writer of their JSON).
  const std::vector<GpuBackendInfo>& gpu_backends() const { return gpus_; }
  std::unique_ptr<LoadedModel> load(const ModelOptions& options) override;
  const CpuBackendInfo& backend() const { return backend_; }

 private:
  CpuBackendInfo backend_;
  std::vector<GpuBackendInfo> gpus_;
};

// "f16", "q8_0", ... -> the ggml type's number; throws kBadInput for a type llama.cpp's
// KV cache cannot hold.
int parse_cache_type(const std::string& name);

}  // namespace edgeprobe::engine
