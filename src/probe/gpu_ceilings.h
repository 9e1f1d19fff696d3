#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "probe/ceilings.h"

// A GPU's own ceilings, measured through ggml on that device's backend, so a run that
// offloaded gets the roofline and efficiencies a CPU run has (docs/gpu.md):
//  - bandwidth: f32 matrix-vector products over buffers in device memory ("read", the op a
//    generated token streams its weights with: the decode roof) and CPY of one half of each
//    buffer onto the other ("copy", bytes counted both ways as STREAM does);
//  - compute: the same ggml_mul_mat shapes the CPU probe times, per weight type; a type the
//    device has no kernel for is named (llama.cpp runs it on the CPU);
//  - the model's own kernels, through ensure_model_kernels as on the CPU.
// They live in the CPU's DeviceCeilings (`gpus`), one entry per device, cached with it.
namespace edgeprobe::probe {

struct GpuBandwidthOptions {
  uint64_t buffer_bytes = 256ull << 20;  // well past any GPU's last-level cache
  int min_passes = 5;                    // timed passes after one warm-up
  double min_seconds = 0.15;
  double max_seconds = 3.0;              // stop repeating once a kernel has used this much
};

BandwidthResult measure_gpu_bandwidth(const std::string& device, const std::string& backend_dir,
                                      const GpuBandwidthOptions& options = {});

// The GPU and iGPU devices ggml's backend libraries offer here ("Vulkan0"), in ggml's order.
std::vector<std::string> gpu_device_names(const std::string& backend_dir = "");

// Bandwidth and compute of one GPU device (no model kernels: ensure_gpu_model_kernels).
DeviceCeilings measure_gpu_ceilings(const std::string& device, const ProbeOptions& options);

// Measures the named devices that `host` lacks (all of them again when `refresh`; a stored
// figure that is higher stays unless options.replace), adds them to host.gpus and rewrites
// the cache. Returns how many were measured.
int ensure_gpu_ceilings(DeviceCeilings& host, const std::vector<std::string>& devices, const ProbeOptions& options,
                        bool refresh);

}  // namespace edgeprobe::probe
