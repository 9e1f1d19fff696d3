#pragma once
// Only for the two places that build ggml graphs by hand (the backend self-test, the kernel
// probe): it pulls in ggml-backend.h, which nothing above the engine should see.
#include <ggml-backend.h>

namespace edgeprobe::engine {

// The buffer type llama.cpp would pick for a weight used by `op`: the first of the CPU
// device's extra buffer types (AMX, KleidiAI, CPU_REPACK) that supports the op, else the
// plain CPU buffer (llama-model.cpp, select_buft / buft_supported).
ggml_backend_buffer_type_t weight_buffer_type(ggml_backend_dev_t dev, ggml_tensor* op, ggml_tensor* weight);

}  // namespace edgeprobe::engine
