#pragma once
#include <string>

namespace edgeprobe::model {

// A user's GGUF file (an f16 or f32 as converted) quantized with llama.cpp's quantizer on
// first use, cached in default_model_cache_dir() under the source's SHA-256, so the same
// file asked for twice is quantized once and an edited file is not taken for the old one.
// `source_sha256` is the source's (the caller has usually hashed it already). Throws
// Error(kBadInput) for an unknown quantization, kEnvironment when llama.cpp fails.
std::string quantized_copy(const std::string& source, const std::string& source_sha256,
                           const std::string& quant, int n_threads);

}  // namespace edgeprobe::model
