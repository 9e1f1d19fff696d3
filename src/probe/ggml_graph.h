#pragma once
// Internal to the probe: what its hand-built ggml graphs (the kernel probe, the GPU's
// bandwidth) share. Pulls in ggml's headers, so only probe .cpp files include it.
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace edgeprobe::probe::ggml_graph {

struct CtxDeleter {
  void operator()(ggml_context* c) const { ggml_free(c); }
};
struct BufDeleter {
  void operator()(ggml_backend_buffer_t b) const { ggml_backend_buffer_free(b); }
};
struct BackendDeleter {
  void operator()(ggml_backend_t b) const { ggml_backend_free(b); }
};
using CtxPtr = std::unique_ptr<ggml_context, CtxDeleter>;
using BufPtr = std::unique_ptr<ggml_backend_buffer, BufDeleter>;
using BackendPtr = std::unique_ptr<ggml_backend, BackendDeleter>;

// A metadata-only context for n_tensors tensors and, when graph_size > 0, one graph of that
// many nodes (the data lives in backend buffers).
inline CtxPtr new_ctx(size_t n_tensors, size_t graph_size) {
  ggml_init_params params{};
  params.mem_size = ggml_tensor_overhead() * n_tensors + (graph_size ? ggml_graph_overhead_custom(graph_size, false) : 0);
  params.mem_buffer = nullptr;
  params.no_alloc = true;
  return CtxPtr(ggml_init(params));
}

// Small, well-scaled values (a cheap LCG): throughput does not depend on them, but NaNs or
// denormals would.
inline void fill_random(std::vector<float>& v, uint32_t seed) {
  uint32_t s = seed;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = (static_cast<float>(s >> 8) / 16777216.0f - 0.5f) * 0.2f;
  }
}

// The device a probe runs on, with its backend: the loaded CPU variant ("" device), or a
// GPU device by ggml's name ("Vulkan0"). threads: the CPU backend's (0 on a GPU, or when
// the CPU backend has no setter).
struct OpenBackend {
  std::string variant;  // the CPU variant that loaded; "" on a GPU
  ggml_backend_dev_t dev = nullptr;
  BackendPtr backend;
  int threads = 0;
};

// Throws Error(kEnvironment) naming what is missing; a GPU name ggml does not know is
// Error(kBadInput) listing the devices it does.
OpenBackend open_backend(const std::string& device, const std::string& variant, const std::string& backend_dir,
                         int threads_wanted);

}  // namespace edgeprobe::probe::ggml_graph
