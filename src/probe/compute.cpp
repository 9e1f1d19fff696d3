#include "probe/compute.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "core/schedstat.h"
#include "core/stats.h"
#include "engine/backend.h"
#include "engine/weight_buffer.h"
#include "probe/contention.h"
#include "probe/ggml_graph.h"

namespace edgeprobe::probe {
namespace {

using ggml_graph::BufPtr;
using ggml_graph::CtxPtr;
using ggml_graph::fill_random;
using ggml_graph::new_ctx;
using ggml_graph::open_backend;

bool type_from_name(const std::string& name, ggml_type& out) {
  for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
    const char* n = ggml_type_name(static_cast<ggml_type>(t));
    if (n && name == n) {
      out = static_cast<ggml_type>(t);
      return true;
    }
  }
  return false;
}

double process_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// An unlinked file the probe's weights are written to and then mapped from, read-only.
// llama.cpp maps a model file by default, so the weights it does not repack are page-cache
// pages, and those can stream much faster than ggml's own allocation: on this project's VM
// 1.4x (the page cache holds large folios, an allocation 4 KiB pages). A decode probe
// must read from the kind of memory the engine reads.
class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (addr_) munmap(addr_, size_);
    if (fd_ >= 0) close(fd_);
  }
  // A file of `size` bytes, its space reserved; false when the directory takes no such
  // file (read-only, full), and the caller then allocates instead.
  bool create(const std::string& dir, uint64_t size) {
    std::string path = dir + "/edgeprobe-weights-XXXXXX";
    fd_ = mkostemp(path.data(), O_CLOEXEC);
    if (fd_ < 0) return false;
    unlink(path.c_str());  // gone when closed, even if this process is killed
    return posix_fallocate(fd_, 0, static_cast<off_t>(size)) == 0;
  }
  bool write_at(uint64_t offset, const uint8_t* data, size_t n) {
    while (n > 0) {
      const ssize_t w = pwrite(fd_, data, n, static_cast<off_t>(offset));
      if (w <= 0) return false;
      data += w;
      n -= static_cast<size_t>(w);
      offset += static_cast<uint64_t>(w);
    }
    return true;
  }
  uint8_t* map(size_t size) {
    void* a = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd_, 0);
    if (a == MAP_FAILED) return nullptr;
    addr_ = a;
    size_ = size;
    return static_cast<uint8_t*>(a);
  }

 private:
  int fd_ = -1;
  void* addr_ = nullptr;
  size_t size_ = 0;
};

// One matrix's bytes: fixed pseudo-random values in `type`'s encoding.
std::vector<uint8_t> weight_bytes_of(ggml_type type, const MatrixShape& m, uint32_t seed) {
  std::vector<uint8_t> data(ggml_row_size(type, m.cols) * static_cast<size_t>(m.rows));
  std::vector<float> src(static_cast<size_t>(m.rows * m.cols));
  fill_random(src, seed);
  if (type == GGML_TYPE_F32) {
    std::memcpy(data.data(), src.data(), data.size());
  } else if (type == GGML_TYPE_F16) {
    ggml_fp32_to_fp16_row(src.data(), reinterpret_cast<ggml_fp16_t*>(data.data()), m.rows * m.cols);
  } else {
    ggml_quantize_chunk(type, src.data(), data.data(), 0, m.rows, m.cols, nullptr);
  }
  return data;
}

// One graph of mul_mats: `count` weights of each shape, each times its own f32 activations of
// `tokens` columns (one activation tensor per input width, shared as in a transformer
// layer), timed over `reps` runs after a warm-up. Weights of a shape share one quantized
// source, copied into each (repacked where the buffer repacks), so their values do not
// matter but their bytes are distinct in memory. With `map_dir`, weights in the device's
// plain buffer type are held in a file mapped from there (MappedFile), as a mapped model's
// are; else, or when the file cannot be made, in ggml's allocation.
struct TimedGraph {
  std::string error;
  std::string weight_buffer;
  std::string weight_memory;  // "mapped file" or "allocated"
  uint64_t weight_bytes = 0;
  int matrices = 0;
  double flop = 0;
  std::vector<double> seconds;
  double cpu_share = 0;
};

