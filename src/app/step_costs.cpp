#include "app/step_costs.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <tuple>

#include "analysis/contamination.h"
#include "app/bench_job.h"
#include "core/clock.h"
#include "core/error.h"
#include "model/synth.h"
#include "predict/predict.h"
#include "probe/roofline.h"
#include "runner/provenance.h"

namespace edgeprobe::app {
namespace {

// Costs measured by an older method are measured again: 2 takes prefill attention from a
// prompt that fills flash attention's tiles (long_prompt).
constexpr int kMethod = 2;
constexpr int kGenTokens = 32;
constexpr int kPromptShort = 64;
constexpr int kDecodeDepth = 1024;   // the decode runs' second depth: attention's share grows with it
constexpr int kPrefillDepth = 512;

// The prompt the prefill attention and per-layer costs are taken from. ggml's CPU flash
// attention works through tiles of 64 query rows of one head, a thread's share being a
// quarter of n_prompt x n_head / threads rows: with the tiny model's 4 heads, a prompt under
// 64 x threads leaves tiles part empty and charges each position up to twice what a real
// model's 32 heads pay (measured here: 0.076 ns at pp64, 0.040 at pp256, 0.033-0.040 for
// TinyLlama at pp512). Capped at one ubatch of llama.cpp's default 512.
int long_prompt(int threads) { return std::clamp(64 * threads, 256, 512); }
constexpr int kRepetitions = 3;
constexpr int kFewLayers = 4, kManyLayers = 16;

model::SynthShape tiny_with_layers(int layers) {
  model::SynthShape s = model::named_shape("tiny");
  if (s.n_layer != layers) s.name = fmt::format("tiny-{}l", layers);
  s.n_layer = layers;
  return s;
}

int64_t pad256(int64_t n) { return (n + 255) / 256 * 256; }

double best_rate(const result::TestResult& r, bool decode) {
  double best = 0;
  for (const auto& rep : r.repetitions) best = std::max(best, decode ? rep.decode_tokens_per_s : rep.prefill_tokens_per_s);
  return best;
}

// The KV cells a timed decode step attends to, on average (every generated token after the
// first, padded to 256 as llama.cpp's cache is).
double decode_cells(int depth) {
  double cells = 0;
  for (int i = 1; i < kGenTokens; ++i) cells += static_cast<double>(pad256(depth + i + 1));
  return cells / (kGenTokens - 1);
}

// Sum over a prompt's tokens of the positions each attends to, causally: the depth and the
// prompt tokens up to itself (one ubatch: these prompts are short). See predict.cpp on why
// prefill counts causal positions and decode padded cells.
double prefill_cell_tokens(int n_prompt, int depth) {
  const double n = n_prompt;
  return n * depth + n * (n + 1) / 2;
}

workload::TestCase test_case(const std::string& model, int threads, int n_prompt, int n_gen, int depth) {
  workload::TestCase c;
  c.model_path = model;
  c.kind = n_prompt > 0 ? workload::TestKind::kPrompt : workload::TestKind::kGenerate;
  c.n_prompt = n_prompt;
  c.n_gen = n_gen;
  c.n_depth = depth;
  c.n_threads = threads;
  return c;
}

}  // namespace

int ensure_step_costs(probe::DeviceCeilings& ceilings, const std::set<int>& threads, const Environment& env,
                      const probe::ProbeOptions& options, const JobContext& context) {
  std::set<int> missing;
  for (int t : threads)
    if (t > 0 && (!ceilings.step_cost(t) || ceilings.step_cost(t)->method < kMethod)) missing.insert(t);
  // A test's scripted engine has no step costs of this device to give.
  if (missing.empty() || ceilings.compute_status != "measured" || context.engine) return 0;

  const std::array<int, 2> layer_counts = {kFewLayers, kManyLayers};
  std::vector<std::string> paths;
  std::vector<model::GgufInfo> infos;
  for (int layers : layer_counts) {
    paths.push_back(model::synthesized_model(tiny_with_layers(layers), "q4_0"));
    infos.push_back(model::read_gguf_info(paths.back()));
  }
  int measured = 0;
  for (int t : missing) {
    if (context.sink) context.sink->progress(fmt::format("measuring the per-step costs at {} thread(s) (cached after the first run)", t));
    probe::KernelNeeds needs;
    const int prompt_long = long_prompt(t);
    needs.prefill_tokens = {kPromptShort, prompt_long};
    needs.prefill_threads = {t};
    needs.decode_threads = {t};
    for (const auto& info : infos) probe::ensure_model_kernels(ceilings, info, needs, options);

    BenchPlan plan;
    for (const auto& path : paths)
      for (const auto& c : {test_case(path, t, kPromptShort, 0, 0), test_case(path, t, prompt_long, 0, kPrefillDepth),
                            test_case(path, t, prompt_long, 0, 0), test_case(path, t, 0, kGenTokens, 0),
                            test_case(path, t, 0, kGenTokens, kDecodeDepth)})
        plan.cases.push_back(c);
    plan.run.repetitions = kRepetitions;
    plan.ceilings = "off";
    plan.hash_models = false;
    plan.env.cpu_variant = env.cpu_variant;
    plan.env.sysfs_root = env.sysfs_root;
    // Telemetry on: a run beside other work would put their CPU time into the step costs
    // (12-07: 0.63 ms a layer per token, x60 the quiet figure, cut every decode prediction 4x).
    JobContext sub;
    sub.stop = context.stop;
    sub.engine = context.engine;
    const BenchJobResult run = run_bench(plan, sub);
    if (run.outcome.interrupted || !run.outcome.errors.empty()) {
      if (context.sink)
        context.sink->warning(fmt::format("per-step costs at {} thread(s) not measured ({}): predictions leave them out",
                                          t, run.outcome.interrupted ? "stopped" : run.outcome.errors.front()));
      continue;
    }

    std::string contaminated;
    const nlohmann::json provenance = result::to_json(run.report.provenance);
    for (const auto& r : run.report.results)
      if (const auto flags = analysis::contamination(r, provenance); !flags.empty() && contaminated.empty())
        contaminated = r.config.name() + ": " + flags.front();
    if (!contaminated.empty()) {
      if (context.sink)
        context.sink->warning(
            fmt::format("per-step costs at {} thread(s) not kept: measured while the machine did other work "
                        "({}); predictions leave them out until a quiet run measures them",
                        t, contaminated));
      continue;
    }
    // Each run's time less what the kernel probe accounts for (the model's matmuls), from
    // the predictor itself without step costs: what the step costs must explain.
    probe::DeviceCeilings bare = ceilings;
    bare.step_costs.clear();
    std::map<std::tuple<int, int, int, int>, double> rest;  // (layers, n_prompt, n_gen, depth) -> ms
    for (const auto& r : run.report.results) {
      const auto& cfg = r.config;
      const auto it = std::find(paths.begin(), paths.end(), cfg.model_path);
      const double rate = best_rate(r, cfg.n_gen > 0);
      if (it == paths.end() || rate <= 0) continue;
      const auto& info = infos[static_cast<size_t>(it - paths.begin())];
      predict::Config pc;
      pc.threads = t;
      pc.n_prompt = cfg.n_prompt;
      pc.n_gen = cfg.n_gen;
      pc.depth = cfg.n_depth;
      const predict::Prediction base = predict::predict(info, bare, pc, {}, {}, 0);
      const double ms = cfg.n_gen > 0 ? 1e3 / rate - base.decode_matmul_ms - base.decode_memory_ms
                                      : (cfg.n_prompt / rate * 1e3) - base.prefill_matmul_ms * cfg.n_prompt;
      rest[{static_cast<int>(info.shape.n_layer), cfg.n_prompt, cfg.n_gen, cfg.n_depth}] = ms;
    }
    if (rest.size() != plan.cases.size()) {
      if (context.sink) context.sink->warning(fmt::format("per-step costs at {} thread(s) not measured: a run gave no rate", t));
      continue;
    }
    // Differences, each taken where only one term changes: depth isolates attention (the
    // deeper model, where it is largest), the layer count the per-layer cost, and what is
    // left of the shallow model is the per-step cost.
    const double embd = static_cast<double>(infos[0].shape.n_embd);
    const double few = kFewLayers, many = kManyLayers;
    auto at = [&](int layers, int p, int n, int d) { return rest.at({layers, p, n, d}); };
    probe::StepCosts sc;
    sc.threads = t;
    const double d_att = (at(kManyLayers, 0, kGenTokens, kDecodeDepth) - at(kManyLayers, 0, kGenTokens, 0)) /
                         (many * embd * (decode_cells(kDecodeDepth) - decode_cells(0)));
    sc.decode_attention_ns = std::max(0.0, d_att) * 1e6;
    const double d_att0 = std::max(0.0, d_att) * embd * decode_cells(0);
    const double d_layer = ((at(kManyLayers, 0, kGenTokens, 0) - at(kFewLayers, 0, kGenTokens, 0)) / (many - few)) - d_att0;
    sc.decode_layer_ms = std::max(0.0, d_layer);
    sc.decode_fixed_ms = std::max(0.0, at(kFewLayers, 0, kGenTokens, 0) - few * (sc.decode_layer_ms + d_att0));
    const double p_att = (at(kManyLayers, prompt_long, 0, kPrefillDepth) - at(kManyLayers, prompt_long, 0, 0)) /
                         (many * embd * (prefill_cell_tokens(prompt_long, kPrefillDepth) - prefill_cell_tokens(prompt_long, 0)));
    sc.prefill_attention_ns = std::max(0.0, p_att) * 1e6;
    const double p_att_long = std::max(0.0, p_att) * embd * prefill_cell_tokens(prompt_long, 0);
    sc.prefill_layer_ms =
        std::max(0.0, (at(kManyLayers, prompt_long, 0, 0) - at(kFewLayers, prompt_long, 0, 0)) / (many - few) - p_att_long);
    sc.prefill_fixed_ms = std::max(0.0, at(kFewLayers, prompt_long, 0, 0) - few * (sc.prefill_layer_ms + p_att_long));
    // How well the three figures reproduce the runs they were not taken from.
    auto misfit = [&](bool decode) {
      double worst = 0;
      for (const auto& [key, ms] : rest) {
        const auto [layers, p, n, d] = key;
        if ((n > 0) != decode) continue;
        const double L = layers;
        const double model = decode ? sc.decode_fixed_ms + L * sc.decode_layer_ms + sc.decode_attention_ns * 1e-6 * L * embd * decode_cells(d)
                                    : sc.prefill_fixed_ms + L * sc.prefill_layer_ms +
                                          sc.prefill_attention_ns * 1e-6 * L * embd * prefill_cell_tokens(p, d);
        worst = std::max(worst, std::abs(model - ms) / std::max(1e-9, std::abs(ms)));
      }
      return worst;
    };
    sc.decode_residual = misfit(true);
    sc.prefill_residual = misfit(false);
    sc.basis = fmt::format("synthesized tiny models with {} and {} layers (n_embd {}): tg{} at depth 0 and {}, pp{} at "
                           "depth 0 and {}, pp{}; best of {} repetitions, less their matmuls at the kernel probe's rates",
                           kFewLayers, kManyLayers, infos[0].shape.n_embd, kGenTokens, kDecodeDepth, prompt_long,
                           kPrefillDepth, kPromptShort, kRepetitions);
    sc.method = kMethod;
    sc.measured_at_utc = utc_now_rfc3339();
    std::erase_if(ceilings.step_costs, [&](const probe::StepCosts& old) { return old.threads == t; });
    ceilings.step_costs.push_back(sc);
    ++measured;
  }
  if (measured > 0) probe::save_cache(ceilings);
  return measured;
}

}  // namespace edgeprobe::app
