#include "probe/compute.h"

#include <fmt/format.h>
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "core/stats.h"
#include "engine/backend.h"

namespace edgeprobe::probe {
namespace {

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

CtxPtr new_ctx(size_t n_tensors, bool graph) {
  ggml_init_params params{};
  params.mem_size = ggml_tensor_overhead() * n_tensors + (graph ? ggml_graph_overhead() : 0);
  params.mem_buffer = nullptr;
  params.no_alloc = true;
  return CtxPtr(ggml_init(params));
}

double process_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// Small, well-scaled values (a cheap LCG): throughput does not depend on them, but NaNs or
// denormals would.
void fill_random(std::vector<float>& v, uint32_t seed) {
  uint32_t s = seed;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = (static_cast<float>(s >> 8) / 16777216.0f - 0.5f) * 0.2f;
  }
}

// The buffer type llama.cpp would pick for a weight used by MUL_MAT: the first of the CPU
// device's extra buffer types (AMX, KleidiAI, CPU_REPACK) that supports the op, else the
// plain CPU buffer (llama-model.cpp, select_buft / buft_supported).
ggml_backend_buffer_type_t pick_weight_buft(ggml_backend_dev_t dev, ggml_tensor* op, ggml_tensor* weight) {
  ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
  auto get_extra = reinterpret_cast<ggml_backend_dev_get_extra_bufts_t>(
      ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts"));
  if (get_extra) {
    for (ggml_backend_buffer_type_t* it = get_extra(dev); it && *it; ++it) {
      BufPtr dummy(ggml_backend_buft_alloc_buffer(*it, 0));
      weight->buffer = dummy.get();
      const bool ok = ggml_backend_dev_supports_op(dev, op);
      weight->buffer = nullptr;
      if (ok) return *it;
    }
  }
  return ggml_backend_dev_buffer_type(dev);
}

ComputePoint run_type(ggml_backend_dev_t dev, ggml_backend_t backend, const std::string& type_name, int threads,
                      const ComputeOptions& opt) {
  ComputePoint p;
  p.type = type_name;
  p.threads = threads;
  p.rows = opt.rows;
  p.cols = opt.cols;
  p.tokens = opt.tokens;
  ggml_type type;
  if (!type_from_name(type_name, type)) {
    p.error = "unknown ggml type";
    return p;
  }
  if (ggml_quantize_requires_imatrix(type)) {
    p.error = "type needs an importance matrix to quantize";
    return p;
  }
  if (opt.cols % ggml_blck_size(type) != 0) {
    p.error = fmt::format("cols {} not a multiple of the block size {}", opt.cols, ggml_blck_size(type));
    return p;
  }
  CtxPtr ctx_w = new_ctx(1, false);
  CtxPtr ctx_g = new_ctx(4, true);
  ggml_tensor* w = ggml_new_tensor_2d(ctx_w.get(), type, opt.cols, opt.rows);
  ggml_tensor* x = ggml_new_tensor_2d(ctx_g.get(), GGML_TYPE_F32, opt.cols, opt.tokens);
  ggml_tensor* y = ggml_mul_mat(ctx_g.get(), w, x);
  ggml_cgraph* graph = ggml_new_graph(ctx_g.get());
  ggml_build_forward_expand(graph, y);

  ggml_backend_buffer_type_t buft = pick_weight_buft(dev, y, w);
  p.weight_buffer = ggml_backend_buft_name(buft);
  BufPtr buf_w(ggml_backend_alloc_ctx_tensors_from_buft(ctx_w.get(), buft));
  BufPtr buf_g(ggml_backend_alloc_ctx_tensors(ctx_g.get(), backend));
  if (!buf_w || !buf_g) {
    p.error = "ggml could not allocate the tensors";
    return p;
  }
  {
    std::vector<float> src(static_cast<size_t>(opt.rows * opt.cols));
    fill_random(src, 1234u);
    std::vector<uint8_t> data(ggml_nbytes(w));
    if (type == GGML_TYPE_F32) {
      std::memcpy(data.data(), src.data(), data.size());
    } else if (type == GGML_TYPE_F16) {
      ggml_fp32_to_fp16_row(src.data(), reinterpret_cast<ggml_fp16_t*>(data.data()), opt.rows * opt.cols);
    } else {
      ggml_quantize_chunk(type, src.data(), data.data(), 0, opt.rows, opt.cols, nullptr);
    }
    ggml_backend_tensor_set(w, data.data(), 0, data.size());  // CPU_REPACK repacks here
    std::vector<float> act(static_cast<size_t>(opt.cols * opt.tokens));
    fill_random(act, 99u);
    ggml_backend_tensor_set(x, act.data(), 0, act.size() * sizeof(float));
  }

  const double flop = 2.0 * static_cast<double>(opt.rows) * static_cast<double>(opt.cols) * static_cast<double>(opt.tokens);
  std::vector<double> rates;
  double spent_s = 0, timed_s = 0, timed_cpu_s = 0;
  for (int rep = 0; rep <= opt.reps; ++rep) {
    const double c0 = process_cpu_s();
    const auto t0 = std::chrono::steady_clock::now();
    const ggml_status status = ggml_backend_graph_compute(backend, graph);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (status != GGML_STATUS_SUCCESS) {
      p.error = fmt::format("ggml_backend_graph_compute failed ({})", static_cast<int>(status));
      return p;
    }
    spent_s += s;
    if (rep > 0) {  // rep 0 warms caches and the thread pool
      rates.push_back(flop / s / 1e9);
      timed_s += s;
      timed_cpu_s += process_cpu_s() - c0;
    }
    if (rep > 0 && spent_s > opt.max_seconds_per_type) break;
  }
  p.reps = static_cast<int>(rates.size());
  p.best_gflop_per_s = *std::max_element(rates.begin(), rates.end());
  p.median_gflop_per_s = stats::quantile(rates, 0.5);
  // ggml's worker threads spin while they wait, so an undisturbed run uses ~threads x wall.
  if (threads > 0 && timed_s > 0) p.cpu_share = std::min(1.0, timed_cpu_s / (timed_s * threads));
  return p;
}

}  // namespace

double ComputeResult::gflop_per_s(const std::string& type) const {
  double best = 0;
  for (const auto& p : points)
    if (p.type == type && p.error.empty()) best = std::max(best, p.best_gflop_per_s);
  return best;
}

double ComputeResult::min_cpu_share() const {
  double share = 1;
  for (const auto& p : points)
    if (p.error.empty() && p.cpu_share > 0) share = std::min(share, p.cpu_share);
  return share;
}

ComputeResult measure_compute(const ComputeOptions& options) {
  ComputeResult result;
  const auto& info = engine::load_cpu_backend(options.variant, options.backend_dir);
  result.variant = info.variant;
  ggml_backend_dev_t dev = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
  if (!dev) throw_environment("compute probe: no ggml CPU device after loading '{}'", info.library_path);
  std::unique_ptr<ggml_backend, BackendDeleter> backend(ggml_backend_dev_init(dev, nullptr));
  if (!backend) throw_environment("compute probe: ggml_backend_dev_init failed for the CPU device");
  // In a GGML_BACKEND_DL build ggml_backend_cpu_set_n_threads lives in the variant's .so,
  // so it is reached through the registry, as llama.cpp does.
  auto set_threads = reinterpret_cast<ggml_backend_set_n_threads_t>(
      ggml_backend_reg_get_proc_address(ggml_backend_dev_backend_reg(dev), "ggml_backend_set_n_threads"));
  int threads = options.threads > 0 ? options.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (set_threads) {
    set_threads(backend.get(), threads);
  } else {
    result.notes.push_back("CPU backend has no ggml_backend_set_n_threads: ran with its default thread count");
    threads = 0;
  }
  for (const auto& type : options.types) {
    ComputePoint p = run_type(dev, backend.get(), type, threads, options);
    if (!p.error.empty()) result.notes.push_back(type + ": unavailable: " + p.error);
    result.points.push_back(std::move(p));
  }
  if (result.min_cpu_share() < 0.9)
    result.notes.push_back(fmt::format(
        "other processes competed for the CPUs: ggml's threads ran {:.0f}% of the time at worst, so these figures "
        "may be low; measure again (--refresh) on a quiet machine",
        result.min_cpu_share() * 100));
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
                        {"cpu_share", p.cpu_share}};
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

}  // namespace edgeprobe::probe