TimedGraph time_matmuls(ggml_backend_dev_t dev, ggml_backend_t backend, const std::vector<MatrixShape>& shapes,
                        int64_t tokens, int threads, int reps, double max_seconds, const std::string& map_dir = "") {
  TimedGraph g;
  std::vector<ggml_type> types;
  for (const auto& m : shapes) {
    ggml_type type;
    if (!type_from_name(m.type, type)) {
      g.error = "unknown ggml type " + m.type;
      return g;
    }
    if (ggml_quantize_requires_imatrix(type)) {
      g.error = m.type + " needs an importance matrix to quantize";
      return g;
    }
    if (m.cols % ggml_blck_size(type) != 0) {
      g.error = fmt::format("cols {} not a multiple of the block size {}", m.cols, ggml_blck_size(type));
      return g;
    }
    if (m.count < 1 || m.rows < 1 || m.cols < 1 || tokens < 1) {
      g.error = "empty shape";
      return g;
    }
    types.push_back(type);
  }
  size_t n_weights = 0;
  std::vector<int64_t> widths;
  for (const auto& m : shapes) {
    n_weights += static_cast<size_t>(m.count);
    if (std::find(widths.begin(), widths.end(), m.cols) == widths.end()) widths.push_back(m.cols);
  }
  std::vector<CtxPtr> ctx_w;  // one per shape: each may need its own buffer type
  const size_t graph_size = std::max<size_t>(n_weights, 16) * 2;
  CtxPtr ctx_g = new_ctx(n_weights + widths.size(), graph_size);
  std::vector<ggml_tensor*> xs;
  for (int64_t w : widths) xs.push_back(ggml_new_tensor_2d(ctx_g.get(), GGML_TYPE_F32, w, tokens));
  ggml_cgraph* graph = ggml_new_graph_custom(ctx_g.get(), graph_size, false);
  std::vector<std::vector<ggml_tensor*>> weights(shapes.size());
  MappedFile file;  // outlives the buffers that point into it
  std::vector<BufPtr> buffers;
  std::vector<std::string> buffer_names;
  std::vector<ggml_backend_buffer_type_t> bufts;
  std::vector<bool> mapped(shapes.size(), false);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& m = shapes[i];
    ctx_w.push_back(new_ctx(static_cast<size_t>(m.count), 0));
    const size_t xi = static_cast<size_t>(std::find(widths.begin(), widths.end(), m.cols) - widths.begin());
    ggml_tensor* first_op = nullptr;
    for (int c = 0; c < m.count; ++c) {
      ggml_tensor* w = ggml_new_tensor_2d(ctx_w.back().get(), types[i], m.cols, m.rows);
      ggml_tensor* y = ggml_mul_mat(ctx_g.get(), w, xs[xi]);
      ggml_build_forward_expand(graph, y);
      weights[i].push_back(w);
      if (!first_op) first_op = y;
    }
    ggml_backend_buffer_type_t buft = engine::weight_buffer_type(dev, first_op, weights[i][0]);
    bufts.push_back(buft);
    const std::string name = ggml_backend_buft_name(buft);
    if (std::find(buffer_names.begin(), buffer_names.end(), name) == buffer_names.end()) buffer_names.push_back(name);
    // A repacking buffer is ggml's allocation in llama.cpp too; only plain weights are mapped.
    mapped[i] = !map_dir.empty() && buft == ggml_backend_dev_buffer_type(dev) && ggml_backend_buft_is_host(buft);
  }
  // Where each mapped weight sits in the file. The file is made with its space reserved
  // before any data, so the choice between it and an allocation is made once, here.
  std::vector<std::vector<uint64_t>> offsets(shapes.size());
  uint64_t file_bytes = 0;
  size_t largest = 0;
  for (size_t i = 0; i < shapes.size(); ++i)
    if (mapped[i])
      for (ggml_tensor* w : weights[i]) {
        const size_t align = ggml_backend_buft_get_alignment(bufts[i]);
        file_bytes = (file_bytes + align - 1) / align * align;
        offsets[i].push_back(file_bytes);
        const size_t n = ggml_backend_buft_get_alloc_size(bufts[i], w);
        file_bytes += n;
        largest = std::max(largest, n);
      }
  // No file there (read-only, full): ggml's allocation, and the point says so.
  if (file_bytes > 0 && !file.create(map_dir, file_bytes)) mapped.assign(shapes.size(), false);
  g.weight_memory = std::find(mapped.begin(), mapped.end(), true) != mapped.end() ? "mapped file" : "allocated";
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (mapped[i]) continue;
    buffers.emplace_back(ggml_backend_alloc_ctx_tensors_from_buft(ctx_w[i].get(), bufts[i]));
    if (!buffers.back()) {
      g.error = fmt::format("ggml could not allocate {} {} weights", shapes[i].count, shapes[i].type);
      return g;
    }
  }
  for (const auto& n : buffer_names) g.weight_buffer += (g.weight_buffer.empty() ? "" : "+") + n;
  BufPtr buf_g(ggml_backend_alloc_ctx_tensors(ctx_g.get(), backend));
  if (!buf_g) {
    g.error = "ggml could not allocate the activations";
    return g;
  }
  // A GPU backend without a kernel for a weight type would fail the graph (llama.cpp runs
  // such matmuls on the CPU instead, which is the fallback bench reports); say so here.
  for (size_t i = 0; i < shapes.size(); ++i)
    for (int n = 0; n < ggml_graph_n_nodes(graph); ++n) {
      ggml_tensor* node = ggml_graph_node(graph, n);
      if (node->src[0] != weights[i][0]) continue;
      if (!ggml_backend_dev_supports_op(dev, node)) {
        g.error = fmt::format("{} has no {} matmul kernel (llama.cpp runs it on the CPU)", ggml_backend_dev_name(dev),
                              shapes[i].type);
        return g;
      }
      break;
    }
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& m = shapes[i];
    const std::vector<uint8_t> data = weight_bytes_of(types[i], m, 1234u + static_cast<uint32_t>(i));
    if (!mapped[i]) {
      for (ggml_tensor* w : weights[i]) ggml_backend_tensor_set(w, data.data(), 0, data.size());  // CPU_REPACK repacks here
    } else {
      for (uint64_t offset : offsets[i])
        if (!file.write_at(offset, data.data(), data.size())) {
          g.error = fmt::format("could not write the {} weights to the file they are mapped from", m.type);
          return g;
        }
    }
    g.weight_bytes += data.size() * static_cast<size_t>(m.count);
    g.matrices += m.count;
    g.flop += 2.0 * static_cast<double>(m.rows) * static_cast<double>(m.cols) * static_cast<double>(tokens) * m.count;
  }
  if (g.weight_memory == "mapped file") {
    uint8_t* base = file.map(file_bytes);
    if (base) buffers.emplace_back(ggml_backend_dev_buffer_from_host_ptr(dev, base, file_bytes, largest));
    if (!base || !buffers.back()) {
      g.error = "could not map the file the weights were written to";
      return g;
    }
    for (size_t i = 0; i < shapes.size(); ++i)
      for (size_t c = 0; mapped[i] && c < weights[i].size(); ++c)
        ggml_backend_tensor_alloc(buffers.back().get(), weights[i][c], base + offsets[i][c]);
  }
  for (size_t i = 0; i < widths.size(); ++i) {
    std::vector<float> act(static_cast<size_t>(widths[i] * tokens));
    fill_random(act, 99u + static_cast<uint32_t>(i));
    ggml_backend_tensor_set(xs[i], act.data(), 0, act.size() * sizeof(float));
  }

  double spent_s = 0, timed_s = 0, timed_cpu_s = 0;
  std::map<int, SchedTimes> sched_from;  // every thread's schedstat from the first timed run
  for (int rep = 0; rep <= reps; ++rep) {
    if (rep == 1) sched_from = process_sched_times();
    const double c0 = process_cpu_s();
    const auto t0 = std::chrono::steady_clock::now();
    const ggml_status status = ggml_backend_graph_compute(backend, graph);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (status != GGML_STATUS_SUCCESS) {
      g.error = fmt::format("ggml_backend_graph_compute failed ({})", static_cast<int>(status));
      return g;
    }
    spent_s += s;
    if (rep > 0) {  // rep 0 warms caches and the thread pool
      g.seconds.push_back(s);
      timed_s += s;
      timed_cpu_s += process_cpu_s() - c0;
    }
    if (rep > 0 && spent_s > max_seconds) break;
  }
  // No contention check on a GPU (cpu_share 0, unknown): its work does not run on the CPUs,
  // and a CPU-type device's (lavapipe's) own threads outnumber the cores.
  if (ggml_backend_dev_type(dev) != GGML_BACKEND_DEVICE_TYPE_CPU) return g;
  // The share of the CPU the threads wanted that they got (schedstat); without schedstat,
  // CPU time over threads x wall (ggml's workers spin while they wait, so an undisturbed
  // run uses ~threads x wall).
  if (const auto share = cpu_share_between(sched_from, process_sched_times()))
    g.cpu_share = *share;
  else if (threads > 0 && timed_s > 0)
    g.cpu_share = std::min(1.0, timed_cpu_s / (timed_s * threads));
  return g;
}

