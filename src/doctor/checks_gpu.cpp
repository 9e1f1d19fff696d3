// GPU findings (docs/doctor.md, docs/gpu.md): the GPU analogues of the seed's silent int4
// fallback. A backend library that did not load, a backend with no device it would use, a
// run that left the GPU idle or half used, weights or ops that ran on the CPU while a GPU
// held the model, decode on the CPU while prefill ran on the GPU, and a GPU that is slower
// than the CPU for this model (measured in pairs).
#include <fmt/format.h>

#include <algorithm>

#include "doctor/checks_internal.h"
#include "doctor/evidence.h"
#include "result/result.h"

namespace edgeprobe::doctor::checks {
namespace {

constexpr double kFallbackShare = 0.05;  // weight bytes read on the CPU while a GPU ran the rest

struct GpuRun {
  result::EngineIdentity engine;
  json vulkan_devices;  // provenance.vulkan_devices, null when not listed
  engine::Placement placement;  // of the first test that has one
  bool any_device() const {
    for (const auto& b : engine.gpu_backends)
      if (!b.devices.empty()) return true;
    return false;
  }
};

GpuRun read_run(const Evidence& e) {
  GpuRun r;
  if (!e.primary.report) return r;
  r.engine = e.primary.report->provenance.engine;
  r.vulkan_devices = field(e.primary.report->provenance.extra, "vulkan_devices");
  for (const auto& t : e.primary.report->results) {
    const engine::Placement& p = t.placement;
    if (p.empty()) continue;
    // The decode test's placement when there is one (it has the decode graph); the
    // prefill test's for the prefill graph.
    if (!r.placement.prefill && p.prefill) r.placement.prefill = p.prefill;
    if (!r.placement.decode && p.decode) r.placement.decode = p.decode;
    if (r.placement.devices.empty()) {
      const auto prefill = r.placement.prefill, decode = r.placement.decode;
      r.placement = p;
      r.placement.prefill = prefill ? prefill : p.prefill;
      r.placement.decode = decode ? decode : p.decode;
    }
  }
  return r;
}

// Weight bytes a graph read on the CPU, and of all, leaving out the token embedding
// lookup: llama.cpp keeps the input layer on the CPU by design, with any GPU.
std::pair<uint64_t, uint64_t> cpu_weight_bytes(const engine::GraphPlacement& g) {
  uint64_t all = 0, cpu = 0;
  for (const auto& b : g.backends) all += b.weight_bytes;
  for (const auto& n : g.cpu_nodes) {
    if (n.op == "GET_ROWS") {
      all -= std::min(all, n.weight_bytes);
      continue;
    }
    cpu += n.weight_bytes;
  }
  return {cpu, all};
}

std::string gpu_backend_of(const engine::GraphPlacement& g) {
  for (const auto& b : g.backends)
    if (b.backend != "CPU") return b.backend;
  return "";
}

// A "cannot be used with preferred buffer type X, using CPU instead" line about a GPU's own
// memory. Weights of layers -ngl keeps on the CPU prefer the GPU's pinned host buffer
// ("Vulkan_Host") and stay in plain CPU memory: host memory either way, not a fallback.
bool moved_off_gpu(const std::string& line) {
  const std::string key = "preferred buffer type ";
  const size_t at = line.find(key);
  if (at == std::string::npos) return true;  // a form not known: say it rather than hide it
  const std::string buft = line.substr(at + key.size(), line.find(',', at) - at - key.size());
  return !buft.ends_with("_Host");
}

// The backend that ran most of a graph's nodes. Not its weight bytes: an op llama.cpp
// offloads for a large batch (op offload) runs on the GPU on weights held in host memory,
// which count as the CPU's.
std::string main_backend(const engine::GraphPlacement& g) {
  const auto it = std::max_element(g.backends.begin(), g.backends.end(),
                                   [](const auto& a, const auto& b) { return a.nodes < b.nodes; });
  return it == g.backends.end() ? "" : it->backend;
}

// "Mali-G610 (fb000000.gpu, mali)": a GPU sysfs shows.
std::string sysfs_gpu_text(const telemetry::Gpu& g) {
  return fmt::format("{} ({}, {})", g.model.empty() ? "a GPU" : g.model, g.name, g.kind);
}

void check_backends(const Evidence& e, const GpuRun& r, std::vector<Finding>& out) {
  // A GPU in sysfs, and a llama.cpp with no GPU backend at all: the seed's silent fallback
  // on a board (a Jetson build without CUDA runs its 7B model at 1.5 tok/s; 22 on the GPU).
  if (r.engine.gpu_backends.empty() && r.engine.kind == "in-process" && !e.device.gpus.empty()) {
    std::vector<std::string> evidence;
    for (const auto& g : e.device.gpus) evidence.push_back("sysfs shows " + sysfs_gpu_text(g));
    evidence.push_back("no GPU backend library (libggml-vulkan.so, libggml-cuda.so, ...) beside the CPU variants");
    out.push_back({"gpu.no_backend", Severity::kWarning,
                   "GPU present but not used: this llama.cpp has no GPU backend", evidence, "prefill+decode",
                   std::nullopt, "none: nothing ran on the GPU to compare with",
                   "a llama.cpp built with the GPU's backend (Vulkan for Mali and Adreno on Linux, CUDA on a Jetson): "
                   "docs/gpu.md, docs/arm.md",
                   {{"sysfs_gpus", evidence.size() - 1}}});
  }
  for (const auto& b : r.engine.gpu_backends) {
    if (!b.error.empty()) {
      Finding f{"gpu.backend_failed", Severity::kWarning,
                fmt::format("GPU present but not used: the {} backend did not load", b.name),
                {fmt::format("{}: {}", b.library_path, b.error)},
                "prefill+decode", std::nullopt, "",
                fmt::format("make the library load: install what it names (for Vulkan the loader libvulkan1 and the "
                            "device's driver), then check with `edgeprobe sysinfo`"),
                {{"backend", b.name}, {"library", b.library_path}, {"error", b.error}}};
      f.speedup_basis = "none: nothing ran on the GPU to compare with";
      out.push_back(std::move(f));
      continue;
    }
    if (!b.devices.empty()) continue;
    // Loaded with no device: say what the driver lists and why ggml passed it over.
    std::vector<std::string> evidence, skipped;
    const json& devices = field(r.vulkan_devices, "devices");
    if (b.name == "vulkan" && devices.is_array()) {
      for (const auto& d : devices) {
        const std::string name = field(d, "name").is_string() ? field(d, "name").get<std::string>() : "?";
        const std::string type = field(d, "type").is_string() ? field(d, "type").get<std::string>() : "?";
        evidence.push_back(fmt::format("Vulkan lists '{}' (type {})", name, type));
        if (type == "cpu") skipped.push_back(name);
      }
      if (devices.empty())
        evidence.push_back(fmt::format("Vulkan lists no device: {}", field(r.vulkan_devices, "error").is_string()
                                                                        ? field(r.vulkan_devices, "error").get<std::string>()
                                                                        : "no driver"));
    }
    for (const auto& g : e.device.gpus) evidence.push_back("sysfs shows " + sysfs_gpu_text(g) + ", which no driver offers");
    // A CPU-type device alone is a test device, unless sysfs shows a real GPU beside it.
    const bool only_cpu_devices = !skipped.empty() && skipped.size() == devices.size() && e.device.gpus.empty();
    Finding f{"gpu.no_device",
              only_cpu_devices ? Severity::kInfo : Severity::kWarning,
              only_cpu_devices
                  ? fmt::format("the {} backend skipped '{}': a CPU-type device, which ggml leaves out by default", b.name, skipped[0])
                  : fmt::format("the {} backend loaded but found no device it uses", b.name),
              evidence,
              "prefill+decode", std::nullopt,
              only_cpu_devices ? "none: a CPU-type Vulkan device runs on these same CPUs (a test device, not a speed-up)"
                               : "none: nothing ran on a GPU to compare with",
              only_cpu_devices ? "nothing to fix for speed; GGML_VK_VISIBLE_DEVICES=0 uses it anyway (for tests)"
                               : "install the GPU's Vulkan driver (Mesa's panvk/turnip, NVIDIA's), then check with `edgeprobe sysinfo`",
              {{"backend", b.name}, {"skipped_cpu_devices", skipped}}};
    out.push_back(std::move(f));
  }
}

void check_offload(const Evidence& e, const GpuRun& r, std::vector<Finding>& out) {
  const auto& p = r.placement;
  const bool offloaded = p.layers_offloaded > 0;
  if (r.any_device() && !offloaded) {
    std::vector<std::string> evidence;
    for (const auto& b : r.engine.gpu_backends)
      for (const auto& d : b.devices) evidence.push_back(fmt::format("{} ({}, {}) is available", d.name, d.description, d.type));
    evidence.push_back(p.devices.empty() ? "the run used no GPU device (-dev none)"
                                         : fmt::format("0 of {} layers were offloaded (-ngl {})", p.layers_total,
                                                       e.options.config.n_gpu_layers));
    Finding f{"gpu.not_used", Severity::kWarning, "a GPU is present but the model ran on the CPU", evidence, "prefill+decode",
              std::nullopt, "", "-ngl 99 (and no -dev none); doctor measured it against this run, see the evidence",
              {{"layers_offloaded", p.layers_offloaded}}};
    apply_measured(f, e.gpu_pairs, e);
    if (e.gpu_pairs && e.gpu_pairs->verdict == PairVerdict::kSlower) {
      f.severity = Severity::kInfo;
      f.title = "a GPU is present and the model ran on the CPU, which measured faster here";
      f.fix = "nothing: keep the CPU (the GPU measured slower for this model)";
    }
    out.push_back(std::move(f));
    return;
  }
  if (offloaded && p.layers_total > 0 && p.layers_offloaded < p.layers_total) {
    uint64_t cpu = 0, all = 0;
    if (p.decode) std::tie(cpu, all) = cpu_weight_bytes(*p.decode);
    Finding f{"gpu.partial_offload", Severity::kWarning,
              fmt::format("partial offload: {} of {} layers on the GPU", p.layers_offloaded, p.layers_total),
              {fmt::format("llama.cpp offloaded {}/{} layers", p.layers_offloaded, p.layers_total)}, "prefill+decode",
              std::nullopt, "", "-ngl 99 if the GPU's memory holds the model (see the buffers), else a smaller quantisation",
              {{"layers_offloaded", p.layers_offloaded}, {"layers_total", p.layers_total}}};
    if (all > 0 && cpu < all) {
      const double share = static_cast<double>(cpu) / static_cast<double>(all);
      f.evidence.push_back(fmt::format("the CPU read {} of the weight bytes per decode step", pct(share)));
      f.speedup = 1.0 / (1.0 - share);
      f.speedup_basis = fmt::format(
          "estimated: an upper bound, 1 / (1 - {}) if the CPU's share of the weights cost nothing on the GPU "
          "(decode reads every weight once per token)",
          pct(share));
    } else {
      f.speedup_basis = "none: the run's weight bytes per backend are not known";
    }
    out.push_back(std::move(f));
  }
}

void check_fallback_ops(const GpuRun& r, std::vector<Finding>& out) {
  const auto& p = r.placement;
  const engine::GraphPlacement* g = p.decode ? &*p.decode : p.prefill ? &*p.prefill : nullptr;
  if (!g || g->backends.size() < 2 || p.layers_offloaded <= 0) return;
  // Layers left on the CPU by -ngl run there by request (gpu.partial_offload says so); only
  // weights llama.cpp moved off the GPU itself are a fallback then.
  const bool partial = p.layers_total > 0 && p.layers_offloaded < p.layers_total;
  if (partial && std::none_of(p.weights_moved.begin(), p.weights_moved.end(), moved_off_gpu)) return;
  const auto [cpu, all] = cpu_weight_bytes(*g);
  if (all == 0 || static_cast<double>(cpu) < kFallbackShare * static_cast<double>(all)) return;
  const double share = static_cast<double>(cpu) / static_cast<double>(all);
  const std::string gpu = gpu_backend_of(*g);
  std::vector<std::string> evidence;
  json ops = json::array();
  for (const auto& n : g->cpu_nodes) {
    if (n.op == "GET_ROWS" || n.weight_bytes == 0) continue;
    evidence.push_back(fmt::format("{} on {} ran on the CPU {} time{} ({} of weights)", n.op, n.tensor, n.count,
                                   n.count == 1 ? "" : "s", mib(static_cast<double>(n.weight_bytes))));
    ops.push_back({{"op", n.op}, {"tensor", n.tensor}, {"count", n.count}, {"weight_bytes", n.weight_bytes}});
  }
  if (evidence.size() > 8) evidence.resize(8);
  for (const auto& line : p.weights_moved)
    if (moved_off_gpu(line)) evidence.push_back("llama.cpp (debug log): " + line);
  if (p.graph_splits_decode > 0) evidence.push_back(fmt::format("graph splits: {} per decode step", p.graph_splits_decode));
  if (partial)
    evidence.push_back(fmt::format("the share includes the {} layer(s) -ngl left on the CPU (gpu.partial_offload)",
                                   p.layers_total - p.layers_offloaded));
  Finding f{"gpu.cpu_fallback_ops", Severity::kWarning,
            fmt::format("{} of the weights ran on the CPU while {} held the model: ops or weight types {} does not support",
                        pct(share), gpu, gpu),
            evidence, g == &*p.decode ? "decode" : "prefill", 1.0 / (1.0 - share),
            fmt::format("estimated: an upper bound, 1 / (1 - {}) if those weights cost nothing on the GPU; a step spends "
                        "about that share reading them on the CPU, plus a sync per split",
                        pct(share)),
            fmt::format("requantise to a type {} supports (Q4_0, Q4_K, Q8_0, ...: see docs/gpu.md), or a newer llama.cpp whose "
                        "backend has the kernel",
                        gpu),
            {{"cpu_weight_share", share}, {"ops", ops}, {"gpu", gpu}}};
  out.push_back(std::move(f));
}

void check_decode_on_cpu(const GpuRun& r, std::vector<Finding>& out) {
  const auto& p = r.placement;
  if (!p.prefill || !p.decode) return;
  // Decode wholly on the CPU while the prompt's batch ran on a GPU: the op offload
  // threshold. A partial offload's decode runs on both and is gpu.partial_offload's.
  const std::string prefill_on = main_backend(*p.prefill), decode_on = main_backend(*p.decode);
  if (prefill_on.empty() || prefill_on == "CPU" || decode_on != "CPU" || !gpu_backend_of(*p.decode).empty()) return;
  out.push_back({"gpu.decode_on_cpu", Severity::kWarning,
                 fmt::format("prefill ran on {} but decode on the CPU", prefill_on),
                 {fmt::format("prefill ({} tokens): most graph nodes on {}", p.prefill->n_tokens, prefill_on),
                  "decode (1 token): every graph node on the CPU",
                  fmt::format("{} of {} layers were offloaded: the weights stay in host memory, and llama.cpp moves an op "
                              "to the GPU only for batches of 32 tokens and more (op offload)",
                              std::max(p.layers_offloaded, 0), p.layers_total)},
                 "decode", std::nullopt, "none: the decode step on the GPU was not measured; doctor's pair measures -ngl 99",
                 "-ngl 99 (the weights then live on the GPU for decode too)",
                 {{"prefill_backend", prefill_on}, {"decode_backend", decode_on}}});
}

void check_slower_gpu(const Evidence& e, const GpuRun& r, std::vector<Finding>& out) {
  if (!e.gpu_pairs || r.placement.layers_offloaded <= 0 || e.gpu_pairs->verdict != PairVerdict::kFaster) return;
  Finding f{"gpu.slower_than_cpu", Severity::kWarning,
            "the GPU is slower than the CPU for this model: the CPU alone (-dev none) measured faster",
            {fmt::format("{} of {} layers ran on the GPU", r.placement.layers_offloaded, r.placement.layers_total)},
            "prefill+decode", std::nullopt, "",
            "-dev none (or -ngl 0 -nopo 1) to run on the CPU; or a GPU driver or build whose kernels are faster",
            {}};
  apply_measured(f, e.gpu_pairs, e);
  out.push_back(std::move(f));
}

}  // namespace

void check_gpu(const Evidence& e, std::vector<Finding>& out) {
  const GpuRun r = read_run(e);
  check_backends(e, r, out);
  check_offload(e, r, out);
  check_fallback_ops(r, out);
  check_decode_on_cpu(r, out);
  check_slower_gpu(e, r, out);
}

}  // namespace edgeprobe::doctor::checks
