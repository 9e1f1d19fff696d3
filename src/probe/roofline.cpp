#include "probe/roofline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <tuple>
#include <nlohmann/json.hpp>

#include "core/text.h"
#include "probe/contention.h"

namespace edgeprobe::probe {
namespace {

// Tensors a token reads one row of (ggml_get_rows), not the whole matrix.
bool is_gathered(const std::string& name) {
  return name == "token_embd.weight" || name == "position_embd.weight" || name == "token_types.weight";
}

bool has_output_matrix(const model::GgufInfo& info) {
  return std::any_of(info.tensors.begin(), info.tensors.end(),
                     [](const model::TensorInfo& t) { return t.name == "output.weight"; });
}

bool is_matrix(const model::TensorInfo& t) {
  return t.shape.size() >= 2 && t.shape[0] > 1 && t.shape[1] > 1;
}

// A matrix a token multiplies (the gathered embedding only when it doubles as the output).
bool is_multiplied(const model::TensorInfo& t, bool tied) {
  return is_matrix(t) && (!is_gathered(t.name) || (tied && t.name == "token_embd.weight"));
}

// The matrix that turns hidden states into logits.
bool is_output_matrix(const model::TensorInfo& t, bool tied) {
  return t.name == "output.weight" || (tied && t.name == "token_embd.weight");
}

// Groups matrices by type and shape, in first-seen order; an expert tensor counts as the
// n_expert_used matrices of one expert's shape that a token multiplies.
std::vector<MatrixShape> group(const std::vector<const model::TensorInfo*>& tensors,
                               const model::ModelShape& shape) {
  std::vector<MatrixShape> out;
  for (const auto* t : tensors) {
    const int count = is_expert_tensor(*t, shape) ? static_cast<int>(shape.n_expert_used) : 1;
    auto it = std::find_if(out.begin(), out.end(), [&](const MatrixShape& m) {
      return m.type == t->type && m.cols == t->shape[0] && m.rows == t->shape[1];
    });
    if (it != out.end())
      it->count += count;
    else
      out.push_back({t->type, t->shape[0], t->shape[1], count});
  }
  return out;
}

// The generic probe's rate for a type as a ceiling: its median run over the probe's sizes
// (the best size), as prefill rates are medians. 0 when not measured.
double median_gflop_per_s(const ComputeResult& compute, const std::string& type) {
  double rate = 0;
  for (const auto& p : compute.points)
    if (p.type == type && p.usable()) rate = std::max(rate, p.median_gflop_per_s);
  return rate;
}

// The measured type whose rate stands in for `type`: itself when measured, else the nearest
// measured kind (quantized -> q4_0/q8_0, half -> f16). Empty when nothing fits.
std::string rate_type_for(const std::string& type, const ComputeResult& compute) {
  if (median_gflop_per_s(compute, type) > 0) return type;
  std::vector<std::string> candidates;
  if (type == "f32") candidates = {"f32", "f16"};
  else if (type == "f16" || type == "bf16") candidates = {"f16", "f32"};
  else candidates = {"q4_0", "q8_0", "f16"};
  for (const auto& c : candidates)
    if (median_gflop_per_s(compute, c) > 0) return c;
  return "";
}

}  // namespace

bool is_expert_tensor(const model::TensorInfo& t, const model::ModelShape& shape) {
  return shape.n_expert > 0 && t.shape.size() == 3 && t.name.find("_exps.") != std::string::npos;
}

double token_share(const model::TensorInfo& t, const model::ModelShape& shape) {
  return is_expert_tensor(t, shape) ? shape.active_expert_share() : 1.0;
}

uint64_t decode_weight_bytes_per_token(const model::GgufInfo& info) {
  const bool tied = !has_output_matrix(info);
  uint64_t bytes = 0;
  for (const auto& t : info.tensors) {
    if (t.name == "token_embd.weight" && tied) {
      bytes += t.n_bytes;  // also the output matrix: read in full
    } else if (is_gathered(t.name) && t.shape.size() >= 2 && t.shape[1] > 0) {
      bytes += t.n_bytes / static_cast<uint64_t>(t.shape[1]);  // one row of ne0 elements
    } else {
      bytes +=
          static_cast<uint64_t>(std::llround(static_cast<double>(t.n_bytes) * token_share(t, info.shape)));
    }
  }
  return bytes;
}

double kv_bytes_per_token(const model::ModelShape& shape, double depth, double kv_bytes_per_element) {
  const int64_t n_head_kv = shape.n_head_kv > 0 ? shape.n_head_kv : shape.n_head;
  return 2.0 * static_cast<double>(shape.n_layer) * static_cast<double>(n_head_kv) *
         static_cast<double>(shape.head_dim()) * depth * kv_bytes_per_element;
}

double kv_type_bytes_per_element(const std::string& t) {
  // ggml block layouts (ggml-common.h): bytes per block / elements per block.
  static const std::map<std::string, double> kBytes = {
      {"f32", 4.0},           {"f16", 2.0},           {"bf16", 2.0},          {"q8_0", 34.0 / 32},
      {"q4_0", 18.0 / 32},    {"q4_1", 20.0 / 32},    {"q5_0", 22.0 / 32},    {"q5_1", 24.0 / 32},
      {"iq4_nl", 18.0 / 32}};
  const auto it = kBytes.find(t);
  return it == kBytes.end() ? 0.0 : it->second;
}

double decode_bytes_per_token(const model::GgufInfo& info, int64_t depth, double kv_bytes_per_element) {
  return static_cast<double>(decode_weight_bytes_per_token(info)) +
         kv_bytes_per_token(info.shape, static_cast<double>(depth), kv_bytes_per_element);
}

std::vector<TypeFlops> weight_flops_per_token(const model::GgufInfo& info, double output_share) {
  const bool tied = !has_output_matrix(info);
  std::map<std::string, double> by_type;
  for (const auto& t : info.tensors) {
    if (!is_multiplied(t, tied)) continue;
    by_type[t.type] += 2.0 * static_cast<double>(t.n_elements) * token_share(t, info.shape) *
                       (is_output_matrix(t, tied) ? output_share : 1.0);
  }
  std::vector<TypeFlops> out;
  for (const auto& [type, flop] : by_type) out.push_back({type, flop});
  return out;
}

double attention_flops_per_token(const model::ModelShape& shape, double context) {
  return 2.0 * 2.0 * static_cast<double>(shape.n_layer) * static_cast<double>(shape.n_head) *
         static_cast<double>(shape.head_dim()) * context;
}

double prefill_flops_per_token(const model::GgufInfo& info, double context, double output_share) {
  double flop = attention_flops_per_token(info.shape, context);
  for (const auto& tf : weight_flops_per_token(info, output_share)) flop += tf.flop;
  return flop;
}

std::vector<MatrixShape> decode_matrices(const model::GgufInfo& info) {
  const bool tied = !has_output_matrix(info);
  std::vector<const model::TensorInfo*> mats;
  for (const auto& t : info.tensors)
    if (is_multiplied(t, tied)) mats.push_back(&t);
  return group(mats, info.shape);
}

std::vector<MatrixShape> prefill_shapes(const model::GgufInfo& info) {
  const bool tied = !has_output_matrix(info);
  std::vector<const model::TensorInfo*> mats;
  for (const auto& t : info.tensors)
    if (is_multiplied(t, tied) && !is_output_matrix(t, tied)) mats.push_back(&t);
  std::vector<MatrixShape> all = group(mats, info.shape);
  auto flop = [](const MatrixShape& m) { return static_cast<double>(m.cols) * static_cast<double>(m.rows) * m.count; };
  double total = 0;
  std::map<std::string, double> by_type;
  for (const auto& m : all) {
    total += flop(m);
    by_type[m.type] += flop(m);
  }
  std::stable_sort(all.begin(), all.end(), [&](const MatrixShape& a, const MatrixShape& b) { return flop(a) > flop(b); });
  std::vector<MatrixShape> out;
  std::map<std::string, int> taken;
  for (auto m : all) {
    if (by_type[m.type] < 0.05 * total || taken[m.type] >= 4) continue;
    ++taken[m.type];
    m.count = 1;
    out.push_back(m);
  }
  return out;
}

int64_t prefill_kernel_tokens(int64_t n_prompt, int64_t n_ubatch) {
  return n_ubatch > 0 ? std::min(n_prompt, n_ubatch) : n_prompt;
}

int ensure_model_kernels(DeviceCeilings& c, const model::GgufInfo& info, const KernelNeeds& needs,
                         const ProbeOptions& options) {
  if (c.compute_status != "measured") return 0;
  KernelOptions ko;
  ko.variant = options.variant;
  ko.backend_dir = options.backend_dir;
  ko.device = c.device;
  int measured = 0;
  // A GPU's points have no thread count: one of each, at threads 0.
  const bool gpu = !c.device.empty();
  if (!gpu) {  // the decode probe maps its weights as llama.cpp maps a model (MappedFile)
    ko.weights_dir = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
    std::error_code ec;
    std::filesystem::create_directories(ko.weights_dir, ec);
  }
  const int min_threads = gpu ? 0 : 1;
  // A cached point measured while other processes held the CPUs is measured again, and the
  // better of the two kept (merge_kernel_point): a ceiling must not stay low because of one
  // busy moment.
  auto keep_better = [&](KernelPoint fresh, auto same) {
    for (auto& k : c.kernels)
      if (same(k)) {
        // A point from before weight_memory was recorded held its weights where a mapped
        // model's do not lie, and read them slower on some hosts: a fresh one replaces it.
        const bool replace = options.replace || (k.phase == "decode" && !gpu && k.weight_memory.empty());
        if (auto note = merge_kernel_point(k, std::move(fresh), replace)) c.kept_notes.push_back(std::move(*note));
        return;
      }
    c.kernels.push_back(std::move(fresh));
  };
  // Prefill at the device's thread count: the ceiling is the device's, as for bandwidth;
  // and at the counts a prediction asks for.
  std::set<int> prefill_threads = gpu ? std::set<int>{} : needs.prefill_threads;
  prefill_threads.insert(c.threads);
  for (int threads : prefill_threads) {
    if (threads < min_threads) continue;
    for (int64_t tokens : needs.prefill_tokens) {
      if (tokens < 1) continue;
      for (const auto& shape : prefill_shapes(info)) {
        auto same = [&](const KernelPoint& k) {
          return k.phase == "prefill" && k.type == shape.type && k.rows == shape.rows && k.cols == shape.cols &&
                 k.tokens == tokens && k.threads == threads;
        };
        const auto it = std::find_if(c.kernels.begin(), c.kernels.end(), same);
        if (it != c.kernels.end() && it->usable() && !options.remeasure_kernels) continue;
        ko.threads = threads;
        keep_better(measure_uncontended([&] { return measure_prefill_kernel(shape, tokens, ko); }), same);
        ++measured;
      }
    }
  }
  if (!needs.decode_threads.empty()) {
    const auto matrices = decode_matrices(info);
    const std::string signature = matrices_signature(matrices);
    std::set<int> threads = gpu ? std::set<int>{} : needs.decode_threads;
    threads.insert(c.threads);
    for (int t : threads) {
      const KernelPoint* have = c.decode_kernel(signature, t);
      const bool stale = have && !gpu && have->weight_memory.empty();  // see keep_better
      if (t < min_threads || (have && !stale && !options.remeasure_kernels)) continue;
      ko.threads = t;
      keep_better(measure_uncontended([&] { return measure_decode_kernel(matrices, ko); }), [&](const KernelPoint& k) {
        return k.phase == "decode" && k.model == signature && k.threads == t;
      });
      ++measured;
    }
  }
  if (measured > 0) save_cache(c);
  return measured;
}

int ensure_gpu_model_kernels(DeviceCeilings& host, const std::string& device, const model::GgufInfo& info,
                             const KernelNeeds& needs, const ProbeOptions& options) {
  DeviceCeilings* g = host.gpu(device);
  if (!g) return 0;
  const int measured = ensure_model_kernels(*g, info, needs, options);  // an entry has no cache path of its own
  if (measured > 0) save_cache(host);
  return measured;
}

Roofline compute_roofline(const model::GgufInfo& info, const DeviceCeilings& ceilings, int64_t n_prompt, int64_t n_gen,
                          int64_t depth, double measured_pp_tps, double measured_tg_tps, double load_ms,
                          int n_threads, double kv_bytes_per_element, int64_t n_batch, int64_t n_ubatch) {
  Roofline r;
  r.device = ceilings.device;
  // Decode: token i of n_gen reads the KV entries of the depth + i positions before it.
  if (n_gen > 0) {
    r.decode_mean_depth = static_cast<double>(depth) + static_cast<double>(n_gen - 1) / 2.0;
    r.decode_bytes_per_token = static_cast<double>(decode_weight_bytes_per_token(info)) +
                               kv_bytes_per_token(info.shape, r.decode_mean_depth, kv_bytes_per_element);
    // The median read pass, as the decode rate it divides is the median repetition.
    r.bandwidth_gb_per_s = ceilings.bandwidth.read_median_gb_per_s;
    // The matvec kernels read the model's matrices; the rest of a token's bytes (norms, the
    // embedding row, the KV cache) are charged at the memory bandwidth.
    const auto matrices = decode_matrices(info);
    const std::string signature = matrices_signature(matrices);
    double matrix_bytes = 0;
    for (const auto& t : info.tensors)
      if (is_multiplied(t, !has_output_matrix(info))) matrix_bytes += static_cast<double>(t.n_bytes);
    auto kernel_ceiling = [&](double kernel_gb_per_s, double bw_gb_per_s) {
      double s = matrix_bytes / (kernel_gb_per_s * 1e9);
      const double rest = std::max(0.0, r.decode_bytes_per_token - matrix_bytes);
      if (rest > 0 && bw_gb_per_s > 0) s += rest / (bw_gb_per_s * 1e9);
      return s > 0 ? 1.0 / s : 0.0;
    };
    // attainable = min(bandwidth roof, kernel roof); the binding one is named.
    auto combine = [](double bw_ceiling, double kernel, std::string& bound) {
      if (bw_ceiling > 0 && kernel > 0) {
        bound = kernel < kKernelBoundShare * bw_ceiling ? "kernel" : "bandwidth";
        return std::min(bw_ceiling, kernel);
      }
      bound = bw_ceiling > 0 ? "bandwidth" : kernel > 0 ? "kernel" : "";
      return std::max(bw_ceiling, kernel);
    };
    // A token whose bytes fit in the last-level cache does not stream them from DRAM: the
    // bandwidth roof bounds nothing, and the kernel probe (the model's own matrices, cached
    // as a token's are) is the ceiling.
    r.decode_cache_resident =
        ceilings.llc_total_bytes > 0 && r.decode_bytes_per_token < static_cast<double>(ceilings.llc_total_bytes);
    if (r.decode_cache_resident)
      r.notes.push_back(fmt::format("the {:.1f} MiB a token reads fit in the last-level cache ({} MiB): DRAM "
                                    "bandwidth does not bound decode, which is judged against the kernel probe alone",
                                    r.decode_bytes_per_token / (1024.0 * 1024.0), ceilings.llc_total_bytes >> 20));
    if (r.bandwidth_gb_per_s > 0 && r.decode_bytes_per_token > 0) {
      r.decode_bandwidth_ceiling_tokens_per_s = r.bandwidth_gb_per_s * 1e9 / r.decode_bytes_per_token;
      if (measured_tg_tps > 0 && !r.decode_cache_resident)
        r.decode_bandwidth_efficiency = measured_tg_tps / r.decode_bandwidth_ceiling_tokens_per_s;
    } else if (!ceilings.bandwidth.points.empty()) {
      r.notes.push_back(fmt::format("decode bandwidth ceiling unavailable: every read pass was measured while other "
                                    "processes held the CPUs (as little as {:.0f}% of the CPU time); edgeprobe probe "
                                    "--refresh on a quiet machine measures it",
                                    ceilings.bandwidth.min_cpu_share() * 100));
    } else {
      r.notes.push_back("decode bandwidth ceiling unavailable: no bandwidth measurement");
    }
    const double bw_roof = r.decode_cache_resident ? 0.0 : r.decode_bandwidth_ceiling_tokens_per_s;
    if (const KernelPoint* k = ceilings.decode_kernel(signature, ceilings.threads)) {
      r.decode_kernel_gb_per_s = k->decode_ceiling_gb_per_s();
      r.decode_kernel_ceiling_tokens_per_s = kernel_ceiling(r.decode_kernel_gb_per_s, r.bandwidth_gb_per_s);
      if (k->model_bytes > k->weight_bytes)
        r.notes.push_back(fmt::format("decode kernel probed on {} of the model's {} MiB of matrices (working set cap)",
                                      k->weight_bytes >> 20, k->model_bytes >> 20));
    } else if (const auto it = std::find_if(ceilings.kernels.begin(), ceilings.kernels.end(),
                                            [&](const KernelPoint& k) {
                                              return k.phase == "decode" && k.model == signature &&
                                                     k.threads == ceilings.threads && k.error.empty();
                                            });
               it != ceilings.kernels.end()) {
      r.notes.push_back(fmt::format("the decode kernel was probed only while other processes held the CPUs (its "
                                    "threads got {:.0f}% of the CPU time they wanted): kept out of the ceiling; the "
                                    "next bench, or probe -m on a quiet machine, measures it again",
                                    it->cpu_share * 100));
    } else if (ceilings.compute_status == "measured") {
      r.notes.push_back("decode kernel ceiling not measured for this model (bench or probe -m measures it)");
    }
    r.decode_ceiling_tokens_per_s = combine(bw_roof, r.decode_kernel_ceiling_tokens_per_s, r.decode_bound);
    if (r.decode_ceiling_tokens_per_s > 0 && measured_tg_tps > 0)
      r.decode_efficiency = measured_tg_tps / r.decode_ceiling_tokens_per_s;
    if (n_threads > 0) {
      r.bandwidth_at_threads_gb_per_s = ceilings.bandwidth.read_median_gb_per_s_at(n_threads);
      double bw_ceiling = 0, kernel = 0;
      if (r.bandwidth_at_threads_gb_per_s > 0)
        bw_ceiling = r.decode_cache_resident ? 0.0 : r.bandwidth_at_threads_gb_per_s * 1e9 / r.decode_bytes_per_token;
      else
        r.notes.push_back(fmt::format("no clean bandwidth measurement with {} threads", n_threads));
      if (const KernelPoint* k = ceilings.decode_kernel(signature, n_threads)) {
        r.decode_kernel_at_threads_gb_per_s = k->decode_ceiling_gb_per_s();
        kernel = kernel_ceiling(r.decode_kernel_at_threads_gb_per_s, r.bandwidth_at_threads_gb_per_s);
      }
      r.decode_ceiling_at_threads_tokens_per_s = combine(bw_ceiling, kernel, r.decode_bound_at_threads);
      if (r.decode_ceiling_at_threads_tokens_per_s > 0 && measured_tg_tps > 0)
        r.decode_efficiency_at_threads = measured_tg_tps / r.decode_ceiling_at_threads_tokens_per_s;
    }
    if (measured_tg_tps > 0) r.decode_achieved_gb_per_s = measured_tg_tps * r.decode_bytes_per_token / 1e9;
    if (std::any_of(info.tensors.begin(), info.tensors.end(),
                    [](const model::TensorInfo& t) { return t.name.find("_exps") != std::string::npos; }))
      r.notes.push_back("expert tensors counted in full: for MoE models the decode ceiling is a lower bound");
  }

  // Prefill: time per token = sum over weight types of FLOPs / that type's rate, plus
  // attention at the f16 rate (KV cache is f16); the ceiling is its inverse. A type's rate is
  // the best over the model's own shapes at the bench's ubatch (ggml's speed depends on the
  // shape, and a ceiling must not sit below what the model really reaches), else the generic
  // probe's (4096x4096) with a note.
  if (n_prompt > 0) {
    r.prefill_mean_context = static_cast<double>(depth) + static_cast<double>(n_prompt + 1) / 2.0;
    const double n_outputs = n_batch > 0 ? std::ceil(static_cast<double>(n_prompt) / static_cast<double>(n_batch)) : 1;
    const double output_share = n_outputs / static_cast<double>(n_prompt);
    r.prefill_flop_per_token = prefill_flops_per_token(info, r.prefill_mean_context, output_share);
    const int64_t tokens = prefill_kernel_tokens(n_prompt, n_ubatch);
    std::map<std::string, double> model_rate;  // type -> best GFLOP/s over its model shapes
    for (const auto& shape : prefill_shapes(info)) {
      double& rate = model_rate[shape.type];  // present even when unmeasured: a major type
      for (const auto& k : ceilings.kernels) {
        if (k.phase != "prefill" || k.type != shape.type || k.rows != shape.rows || k.cols != shape.cols ||
            k.tokens != tokens || k.threads != ceilings.threads || !k.usable())
          continue;
        rate = std::max(rate, k.median_gflop_per_s);
      }
    }
    double seconds = 0;
    bool ok = ceilings.compute_status == "measured";
    bool generic = false;
    if (!ok) r.notes.push_back("prefill ceiling " + (ceilings.compute_status.empty() ? std::string("unavailable")
                                                                                      : ceilings.compute_status));
    auto add = [&](const std::string& type, double flop, bool use_model_rate) {
      if (use_model_rate && model_rate[type] > 0) {
        seconds += flop / (model_rate[type] * 1e9);
        return;
      }
      const std::string stand_in = rate_type_for(type, ceilings.compute);
      if (stand_in.empty()) {
        ok = false;
        const bool contended = std::any_of(ceilings.compute.points.begin(), ceilings.compute.points.end(),
                                           [](const ComputePoint& p) { return p.error.empty() && !p.usable(); });
        r.notes.push_back("prefill ceiling unavailable: no compute rate for " + type +
                          (contended ? " (the generic matmul rates were probed only while other processes held the "
                                       "CPUs and are kept out; edgeprobe probe --refresh on a quiet machine)"
                                     : ""));
        return;
      }
      if (use_model_rate) generic = true;
      if (stand_in != type) r.notes.push_back(fmt::format("{} matmuls use the measured {} rate", type, stand_in));
      seconds += flop / (median_gflop_per_s(ceilings.compute, stand_in) * 1e9);
    };
    if (ok) {
      for (const auto& tf : weight_flops_per_token(info, output_share)) {
        // Types below the prefill_shapes threshold (the output matrix's, a few norms' worth)
        // borrow a rate without changing the basis.
        const bool major = model_rate.count(tf.type) > 0;
        add(tf.type, tf.flop, major);
      }
      add("f16", attention_flops_per_token(info.shape, r.prefill_mean_context), false);
    }
    if (ok && seconds > 0) {
      r.prefill_ceiling_tokens_per_s = 1.0 / seconds;
      r.prefill_compute_gflop_per_s = r.prefill_flop_per_token / seconds / 1e9;
      r.prefill_compute_basis = generic ? "generic 4096x4096 matmul (model shapes not measured)"
                                        : fmt::format("model shapes x {} tokens", tokens);
      if (generic)
        r.notes.push_back("prefill ceiling from the generic 4096x4096 matmul: the model's own shapes were not "
                          "measured (bench or probe -m measures them)");
      if (measured_pp_tps > 0) r.prefill_efficiency = measured_pp_tps / r.prefill_ceiling_tokens_per_s;
    }
    if (ok && generic && ceilings.compute.min_cpu_share() < kContendedShare)
      r.notes.push_back("some generic matmul rates were probed while other processes held the CPUs and are kept "
                        "out of the ceiling");
    if (measured_pp_tps > 0) r.prefill_achieved_gflop_per_s = measured_pp_tps * r.prefill_flop_per_token / 1e9;
  }

  // A rate above its ceiling by more than the noise margin means the ceiling was measured
  // while the machine was slower than during the run (a shared host, a throttled clock) or
  // contended: the efficiency is not a figure then, only "ceiling suspect" (kSuspectMargin).
  const std::string remeasure =
      shell_join({"edgeprobe", "probe", "-m", info.path, "--refresh", "--replace"}) +
      (!ceilings.device.empty()             ? " --gpu " + shell_quote(ceilings.device)
       : ceilings.compute.variant.empty() ? ""
                                            : " --cpu-variant " + shell_quote(ceilings.compute.variant));
  auto judge = [&](const char* phase, double& efficiency, bool& suspect, double& over) {
    if (efficiency <= 1.0 + kSuspectMargin) {
      if (efficiency > 1.0)
        r.notes.push_back(fmt::format("{} ran at {:.2f} of its ceiling, within the {:.0f}% noise margin", phase,
                                      efficiency, kSuspectMargin * 100));
      return;
    }
    suspect = true;
    over = std::max(over, efficiency);
    efficiency = 0;
    r.remeasure_command = remeasure;
  };
  judge("prefill", r.prefill_efficiency, r.prefill_ceiling_suspect, r.prefill_over_ceiling);
  judge("decode", r.decode_efficiency, r.decode_ceiling_suspect, r.decode_over_ceiling);
  judge("decode", r.decode_bandwidth_efficiency, r.decode_ceiling_suspect, r.decode_over_ceiling);
  // The same-thread-count ceiling is a secondary figure: beaten, it is dropped with a note
  // and does not make the main ceiling suspect.
  if (r.decode_efficiency_at_threads > 1.0 + kSuspectMargin) {
    r.notes.push_back(fmt::format("decode ran at {:.2f}x the ceiling measured with {} thread(s): that ceiling is "
                                  "suspect and its efficiency left out ({})",
                                  r.decode_efficiency_at_threads, n_threads, remeasure));
    r.decode_efficiency_at_threads = 0;
  }
  for (const auto& [phase, suspect, over] : {std::tuple{"prefill", r.prefill_ceiling_suspect, r.prefill_over_ceiling},
                                             std::tuple{"decode", r.decode_ceiling_suspect, r.decode_over_ceiling}})
    if (suspect)
      r.notes.push_back(fmt::format("ceiling suspect: {} ran at {:.2f}x its ceiling, so the ceiling was probed while "
                                    "this machine was slower than during the run; measure it again: {}",
                                    phase, over, remeasure));

  // Load: the whole file at the storage read rate.
  r.model_file_bytes = info.file_bytes;
  if (!ceilings.storage) {
    r.load_ceiling_basis = "unavailable: no storage probe (probe -m MODEL)";
  } else if (ceilings.storage->path != info.path) {
    r.load_ceiling_basis = "unavailable: storage was probed on " + ceilings.storage->path;
  } else {
    const auto& s = *ceilings.storage;
    const double mb_per_s = s.cold_available() ? s.cold_mb_per_s : s.warm_mb_per_s;
    r.load_ceiling_basis = s.cold_available() ? "cold" : s.warm_mb_per_s > 0 ? "warm" : "unavailable: " + s.cold_status;
    if (mb_per_s > 0 && info.file_bytes > 0) {
      r.load_ceiling_ms = static_cast<double>(info.file_bytes) / (mb_per_s * 1e6) * 1e3;
      if (load_ms > 0) r.load_efficiency = r.load_ceiling_ms / load_ms;
    }
  }
  return r;
}

}  // namespace edgeprobe::probe