ComputePoint run_type(ggml_backend_dev_t dev, ggml_backend_t backend, const std::string& type_name, int threads,
                      const ComputeOptions& opt) {
  ComputePoint p;
  p.type = type_name;
  p.threads = threads;
  p.rows = opt.rows;
  p.cols = opt.cols;
  p.tokens = opt.tokens;
  const TimedGraph g = time_matmuls(dev, backend, {{type_name, opt.cols, opt.rows, 1}}, opt.tokens, threads, opt.reps,
                                    opt.max_seconds_per_type);
  p.weight_buffer = g.weight_buffer;
  if (!g.error.empty()) {
    p.error = g.error;
    return p;
  }
  std::vector<double> rates;
  for (double s : g.seconds) rates.push_back(g.flop / s / 1e9);
  p.reps = static_cast<int>(rates.size());
  p.best_gflop_per_s = *std::max_element(rates.begin(), rates.end());
  p.median_gflop_per_s = stats::quantile(rates, 0.5);
  p.cpu_share = g.cpu_share;
  return p;
}

}  // namespace

ggml_graph::OpenBackend ggml_graph::open_backend(const std::string& device, const std::string& variant,
                                                 const std::string& backend_dir, int threads_wanted) {
  OpenBackend b;
  if (!device.empty()) {
    // The GPU libraries beside the CPU variants register their devices as they load.
    const auto& backends = engine::load_gpu_backends(backend_dir);
    b.dev = ggml_backend_dev_by_name(device.c_str());
    if (!b.dev || ggml_backend_dev_type(b.dev) == GGML_BACKEND_DEVICE_TYPE_CPU) {
      std::string known;
      for (const auto& g : backends)
        for (const auto& d : g.devices) known += (known.empty() ? "" : ", ") + d.name;
      throw_bad_input("no GPU device '{}' here ({}); 'edgeprobe sysinfo' lists the GPU backends and why one has none",
                      device, known.empty() ? "ggml found none" : "ggml has " + known);
    }
    b.backend.reset(ggml_backend_dev_init(b.dev, nullptr));
    if (!b.backend) throw_environment("ggml_backend_dev_init failed for {}", device);
    return b;
  }
  const auto& info = engine::load_cpu_backend(variant, backend_dir);
  b.variant = info.variant;
  b.dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
  if (!b.dev) throw_environment("compute probe: no ggml CPU device after loading '{}'", info.library_path);
  b.backend.reset(ggml_backend_dev_init(b.dev, nullptr));
  if (!b.backend) throw_environment("compute probe: ggml_backend_dev_init failed for the CPU device");
  // In a GGML_BACKEND_DL build ggml_backend_cpu_set_n_threads lives in the variant's .so,
  // so it is reached through the registry, as llama.cpp does.
  auto set_threads = reinterpret_cast<ggml_backend_set_n_threads_t>(
      ggml_backend_reg_get_proc_address(ggml_backend_dev_backend_reg(b.dev), "ggml_backend_set_n_threads"));
  b.threads = threads_wanted > 0 ? threads_wanted : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (set_threads)
    set_threads(b.backend.get(), b.threads);
  else
    b.threads = 0;
  return b;
}

