#pragma once
#include <string>

#include "core/fs.h"
#include "model/gguf_info.h"
#include "result/result.h"

namespace edgeprobe::runner {

// Everything that says what was measured and on what: versions, the ggml CPU variant
// that actually loaded, the CPU, the host. Models are added with model_identity().
// The engine object comes from the engine that runs the workload (Engine::identity()).
result::Provenance make_provenance(const result::EngineIdentity& engine, const std::string& command_line);
// The device is platform::detect_device's (platform/device_identity.h).
// Identity of a model file: SHA-256, size, parameter count, tensor-type histogram.
result::ModelIdentity model_identity(const model::GgufInfo& info, bool hash);

}  // namespace edgeprobe::runner
