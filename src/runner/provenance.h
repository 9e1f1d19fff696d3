#pragma once
#include <string>

#include "engine/backend.h"
#include "model/gguf_info.h"
#include "result/result.h"

namespace edgeprobe::runner {

// Everything that says what was measured and on what: versions, the ggml CPU variant
// that actually loaded, the CPU, the host. Models are added with model_identity().
result::Provenance make_provenance(const engine::CpuBackendInfo& backend, const std::string& command_line);
// Identity of a model file: SHA-256, size, parameter count, tensor-type histogram.
result::ModelIdentity model_identity(const model::GgufInfo& info, bool hash);
std::string utc_now_rfc3339();

}  // namespace edgeprobe::runner