double ComputeResult::gflop_per_s(const std::string& type) const {
  double best = 0;
  for (const auto& p : points)
    if (p.type == type && p.usable()) best = std::max(best, p.best_gflop_per_s);
  return best;
}

bool ComputePoint::usable() const { return error.empty() && !is_contended(cpu_share); }
bool KernelPoint::usable() const { return error.empty() && !is_contended(cpu_share); }

double ComputeResult::min_cpu_share() const {
  double share = 1;
  for (const auto& p : points)
    if (p.error.empty() && p.cpu_share > 0) share = std::min(share, p.cpu_share);
  return share;
}

ComputeResult measure_compute(const ComputeOptions& options) {
  ComputeResult result;
  auto b = open_backend(options.device, options.variant, options.backend_dir, options.threads);
  result.variant = b.variant;
  if (!options.device.empty())
    result.variant = options.device;  // a GPU's figures are named by the device that ran them
  else if (b.threads == 0)
    result.notes.push_back("CPU backend has no ggml_backend_set_n_threads: ran with its default thread count");
  ggml_backend_dev_t dev = b.dev;
  ggml_backend_t backend_ptr = b.backend.get();
  const int threads = b.threads;
  for (const auto& type : options.types) {
    ComputePoint p = measure_uncontended([&] { return run_type(dev, backend_ptr, type, threads, options); });
    if (!p.error.empty()) result.notes.push_back(type + ": unavailable: " + p.error);
    result.points.push_back(std::move(p));
  }
  if (result.min_cpu_share() < kContendedShare)
    result.notes.push_back(
        fmt::format("other processes competed for the CPUs: ggml's threads got as little as {:.0f}% of the "
                    "CPU time they wanted, measured again up to {} times; a type still contended is kept out "
                    "of the ceilings (edgeprobe probe --refresh on a quiet machine)",
                    result.min_cpu_share() * 100, kContendedRetries));
  return result;
}

