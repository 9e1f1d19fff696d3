#include "predict/predict.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "probe/roofline.h"

namespace edgeprobe::predict {
namespace {

constexpr int64_t kCtxPad = 256;  // llama.cpp pads n_ctx, and the KV cells a step attends to, to 256

int64_t pad(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

bool is_gathered(const std::string& name) { return name == "token_embd.weight"; }

bool has_output(const model::GgufInfo& info) {
  return std::any_of(info.tensors.begin(), info.tensors.end(), [](const auto& t) { return t.name == "output.weight"; });
}

bool is_matrix(const model::TensorInfo& t) { return t.shape.size() >= 2 && t.shape[0] > 1 && t.shape[1] > 1; }

// The rate a prediction takes from a kernel point: the best run. Noise on a shared host only
// slows a run down, so the best run is the closest to the undisturbed speed a prediction
// describes, and the measurements it is checked against are best repetitions too.
double decode_rate(const probe::KernelPoint& k) { return k.best_gb_per_s; }

// "at 2 thread(s)" for the CPU's figures, "on Vulkan0" for a GPU's.
std::string where(const probe::DeviceCeilings& c, int threads) {
  return c.device.empty() ? fmt::format("at {} thread(s)", threads) : "on " + c.device;
}

// The decode kernel rate (weight GB/s) at `threads` for this model's matrices; else the
// nearest stand-in, named in `notes`.
double decode_kernel_gb_per_s(const model::GgufInfo& info, const probe::DeviceCeilings& c, int threads,
                              std::vector<std::string>& notes) {
  const std::string signature = probe::matrices_signature(probe::decode_matrices(info));
  const probe::KernelPoint* best = nullptr;
  for (const auto& k : c.kernels)
    if (k.phase == "decode" && k.model == signature && k.threads == threads && k.usable() &&
        (!best || decode_rate(k) > decode_rate(*best)))
      best = &k;
  if (best) return decode_rate(*best);
  // A GPU without a kernel for one of the model's types runs those matmuls on the CPU:
  // another model's rate on the GPU would stand for nothing.
  for (const auto& k : c.kernels)
    if (!c.device.empty() && k.phase == "decode" && k.model == signature && !k.error.empty()) {
      notes.push_back("decode unavailable on " + c.device + ": " + k.error);
      return 0;
    }
  // Interpolated: another model's decode point at this thread count, the one streaming the
  // most bytes (its rate is the least helped by caches).
  for (const auto& k : c.kernels)
    if (k.phase == "decode" && k.threads == threads && k.usable() && (!best || k.weight_bytes > best->weight_bytes))
      best = &k;
  if (best) {
    notes.push_back(fmt::format("decode kernel rate interpolated from another model's matrices ({}, {} MiB) {}: "
                                "this model's were not probed on this device",
                                best->type, best->weight_bytes >> 20, where(c, threads)));
    return decode_rate(*best);
  }
  return 0;
}

// GFLOP/s of one matrix type and shape at `tokens` x `threads`: its own point, else the best
// point of that type at those tokens and threads, else the generic probe's rate for the type.
double prefill_rate(const probe::DeviceCeilings& c, const std::string& type, int64_t cols, int64_t rows, int64_t tokens,
                    int threads, std::map<std::string, std::string>& stand_ins) {
  double exact = 0, same_type = 0;
  for (const auto& k : c.kernels) {
    if (k.phase != "prefill" || k.type != type || k.tokens != tokens || k.threads != threads || !k.usable()) continue;
    if (k.rows == rows && k.cols == cols) exact = std::max(exact, k.best_gflop_per_s);
    same_type = std::max(same_type, k.best_gflop_per_s);
  }
  if (exact > 0) return exact;
  if (same_type > 0) return same_type;
  // A GPU without a kernel for the type runs it on the CPU (llama.cpp moves the weights):
  // another type's GPU rate would stand for nothing.
  if (!c.device.empty())
    for (const auto& k : c.kernels)
      if (k.phase == "prefill" && k.type == type && !k.error.empty()) return 0;
  double generic = 0;
  std::string generic_type;
  for (const std::string& t : {type, std::string(type == "f32" ? "f16" : "q8_0"), std::string("q4_0")}) {
    for (const auto& p : c.compute.points)
      if (p.type == t && p.usable() && p.threads == threads) generic = std::max(generic, p.best_gflop_per_s);
    if (generic > 0) {
      generic_type = t;
      break;
    }
  }
  if (generic > 0) stand_ins[type] = generic_type == type ? "the generic 4096x4096 probe" : "the generic " + generic_type + " probe";
  return generic;
}

Estimate with_spread(double value, const Spread& s) {
  if (value <= 0) return {};
  return {value, value * s.low, value * s.high};
}

// A time from a rate: the interval flips (a faster rate is a shorter time).
Estimate time_ms(double units, const Estimate& rate) {
  if (rate.value <= 0 || units <= 0) return {};
  return {units / rate.value * 1e3, units / rate.high * 1e3, units / rate.low * 1e3};
}

Memory account_memory(const model::GgufInfo& info, const Config& config, uint64_t device_bytes,
                      const std::set<std::string>& repacked) {
  Memory m;
  m.n_ctx = context_size(config);
  m.weights_bytes = info.weight_bytes();
  m.repacked_bytes = repacked_bytes(info, repacked);
  m.kv_bytes = kv_cache_bytes(info.shape, m.n_ctx, config.type_k, config.type_v);
  // llama.cpp reserves the graph of its largest ubatch, whatever the test runs.
  m.compute_bytes = compute_buffer_bytes(info, m.n_ctx, std::min<int64_t>(config.n_ubatch, m.n_ctx));
  m.device_bytes = device_bytes;
  m.fits = device_bytes == 0 || m.total_bytes() <= device_bytes;
  return m;
}

void add_load(Prediction& p, const model::GgufInfo& info, double cold_mb_per_s, double warm_mb_per_s,
              const std::string& basis) {
  const double mb = static_cast<double>(info.file_bytes) / 1e6;
  if (cold_mb_per_s > 0) p.load_cold_ms = {mb / cold_mb_per_s * 1e3, mb / cold_mb_per_s * 1e3, mb / cold_mb_per_s * 1e3};
  if (warm_mb_per_s > 0) p.load_warm_ms = {mb / warm_mb_per_s * 1e3, mb / warm_mb_per_s * 1e3, mb / warm_mb_per_s * 1e3};
  p.load_basis = basis;
}

}  // namespace

int64_t context_size(const Config& c) {
  return pad(std::max<int64_t>(1, c.n_prompt + c.n_gen + c.depth), kCtxPad);
}

uint64_t kv_cache_bytes(const model::ModelShape& shape, int64_t n_ctx, const std::string& type_k, const std::string& type_v) {
  const int64_t n_head_kv = shape.n_head_kv > 0 ? shape.n_head_kv : shape.n_head;
  const double per_cell = static_cast<double>(shape.n_layer * n_head_kv * shape.head_dim()) *
                          (probe::kv_type_bytes_per_element(type_k) + probe::kv_type_bytes_per_element(type_v));
  return static_cast<uint64_t>(std::llround(per_cell * static_cast<double>(n_ctx)));
}

uint64_t compute_buffer_bytes(const model::GgufInfo& info, int64_t n_ctx, int64_t n_ubatch) {
  // llama.cpp reserves the worst-case graph of one ubatch; its largest live tensors are the
  // logits (ubatch x vocab, f32), the feed-forward activations (gate and up, ubatch x n_ff)
  // and the attention scores (ubatch x n_ctx per head, f32 with flash attention off).
  const auto& s = info.shape;
  const double u = static_cast<double>(n_ubatch);
  const double logits = u * static_cast<double>(s.n_vocab) * 4;
  const double ffn = u * static_cast<double>(s.n_ff) * 4 * 2;
  const double scores = u * static_cast<double>(n_ctx) * static_cast<double>(s.n_head) * 4;
  const double hidden = u * static_cast<double>(s.n_embd) * 4 * 3;
  return static_cast<uint64_t>(logits + std::max(ffn, scores) + hidden);
}

uint64_t repacked_bytes(const model::GgufInfo& info, const std::set<std::string>& types) {
  uint64_t bytes = 0;
  for (const auto& t : info.tensors)
    if (is_matrix(t) && !is_gathered(t.name) && types.count(t.type)) bytes += t.n_bytes;
  return bytes;
}

std::set<std::string> repacked_types(const probe::DeviceCeilings& c) {
  std::set<std::string> types;
  for (const auto& k : c.kernels)
    if (k.phase == "prefill" && k.weight_buffer == "CPU_REPACK") types.insert(k.type);
  for (const auto& p : c.compute.points)
    if (p.weight_buffer == "CPU_REPACK") types.insert(p.type);
  return types;
}

Prediction predict(const model::GgufInfo& info, const probe::DeviceCeilings& c, const Config& config,
                   const Spread& decode_spread, const Spread& prefill_spread, uint64_t device_memory_bytes) {
  Prediction p;
  p.config = config;
  p.decode_spread = decode_spread;
  p.prefill_spread = prefill_spread;
  p.memory = account_memory(info, config, device_memory_bytes, repacked_types(c));
  const auto& s = info.shape;
  const double n_layer = static_cast<double>(s.n_layer), n_embd = static_cast<double>(s.n_embd);
  const double kv_bpe = (probe::kv_type_bytes_per_element(config.type_k) + probe::kv_type_bytes_per_element(config.type_v)) / 2;
  const probe::StepCosts* steps = c.step_cost(config.threads);
  if (!steps)
    p.notes.push_back(c.device.empty()
                          ? fmt::format("per-step costs not measured {}: predicted from the matmuls and memory alone "
                                        "(edgeprobe predict on that device measures them)",
                                        where(c, config.threads))
                          : fmt::format("per-step costs are measured for the CPU only: on {} predicted from the "
                                        "matmuls and memory alone, an upper bound",
                                        c.device));
  // The bound in bench's words, from the same roofline a bench result gets.
  const probe::Roofline roof = probe::compute_roofline(info, c, config.n_prompt, config.n_gen, config.depth, 0, 0, 0,
                                                       config.threads, kv_bpe, config.n_batch, config.n_ubatch);
  const double bandwidth = c.bandwidth.read_gb_per_s_at(config.threads) > 0 ? c.bandwidth.read_gb_per_s_at(config.threads)
                                                                            : c.bandwidth.read_best_gb_per_s;

  if (config.n_gen > 0) {
    const double kernel = decode_kernel_gb_per_s(info, c, config.threads, p.notes);
    double matrix_bytes = 0, other_bytes = 0;
    const bool tied = !has_output(info);
    for (const auto& t : info.tensors) {
      if (is_matrix(t) && (!is_gathered(t.name) || tied))
        matrix_bytes += static_cast<double>(t.n_bytes) * probe::token_share(t, s);
      else if (is_gathered(t.name) && t.shape.size() >= 2) other_bytes += static_cast<double>(t.n_bytes) / static_cast<double>(t.shape[1]);
      else other_bytes += static_cast<double>(t.n_bytes);
    }
    const double cache_rate = roof.decode_cache_resident && kernel > 0 ? kernel : bandwidth;
    if (kernel > 0 && cache_rate > 0) {
      p.decode_matmul_ms = matrix_bytes / (kernel * 1e9) * 1e3;
      p.decode_memory_ms = other_bytes / (cache_rate * 1e9) * 1e3;
      double attention_ms = 0, kv_ms = 0;
      for (int64_t i = 0; i < config.n_gen; ++i) {
        const double cells = static_cast<double>(pad(config.depth + i + 1, kCtxPad));
        kv_ms += probe::kv_bytes_per_token(s, cells, kv_bpe) / (cache_rate * 1e9) * 1e3;
        if (steps) attention_ms += steps->decode_attention_ns * n_layer * n_embd * cells * 1e-6;
      }
      p.decode_attention_ms = std::max(kv_ms, attention_ms) / static_cast<double>(config.n_gen);
      if (steps) p.decode_step_ms = steps->decode_fixed_ms + steps->decode_layer_ms * n_layer;
      const double token_ms = p.decode_matmul_ms + p.decode_memory_ms + p.decode_attention_ms + p.decode_step_ms;
      p.decode_tokens_per_s = with_spread(1e3 / token_ms, decode_spread);
      p.generation_ms = time_ms(static_cast<double>(config.n_gen), p.decode_tokens_per_s);
      p.decode_bound = roof.decode_cache_resident ? "kernel (fits LLC)" : roof.decode_bound_at_threads;
      if (p.decode_bound.empty()) p.decode_bound = roof.decode_bound;
    } else {
      const bool contended = std::any_of(c.kernels.begin(), c.kernels.end(), [&](const probe::KernelPoint& k) {
        return k.phase == "decode" && k.threads == config.threads && k.error.empty() && !k.usable();
      });
      p.notes.push_back(fmt::format("decode unavailable: no {} {} on this device{}",
                                    kernel > 0 ? "bandwidth figure" : "decode kernel rate", where(c, config.threads),
                                    contended ? " (probed only while other processes held the CPUs, so kept out; "
                                                "edgeprobe probe -m MODEL --refresh on a quiet machine)"
                                              : ""));
    }
  }

  if (config.n_prompt > 0) {
    const int64_t tokens = probe::prefill_kernel_tokens(config.n_prompt, config.n_ubatch);
    const double n = static_cast<double>(config.n_prompt);
    const double n_outputs = config.n_batch > 0 ? std::ceil(n / static_cast<double>(config.n_batch)) : 1;
    const bool tied = !has_output(info);
    std::map<std::string, std::string> stand_ins;
    double seconds = 0;
    bool ok = true;
    for (const auto& t : info.tensors) {
      if (!is_matrix(t) || (is_gathered(t.name) && !tied)) continue;
      const bool output = t.name == "output.weight" || (tied && t.name == "token_embd.weight");
      if (output && !config.logits_all) {
        // The logits of the last token of each batch only: a matrix-vector product, which
        // streams the matrix like a decode step does.
        const double rate = decode_kernel_gb_per_s(info, c, config.threads, p.notes);
        const double stream = rate > 0 ? rate : bandwidth;
        if (stream > 0) {
          seconds += static_cast<double>(t.n_bytes) * n_outputs / n / (stream * 1e9);
          continue;
        }
      }
      const double flop = 2.0 * static_cast<double>(t.n_elements) * probe::token_share(t, info.shape) *
                          (output && !config.logits_all ? n_outputs / n : 1.0);
      const double rate = prefill_rate(c, t.type, t.shape[0], t.shape[1], tokens, config.threads, stand_ins);
      if (rate <= 0) {
        ok = false;
        const bool contended = std::any_of(c.kernels.begin(), c.kernels.end(), [&](const probe::KernelPoint& k) {
          return k.phase == "prefill" && k.type == t.type && k.threads == config.threads && k.error.empty() && !k.usable();
        });
        std::string why = contended ? " (probed only while other processes held the CPUs, so kept out; "
                                      "edgeprobe probe -m MODEL --refresh on a quiet machine)"
                                    : " (edgeprobe probe -m MODEL measures the model's own)";
        for (const auto& k : c.kernels)  // a GPU without the type's kernel says so
          if (!c.device.empty() && k.phase == "prefill" && k.type == t.type && !k.error.empty()) why = ": " + k.error;
        p.notes.push_back(
            fmt::format("prefill unavailable: no matmul rate for {} {}{}", t.type, where(c, config.threads), why));
        break;
      }
      seconds += flop / (rate * 1e9);
    }
    for (const auto& [type, from] : stand_ins)
      p.notes.push_back(fmt::format("{} prefill matmuls at {}'s rate (the model's shapes at {} threads were not probed)",
                                    type, from, config.threads));
    if (ok) {
      p.prefill_matmul_ms = seconds * 1e3;
      if (steps) {
        // A prompt token attends causally to the depth and the prompt up to itself. (Decode
        // above is charged for the padded cells instead: on this project's machine the
        // TinyLlama checks in docs/predict.md fit each phase that way and not the other.)
        // The step cost is paid once per ubatch.
        double attention_ns = 0;
        int64_t ubatches = 0;
        for (int64_t done = 0; done < config.n_prompt; done += config.n_ubatch) {
          const double k = static_cast<double>(std::min(config.n_ubatch, config.n_prompt - done));
          const double positions = k * static_cast<double>(config.depth + done) + k * (k + 1) / 2;
          attention_ns += steps->prefill_attention_ns * n_layer * n_embd * positions;
          ++ubatches;
        }
        p.prefill_attention_ms = attention_ns * 1e-6 / n;
        p.prefill_step_ms = (steps->prefill_fixed_ms + steps->prefill_layer_ms * n_layer) * static_cast<double>(ubatches) / n;
      }
      const double token_ms = p.prefill_matmul_ms + p.prefill_attention_ms + p.prefill_step_ms;
      p.prefill_tokens_per_s = with_spread(1e3 / token_ms, prefill_spread);
      p.ttft_ms = time_ms(n, p.prefill_tokens_per_s);
      p.prefill_bound = p.prefill_matmul_ms >= p.prefill_attention_ms + p.prefill_step_ms ? "compute"
                        : p.prefill_attention_ms >= p.prefill_step_ms                     ? "attention"
                                                                                           : "per-step work";
    }
  }

  if (c.storage) {
    add_load(p, info, c.storage->cold_mb_per_s, c.storage->warm_mb_per_s,
             fmt::format("storage probe of {} (cold: {}; warm: {})", c.storage->path, c.storage->cold_status,
                         c.storage->warm_status));
    // The cache holds the read rates of the last file probed. A file far smaller than this
    // model is read mostly in its first, readahead-sized stretches, which say little about
    // the rate a long read sustains, so the load time leans on a figure of another size.
    const uint64_t model_read = std::min<uint64_t>(info.file_bytes, probe::StorageOptions{}.max_bytes);
    if (c.storage->bytes_read > 0 && c.storage->bytes_read * 4 < model_read)
      p.notes.push_back(fmt::format(
          "load time from the read rates of {} ({:.0f} MB read), a file under a quarter of the {:.0f} MB this model's "
          "load reads: edgeprobe probe -m FILE with a file of this model's size measures them",
          c.storage->path, static_cast<double>(c.storage->bytes_read) / 1e6, static_cast<double>(model_read) / 1e6));
  } else
    p.load_basis = "unavailable: no storage probe on this device (edgeprobe probe -m FILE measures the read rates)";
  return p;
}

Prediction predict_from_spec(const model::GgufInfo& info, const DeviceSpec& spec, const Config& config,
                             const Efficiency& de, const Efficiency& pe) {
  Prediction p;
  p.config = config;
  p.memory = account_memory(info, config, spec.memory_bytes, {});
  const double kv_bpe = (probe::kv_type_bytes_per_element(config.type_k) + probe::kv_type_bytes_per_element(config.type_v)) / 2;
  auto spread_of = [](const Efficiency& e, const char* roof) {
    Spread s;
    if (e.median > 0) {
      s.low = e.low / e.median;
      s.high = e.high / e.median;
    }
    s.basis = fmt::format("the share of the {} roof reached by {} stored run(s) on {} device(s)", roof, e.runs, e.devices);
    return s;
  };
  if (config.n_gen > 0) {
    p.decode_spread = spread_of(de, "bandwidth");
    const double depth = static_cast<double>(config.depth) + static_cast<double>(config.n_gen - 1) / 2.0;
    const double bytes = probe::decode_bytes_per_token(info, static_cast<int64_t>(depth), kv_bpe);
    if (de.median > 0 && bytes > 0) {
      p.decode_tokens_per_s = with_spread(spec.bandwidth_gb_per_s * 1e9 / bytes * de.median, p.decode_spread);
      p.generation_ms = time_ms(static_cast<double>(config.n_gen), p.decode_tokens_per_s);
      p.decode_bound = "bandwidth";
    } else {
      p.notes.push_back("decode unavailable: no stored run with a bandwidth efficiency to scale the spec by");
    }
  }
  if (config.n_prompt > 0) {
    p.prefill_spread = spread_of(pe, "compute");
    const double context = static_cast<double>(config.depth) + static_cast<double>(config.n_prompt + 1) / 2.0;
    const double flop = probe::prefill_flops_per_token(info, context, 1.0 / static_cast<double>(config.n_prompt));
    if (spec.matmul_gflop_per_s <= 0) {
      p.notes.push_back("prefill unavailable: give the device's matmul rate (--gflops)");
    } else if (pe.median <= 0) {
      p.notes.push_back("prefill unavailable: no stored run with a prefill efficiency to scale the spec by");
    } else {
      p.prefill_tokens_per_s = with_spread(spec.matmul_gflop_per_s * 1e9 / flop * pe.median, p.prefill_spread);
      p.ttft_ms = time_ms(static_cast<double>(config.n_prompt), p.prefill_tokens_per_s);
      p.prefill_bound = "compute";
    }
  }
  if (spec.storage_mb_per_s > 0)
    add_load(p, info, spec.storage_mb_per_s, 0, "the given storage read rate (cold)");
  else
    p.load_basis = "unavailable: no storage rate given (--storage-mb-per-s)";
  p.notes.push_back("device given as a spec, not measured: rates are the spec's roofs times the efficiencies stored "
                    "runs reached");
  return p;
}

Prediction predict_from_catalogue(const model::GgufInfo& info, const published::Calibration& calibration,
                                  const published::Figures& figures, const std::string& backend,
                                  const Config& config, double storage_mb_per_s) {
  Prediction p;
  p.config = config;
  p.memory = account_memory(info, config, static_cast<uint64_t>(figures.memory_gb * 1e9), {});
  const bool cpu = backend == "cpu";
  auto take = [&](const published::Answer& a, Estimate& rate, Spread& spread, std::string& bound) {
    for (const auto& n : a.notes) p.notes.push_back(n);
    if (a.value <= 0) return false;
    rate = {a.value, a.low, a.high};
    spread.low = a.low / a.value;
    spread.high = a.high / a.value;
    spread.basis = a.basis;
    bound = a.bound;
    return true;
  };
  if (config.n_gen > 0) {
    published::Query q;
    q.phase = "decode";
    q.backend = backend;
    q.figures = figures;
    q.threads = cpu ? config.threads : 0;
    q.params = static_cast<double>(info.n_params());
    // The weights once per token, plus the KV cache at the generation's middle position
    // (the published runs are at depth 0, where it is under 1 % of the weights).
    const int64_t cells = config.depth + (config.n_gen + 1) / 2;
    q.weight_bytes = static_cast<double>(info.weight_bytes()) +
                     static_cast<double>(kv_cache_bytes(info.shape, cells, config.type_k, config.type_v));
    if (take(published::predict(calibration, q), p.decode_tokens_per_s, p.decode_spread, p.decode_bound))
      p.generation_ms = time_ms(static_cast<double>(config.n_gen), p.decode_tokens_per_s);
  }
  if (config.n_prompt > 0) {
    published::Query q;
    q.phase = "prefill";
    q.backend = backend;
    q.figures = figures;
    q.threads = cpu ? config.threads : 0;
    q.params = static_cast<double>(info.n_params());
    q.weight_bytes = static_cast<double>(info.weight_bytes());
    if (take(published::predict(calibration, q), p.prefill_tokens_per_s, p.prefill_spread, p.prefill_bound))
      p.ttft_ms = time_ms(static_cast<double>(config.n_prompt), p.prefill_tokens_per_s);
    if (config.depth > 0 || config.n_prompt > 512)
      p.notes.push_back(
          "prefill: attention over a long context is not modelled (the published prefill runs are "
          "pp512 or shorter at depth 0)");
  }
  if (storage_mb_per_s > 0)
    add_load(p, info, storage_mb_per_s, 0, "the given storage read rate (cold)");
  else
    p.load_basis = "unavailable: no storage rate given (--storage-mb-per-s)";
  p.notes.push_back(
      fmt::format("device not measured: {} efficiencies fitted on the published fit measurements "
                  "(data/predict: {} of {} usable), bytes per token = the model's weights{}",
                  backend, calibration.fit_entries - calibration.skipped.size(), calibration.fit_entries,
                  figures.bandwidth_basis.empty() ? "" : "; bandwidth " + figures.bandwidth_basis));
  return p;
}

nlohmann::json to_json(const Prediction& p) {
  auto est = [](const Estimate& e) -> nlohmann::json {
    if (e.value <= 0) return nullptr;
    return {{"value", e.value}, {"low", e.low}, {"high", e.high}};
  };
  auto str_or_null = [](const std::string& s) -> nlohmann::json { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  return {{"config",
           {{"threads", p.config.threads},
            {"n_prompt", p.config.n_prompt},
            {"n_gen", p.config.n_gen},
            {"n_depth", p.config.depth},
            {"n_batch", p.config.n_batch},
            {"n_ubatch", p.config.n_ubatch},
            {"type_k", p.config.type_k},
            {"type_v", p.config.type_v}}},
          {"prefill_tokens_per_s", est(p.prefill_tokens_per_s)},
          {"decode_tokens_per_s", est(p.decode_tokens_per_s)},
          {"ttft_ms", est(p.ttft_ms)},
          {"generation_ms", est(p.generation_ms)},
          {"decode_ms_per_token",
           {{"matmul", p.decode_matmul_ms},
            {"memory", p.decode_memory_ms},
            {"attention", p.decode_attention_ms},
            {"step", p.decode_step_ms}}},
          {"prefill_ms_per_token",
           {{"matmul", p.prefill_matmul_ms}, {"attention", p.prefill_attention_ms}, {"step", p.prefill_step_ms}}},
          {"decode_bound", str_or_null(p.decode_bound)},
          {"prefill_bound", str_or_null(p.prefill_bound)},
          {"memory",
           {{"n_ctx", p.memory.n_ctx},
            {"weights_bytes", p.memory.weights_bytes},
            {"repacked_bytes", p.memory.repacked_bytes},
            {"kv_bytes", p.memory.kv_bytes},
            {"compute_bytes", p.memory.compute_bytes},
            {"compute_basis", "an upper estimate (docs/predict.md)"},
            {"total_bytes", p.memory.total_bytes()},
            {"device_bytes", p.memory.device_bytes > 0 ? nlohmann::json(p.memory.device_bytes) : nlohmann::json(nullptr)},
            {"fits", p.memory.fits}}},
          {"load_cold_ms", est(p.load_cold_ms)},
          {"load_warm_ms", est(p.load_warm_ms)},
          {"load_basis", p.load_basis},
          {"decode_interval_basis", p.decode_spread.basis},
          {"prefill_interval_basis", p.prefill_spread.basis},
          {"notes", p.notes}};
}

nlohmann::json check_json(const Prediction& p, Measured prefill, Measured decode) {
  auto phase = [](const Estimate& e, Measured m) -> nlohmann::json {
    if (e.value <= 0) return nullptr;
    nlohmann::json j = {{"predicted_tokens_per_s", e.value}, {"low", e.low}, {"high", e.high}};
    if (m.best > 0) {
      j["measured_best_tokens_per_s"] = m.best;
      j["best_over_predicted"] = m.best / e.value;
      j["measured_median_tokens_per_s"] = m.median;
      j["median_over_predicted"] = m.median / e.value;
    }
    return j;
  };
  return {{"prefill", phase(p.prefill_tokens_per_s, prefill)},
          {"decode", phase(p.decode_tokens_per_s, decode)},
          {"decode_bound", p.decode_bound.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.decode_bound)},
          {"notes", p.notes}};
}

}  // namespace edgeprobe::predict
