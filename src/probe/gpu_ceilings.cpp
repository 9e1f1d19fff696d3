#include "probe/gpu_ceilings.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>

#include "core/clock.h"
#include "core/error.h"
#include "core/stats.h"
#include "engine/backend.h"
#include "probe/contention.h"
#include "probe/ggml_graph.h"

namespace edgeprobe::probe {
namespace {

using ggml_graph::BufPtr;
using ggml_graph::CtxPtr;

// Graphs that repeat one memory-bound op over the buffers in device memory, so one
// submission moves enough bytes that the launch cost does not count.
constexpr int kOpsPerGraph = 2;

struct Kernel {
  const char* name;
  ggml_cgraph* graph;
  double bytes;  // per graph run
};

BandwidthPoint time_kernel(ggml_backend_t backend, const Kernel& k, const GpuBandwidthOptions& o) {
  BandwidthPoint p;
  p.kernel = k.name;
  p.scope = "device";
  std::vector<double> rates;
  double spent = 0;
  for (int pass = 0;; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    if (ggml_backend_graph_compute(backend, k.graph) != GGML_STATUS_SUCCESS)
      throw_environment("the GPU's {} graph failed to run", k.name);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    spent += s;
    if (pass > 0) rates.push_back(k.bytes / s / 1e9);  // pass 0 warms up (pipelines, caches)
    const bool enough = static_cast<int>(rates.size()) >= o.min_passes && spent >= o.min_seconds;
    if (pass > 0 && (enough || spent > o.max_seconds)) break;
  }
  p.passes = static_cast<int>(rates.size());
  p.best_gb_per_s = *std::max_element(rates.begin(), rates.end());
  p.median_gb_per_s = stats::quantile(rates, 0.5);
  // No contention check (cpu_share 0, unknown): a GPU's work does not run on the CPUs, and
  // a CPU-type device's (lavapipe's) own threads outnumber the cores, which would read as
  // contention on a quiet machine.
  return p;
}

}  // namespace

BandwidthResult measure_gpu_bandwidth(const std::string& device, const std::string& backend_dir,
                                      const GpuBandwidthOptions& o) {
  auto b = ggml_graph::open_backend(device, "", backend_dir, 0);
  BandwidthResult r;
  r.kernel_isa = "ggml " + device;
  // Several tensors rather than one: a GPU caps the range one shader binding may address
  // (Vulkan's maxStorageBufferRange, 128 MiB on lavapipe), and a model's weights are many
  // tensors anyway.
  constexpr int kTensors = 8;
  constexpr int64_t kRow = 4096;  // f32 elements per row: 16 KiB
  const int64_t rows = std::max<int64_t>(2, static_cast<int64_t>(o.buffer_bytes / kTensors / (kRow * sizeof(float))) / 2 * 2);
  // Room for two graphs: one graph's overhead at twice the size, plus headroom for the
  // second's object header and hash table rounding.
  CtxPtr ctx = ggml_graph::new_ctx(kTensors * (1 + 2 + 2 * kOpsPerGraph) + 17, 4 * kTensors * kOpsPerGraph + 16);
  ggml_cgraph* read = ggml_new_graph_custom(ctx.get(), 2 * kTensors * kOpsPerGraph, false);
  ggml_cgraph* copy = ggml_new_graph_custom(ctx.get(), 2 * kTensors * kOpsPerGraph, false);
  double read_bytes = 0, copy_bytes = 0;
  ggml_tensor* vector = nullptr;
  for (int t = 0; t < kTensors; ++t) {
    ggml_tensor* buffer = ggml_new_tensor_2d(ctx.get(), GGML_TYPE_F32, kRow, rows);
    if (t == 0) vector = ggml_new_tensor_1d(ctx.get(), GGML_TYPE_F32, kRow);
    const size_t half = ggml_nbytes(buffer) / 2;
    ggml_tensor* lower = ggml_view_1d(ctx.get(), buffer, kRow * rows / 2, 0);
    ggml_tensor* upper = ggml_view_1d(ctx.get(), buffer, kRow * rows / 2, half);
    for (int i = 0; i < kOpsPerGraph; ++i) {
      ggml_build_forward_expand(read, ggml_mul_mat(ctx.get(), buffer, vector));
      ggml_build_forward_expand(copy, ggml_cpy(ctx.get(), lower, upper));
      read_bytes += static_cast<double>(ggml_nbytes(buffer));
      copy_bytes += 2.0 * static_cast<double>(half);
    }
    r.buffer_bytes += ggml_nbytes(buffer);
  }
  for (ggml_cgraph* g : {read, copy})
    for (int n = 0; n < ggml_graph_n_nodes(g); ++n)
      if (!ggml_backend_supports_op(b.backend.get(), ggml_graph_node(g, n)))
        throw_environment("{} cannot run ggml's {} on {} MiB tensors (a backend without it has no bandwidth probe here)",
                          device, ggml_op_desc(ggml_graph_node(g, n)), r.buffer_bytes / kTensors >> 20);
  BufPtr buf(ggml_backend_alloc_ctx_tensors(ctx.get(), b.backend.get()));
  if (!buf) throw_environment("{} could not allocate {} MiB for the bandwidth probe", device, r.buffer_bytes >> 20);
  ggml_backend_buffer_clear(buf.get(), 0);
  r.points.push_back(measure_uncontended([&] { return time_kernel(b.backend.get(), {"read", read, read_bytes}, o); }));
  r.points.push_back(measure_uncontended([&] { return time_kernel(b.backend.get(), {"copy", copy, copy_bytes}, o); }));
  summarize_points(r);
  return r;
}

std::vector<std::string> gpu_device_names(const std::string& backend_dir) {
  std::vector<std::string> names;
  for (const auto& backend : engine::load_gpu_backends(backend_dir))
    for (const auto& d : backend.devices)
      if (d.type == "gpu" || d.type == "igpu") names.push_back(d.name);
  return names;
}

DeviceCeilings measure_gpu_ceilings(const std::string& device, const ProbeOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  DeviceCeilings c;
  c.device = device;
  for (const auto& backend : engine::load_gpu_backends(options.backend_dir))
    for (const auto& d : backend.devices)
      if (d.name == device) {
        c.device_description = d.description;
        c.memory_bytes = d.memory_total;
      }
  c.measured_at_utc = utc_now_rfc3339();
  auto progress = [&](const std::string& step, size_t done) {
    if (options.progress) options.progress(step, done, 2);
  };
  // Each figure apart: a backend without one op still gets the other.
  progress(fmt::format("{}: memory bandwidth through ggml", device), 0);
  try {
    c.bandwidth = measure_gpu_bandwidth(device, options.backend_dir);
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kBadInput) throw;
    c.bandwidth.notes.push_back(std::string("unavailable: ") + e.what());
  }
  progress(fmt::format("{}: matrix compute through ggml", device), 1);
  ComputeOptions co = options.compute;
  co.device = device;
  co.backend_dir = options.backend_dir;
  co.threads = 0;
  c.compute_status = "unavailable: not requested";
  if (options.measure_compute) {
    try {
      c.compute = measure_compute(co);
      c.compute_status = "measured";
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kBadInput) throw;
      c.compute_status = std::string("unavailable: ") + e.what();
    }
  }
  c.probe_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

int ensure_gpu_ceilings(DeviceCeilings& host, const std::vector<std::string>& devices, const ProbeOptions& options,
                        bool refresh) {
  int measured = 0;
  for (const auto& device : devices) {
    DeviceCeilings* have = host.gpu(device);
    if (have && !refresh) continue;
    DeviceCeilings fresh = measure_gpu_ceilings(device, options);
    fresh.device_key = host.device_key;
    fresh.build_key = host.build_key;
    if (have) {
      // As on the CPU: a refresh never lowers a stored figure unless asked to, and the
      // model kernels stay (ensure_model_kernels measures them again).
      *have = options.replace ? DeviceCeilings(fresh) : keep_higher(*have, std::move(fresh));
      if (options.replace) have->kernels.clear();
    } else {
      host.gpus.push_back(std::move(fresh));
    }
    ++measured;
  }
  if (measured > 0) save_cache(host);
  return measured;
}

}  // namespace edgeprobe::probe