nlohmann::json to_json(const ComputeResult& r) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : r.points) {
    nlohmann::json j = {{"type", p.type},
                        {"threads", p.threads},
                        {"rows", p.rows},
                        {"cols", p.cols},
                        {"tokens", p.tokens},
                        {"weight_buffer", p.weight_buffer},
                        {"best_gflop_per_s", p.best_gflop_per_s},
                        {"median_gflop_per_s", p.median_gflop_per_s},
                        {"reps", p.reps},
                        {"cpu_share", p.cpu_share},
                        {"contended", is_contended(p.cpu_share)}};
    if (!p.error.empty()) j["error"] = p.error;
    points.push_back(j);
  }
  return {{"variant", r.variant}, {"points", points}, {"notes", r.notes}};
}

ComputeResult compute_from_json(const nlohmann::json& j) {
  ComputeResult r;
  r.variant = j.value("variant", "");
  for (const auto& p : j.value("points", nlohmann::json::array())) {
    ComputePoint x;
    x.type = p.value("type", "");
    x.threads = p.value("threads", 0);
    x.rows = p.value("rows", int64_t{0});
    x.cols = p.value("cols", int64_t{0});
    x.tokens = p.value("tokens", int64_t{0});
    x.weight_buffer = p.value("weight_buffer", "");
    x.best_gflop_per_s = p.value("best_gflop_per_s", 0.0);
    x.median_gflop_per_s = p.value("median_gflop_per_s", 0.0);
    x.reps = p.value("reps", 0);
    x.cpu_share = p.value("cpu_share", 0.0);
    x.error = p.value("error", "");
    r.points.push_back(x);
  }
  r.notes = j.value("notes", std::vector<std::string>{});
  return r;
}


uint64_t MatrixShape::bytes() const {
  ggml_type t;
  if (!type_from_name(type, t) || cols % ggml_blck_size(t) != 0) return 0;
  return static_cast<uint64_t>(ggml_row_size(t, cols)) * static_cast<uint64_t>(rows) * static_cast<uint64_t>(count);
}

std::string matrices_signature(const std::vector<MatrixShape>& matrices) {
  std::vector<std::string> parts;
  for (const auto& m : matrices) parts.push_back(fmt::format("{}:{}x{}x{}", m.type, m.cols, m.rows, m.count));
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

namespace {

void fill_rates(KernelPoint& p, const TimedGraph& g) {
  p.weight_buffer = g.weight_buffer;
  p.weight_memory = g.weight_memory;
  if (!g.error.empty()) {
    p.error = g.error;
    return;
  }
  p.matrices = g.matrices;
  p.weight_bytes = g.weight_bytes;
  std::vector<double> gflops, gbs;
  for (double s : g.seconds) {
    gflops.push_back(g.flop / s / 1e9);
    gbs.push_back(static_cast<double>(g.weight_bytes) / s / 1e9);
  }
  p.reps = static_cast<int>(g.seconds.size());
  p.best_gflop_per_s = *std::max_element(gflops.begin(), gflops.end());
  p.median_gflop_per_s = stats::quantile(gflops, 0.5);
  p.best_gb_per_s = *std::max_element(gbs.begin(), gbs.end());
  p.median_gb_per_s = stats::quantile(gbs, 0.5);
  p.cpu_share = g.cpu_share;
}

}  // namespace

KernelPoint measure_prefill_kernel(const MatrixShape& shape, int64_t tokens, const KernelOptions& options) {
  KernelPoint p;
  p.phase = "prefill";
  p.type = shape.type;
  p.rows = shape.rows;
  p.cols = shape.cols;
  p.tokens = tokens;
  auto b = open_backend(options.device, options.variant, options.backend_dir, options.threads);
  p.threads = b.threads;
  // One matrix: prefill reuses each weight across the ubatch, so its working set does not matter.
  fill_rates(p, time_matmuls(b.dev, b.backend.get(), {{shape.type, shape.cols, shape.rows, 1}}, tokens, b.threads,
                             options.reps, options.max_seconds));
  return p;
}

KernelPoint measure_decode_kernel(const std::vector<MatrixShape>& matrices, const KernelOptions& options) {
  KernelPoint p;
  p.phase = "decode";
  p.model = matrices_signature(matrices);
  p.tokens = 1;
  std::vector<std::string> types;
  for (const auto& m : matrices) {
    p.model_bytes += m.bytes();
    if (std::find(types.begin(), types.end(), m.type) == types.end()) types.push_back(m.type);
  }
  for (const auto& t : types) p.type += (p.type.empty() ? "" : "+") + t;
  // The model's own matrices, so caches help the probe exactly as much as they help a
  // generated token; thinned in proportion when they exceed the cap (each shape keeps one).
  std::vector<MatrixShape> graph = matrices;
  if (p.model_bytes > options.max_working_set_bytes && options.max_working_set_bytes > 0) {
    const double keep = static_cast<double>(options.max_working_set_bytes) / static_cast<double>(p.model_bytes);
    for (auto& m : graph) m.count = std::max(1, static_cast<int>(std::floor(m.count * keep)));
  }
  auto b = open_backend(options.device, options.variant, options.backend_dir, options.threads);
  p.threads = b.threads;
  fill_rates(
      p, time_matmuls(b.dev, b.backend.get(), graph, 1, b.threads, options.decode_reps, options.max_seconds,
                      options.weights_dir));
  return p;
}

nlohmann::json to_json(const KernelPoint& p) {
  nlohmann::json j = {{"phase", p.phase},
                      {"model", p.model},
                      {"type", p.type},
                      {"rows", p.rows},
                      {"cols", p.cols},
                      {"tokens", p.tokens},
                      {"threads", p.threads},
                      {"matrices", p.matrices},
                      {"weight_bytes", p.weight_bytes},
                      {"model_bytes", p.model_bytes},
                      {"weight_buffer", p.weight_buffer},
                      {"weight_memory", p.weight_memory},
                      {"best_gflop_per_s", p.best_gflop_per_s},
                      {"median_gflop_per_s", p.median_gflop_per_s},
                      {"best_gb_per_s", p.best_gb_per_s},
                      {"median_gb_per_s", p.median_gb_per_s},
                      {"reps", p.reps},
                      {"cpu_share", p.cpu_share},
                      {"contended", is_contended(p.cpu_share)}};
  if (!p.error.empty()) j["error"] = p.error;
  return j;
}

KernelPoint kernel_point_from_json(const nlohmann::json& j) {
  KernelPoint p;
  p.phase = j.value("phase", "");
  p.model = j.value("model", "");
  p.type = j.value("type", "");
  p.rows = j.value("rows", int64_t{0});
  p.cols = j.value("cols", int64_t{0});
  p.tokens = j.value("tokens", int64_t{0});
  p.threads = j.value("threads", 0);
  p.matrices = j.value("matrices", 0);
  p.weight_bytes = j.value("weight_bytes", uint64_t{0});
  p.model_bytes = j.value("model_bytes", uint64_t{0});
  p.weight_buffer = j.value("weight_buffer", "");
  p.weight_memory = j.value("weight_memory", "");
  p.best_gflop_per_s = j.value("best_gflop_per_s", 0.0);
  p.median_gflop_per_s = j.value("median_gflop_per_s", 0.0);
  p.best_gb_per_s = j.value("best_gb_per_s", 0.0);
  p.median_gb_per_s = j.value("median_gb_per_s", 0.0);
  p.reps = j.value("reps", 0);
  p.cpu_share = j.value("cpu_share", 0.0);
  p.error = j.value("error", "");
  return p;
}

}  // namespace edgeprobe::probe
