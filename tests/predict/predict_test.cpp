// The prediction's arithmetic on ceilings made by hand: every figure here is computed from
// the inputs by the formula docs/predict.md states, so a change to the model shows up.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "predict/predict.h"
#include "probe/roofline.h"

using namespace edgeprobe;

namespace {

// A two-layer llama-shaped model whose every matrix is q8_0 (34 bytes per 32 weights).
model::GgufInfo toy_model() {
  model::GgufInfo info;
  info.shape = {"llama", 1024, 2048, 256, 2, 512, 4, 2};
  info.file_bytes = 1 << 20;
  auto add = [&](const std::string& name, const std::string& type, int64_t ne0, int64_t ne1) {
    model::TensorInfo t;
    t.name = name;
    t.type = type;
    t.shape = ne1 > 0 ? std::vector<int64_t>{ne0, ne1} : std::vector<int64_t>{ne0};
    t.n_elements = ne0 * std::max<int64_t>(1, ne1);
    t.n_bytes = type == "q8_0" ? static_cast<uint64_t>(t.n_elements / 32 * 34) : static_cast<uint64_t>(t.n_elements * 4);
    info.tensors.push_back(t);
  };
  add("token_embd.weight", "q8_0", 256, 1024);
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", "f32", 256, 0);
    add(p + "attn_q.weight", "q8_0", 256, 256);
    add(p + "attn_k.weight", "q8_0", 256, 128);
    add(p + "attn_v.weight", "q8_0", 256, 128);
    add(p + "attn_output.weight", "q8_0", 256, 256);
    add(p + "ffn_norm.weight", "f32", 256, 0);
    add(p + "ffn_gate.weight", "q8_0", 256, 512);
    add(p + "ffn_down.weight", "q8_0", 512, 256);
    add(p + "ffn_up.weight", "q8_0", 256, 512);
  }
  add("output_norm.weight", "f32", 256, 0);
  add("output.weight", "q8_0", 256, 1024);
  return info;
}

probe::DeviceCeilings toy_ceilings(const model::GgufInfo& info, bool with_steps) {
  probe::DeviceCeilings c;
  c.threads = 2;
  c.compute_status = "measured";
  probe::BandwidthPoint bp;
  bp.kernel = "read";
  bp.scope = "device";
  bp.threads = 2;
  bp.best_gb_per_s = 20;
  bp.median_gb_per_s = 18;
  bp.passes = 5;
  bp.cpu_share = 1;
  c.bandwidth.points.push_back(bp);
  c.bandwidth.read_best_gb_per_s = 20;
  c.bandwidth.read_median_gb_per_s = 18;
  probe::KernelPoint d;
  d.phase = "decode";
  d.model = probe::matrices_signature(probe::decode_matrices(info));
  d.threads = 2;
  d.best_gb_per_s = 10;
  d.median_gb_per_s = 8;
  d.reps = 40;
  d.cpu_share = 1;
  c.kernels.push_back(d);
  for (const auto& shape : probe::decode_matrices(info)) {
    probe::KernelPoint k;
    k.phase = "prefill";
    k.type = shape.type;
    k.cols = shape.cols;
    k.rows = shape.rows;
    k.tokens = 64;
    k.threads = 2;
    k.best_gflop_per_s = 50;
    k.median_gflop_per_s = 45;
    k.reps = 5;
    k.cpu_share = 1;
    c.kernels.push_back(k);
  }
  if (with_steps) {
    probe::StepCosts s;
    s.threads = 2;
    s.decode_fixed_ms = 0.5;
    s.decode_layer_ms = 0.25;
    s.decode_attention_ns = 0.0;
    s.prefill_fixed_ms = 1.0;
    s.prefill_layer_ms = 0.5;
    s.prefill_attention_ns = 0.0;
    c.step_costs.push_back(s);
  }
  return c;
}

}  // namespace

TEST(PredictMemory, KvCacheIsKAndVPerCellAtLlamaCppsPaddedContext) {
  predict::Config c;
  c.n_prompt = 512;
  c.n_gen = 128;
  c.depth = 100;
  EXPECT_EQ(predict::context_size(c), 768);  // 740 padded to 256
  c.n_prompt = 0;
  c.n_gen = 1;
  c.depth = 0;
  EXPECT_EQ(predict::context_size(c), 256);
  // TinyLlama: 22 layers x 4 KV heads x 64 dims, K and V in f16 = 22528 bytes a cell.
  const model::ModelShape tinyllama{"llama", 32000, 2048, 2048, 22, 5632, 32, 4};
  EXPECT_EQ(predict::kv_cache_bytes(tinyllama, 768, "f16", "f16"), 22528u * 768u);
  // q8_0 is 34 bytes per 32 elements: K in q8_0, V in f16.
  EXPECT_EQ(predict::kv_cache_bytes(tinyllama, 256, "q8_0", "f16"),
            static_cast<uint64_t>(22.0 * 4 * 64 * (34.0 / 32 + 2) * 256));
}

TEST(PredictDecode, IsTheMatricesAtTheKernelRatePlusMemoryPlusStepCosts) {
  const auto info = toy_model();
  const auto c = toy_ceilings(info, true);
  predict::Config cfg;
  cfg.threads = 2;
  cfg.n_prompt = 0;
  cfg.n_gen = 16;
  const auto p = predict::predict(info, c, cfg, {}, {}, 0);
  double matrices = 0, other = 0;
  for (const auto& t : info.tensors) {
    if (t.name == "token_embd.weight") other += static_cast<double>(t.n_bytes) / 1024;  // one row
    else if (t.shape.size() == 2) matrices += static_cast<double>(t.n_bytes);
    else other += static_cast<double>(t.n_bytes);
  }
  const double kv = probe::kv_bytes_per_token(info.shape, 256, 2.0);  // 16 tokens attend to 256 padded cells
  const double expected_ms = matrices / 10e9 * 1e3 + (other + kv) / 20e9 * 1e3 + 0.5 + 0.25 * 2;
  ASSERT_GT(p.decode_tokens_per_s.value, 0);
  EXPECT_NEAR(1e3 / p.decode_tokens_per_s.value, expected_ms, expected_ms * 1e-9);
  EXPECT_NEAR(p.decode_step_ms, 1.0, 1e-12);
  EXPECT_NEAR(p.generation_ms.value, 16 * expected_ms, 16 * expected_ms * 1e-9);
}

TEST(PredictDecode, WithoutStepCostsSaysSoAndPredictsLess) {
  const auto info = toy_model();
  predict::Config cfg;
  cfg.threads = 2;
  cfg.n_prompt = 0;
  cfg.n_gen = 16;
  const auto with = predict::predict(info, toy_ceilings(info, true), cfg, {}, {}, 0);
  const auto without = predict::predict(info, toy_ceilings(info, false), cfg, {}, {}, 0);
  EXPECT_GT(without.decode_tokens_per_s.value, with.decode_tokens_per_s.value);
  ASSERT_FALSE(without.notes.empty());
  EXPECT_NE(without.notes.front().find("per-step costs not measured"), std::string::npos) << without.notes.front();
}

TEST(PredictDecode, AnotherThreadCountWithoutKernelPointIsUnavailableNotInvented) {
  const auto info = toy_model();
  predict::Config cfg;
  cfg.threads = 1;  // the ceilings hold points at 2 threads only
  cfg.n_prompt = 0;
  cfg.n_gen = 16;
  const auto p = predict::predict(info, toy_ceilings(info, true), cfg, {}, {}, 0);
  EXPECT_EQ(p.decode_tokens_per_s.value, 0);
  const auto j = predict::to_json(p);
  EXPECT_TRUE(j["decode_tokens_per_s"].is_null());
}

// Load time is the file's size at the storage probe's rates; a probe of a far smaller file
// (the cache keeps the last file probed) is named, with the command that measures one of
// this model's size.
TEST(PredictLoad, IsTheFileAtTheProbedRatesAndNamesAProbeOfAFarSmallerFile) {
  auto info = toy_model();
  info.file_bytes = 400'000'000;
  auto c = toy_ceilings(info, true);
  probe::StorageResult s;
  s.path = "/models/tiny.gguf";
  s.file_bytes = s.bytes_read = 10'000'000;
  s.cold_mb_per_s = 200;
  s.warm_mb_per_s = 4000;
  c.storage = s;
  predict::Config cfg;
  cfg.threads = 2;
  cfg.n_prompt = 0;
  cfg.n_gen = 16;
  auto note_about_size = [](const predict::Prediction& p) {
    return std::find_if(p.notes.begin(), p.notes.end(), [](const std::string& n) {
      return n.find("a file under a quarter of the") != std::string::npos;
    });
  };
  const auto small = predict::predict(info, c, cfg, {}, {}, 0);
  EXPECT_NEAR(small.load_cold_ms.value, 400.0 / 200 * 1e3, 1e-9);
  EXPECT_NEAR(small.load_warm_ms.value, 400.0 / 4000 * 1e3, 1e-9);
  const auto note = note_about_size(small);
  ASSERT_NE(note, small.notes.end());
  EXPECT_NE(note->find("/models/tiny.gguf (10 MB read)"), std::string::npos) << *note;
  EXPECT_NE(note->find("400 MB"), std::string::npos) << *note;
  // A probe of a file of comparable size (or of the 1 GiB prefix the probe reads) says nothing.
  c.storage->file_bytes = c.storage->bytes_read = 300'000'000;
  const auto comparable = predict::predict(info, c, cfg, {}, {}, 0);
  EXPECT_EQ(note_about_size(comparable), comparable.notes.end());
}

TEST(PredictPrefill, IsEachMatrixAtItsShapesRatePlusTheUbatchCost) {
  const auto info = toy_model();
  predict::Config cfg;
  cfg.threads = 2;
  cfg.n_prompt = 64;
  cfg.n_gen = 0;
  cfg.n_ubatch = 512;
  const auto p = predict::predict(info, toy_ceilings(info, true), cfg, {}, {}, 0);
  double flop = 0, output_bytes = 0;
  for (const auto& t : info.tensors) {
    if (t.shape.size() != 2 || t.name == "token_embd.weight") continue;
    if (t.name == "output.weight") output_bytes = static_cast<double>(t.n_bytes);
    else flop += 2.0 * static_cast<double>(t.n_elements);
  }
  // The output matrix runs for the last token only: streamed at the decode kernel's rate.
  const double expected_ms = flop / 50e9 * 1e3 + output_bytes / 64 / 10e9 * 1e3 + (1.0 + 0.5 * 2) / 64;
  ASSERT_GT(p.prefill_tokens_per_s.value, 0);
  EXPECT_NEAR(1e3 / p.prefill_tokens_per_s.value, expected_ms, expected_ms * 1e-9);
  EXPECT_EQ(p.prefill_bound, "compute");
  EXPECT_NEAR(p.ttft_ms.value, 64 * expected_ms, 64 * expected_ms * 1e-9);
}

TEST(PredictPrefill, AVerifyBatchHasLogitsForEveryToken) {
  // A speculative verify batch (logits_all): the output matrix runs over every token of the
  // batch, at the prefill kernel's rate like the others, not streamed for the last alone.
  const auto info = toy_model();
  predict::Config cfg;
  cfg.threads = 2;
  cfg.n_prompt = 64;
  cfg.n_gen = 0;
  cfg.logits_all = true;
  const auto p = predict::predict(info, toy_ceilings(info, true), cfg, {}, {}, 0);
  double flop = 0;
  for (const auto& t : info.tensors)
    if (t.shape.size() == 2 && t.name != "token_embd.weight") flop += 2.0 * static_cast<double>(t.n_elements);
  const double expected_ms = flop / 50e9 * 1e3 + (1.0 + 0.5 * 2) / 64;
  ASSERT_GT(p.prefill_tokens_per_s.value, 0);
  EXPECT_NEAR(1e3 / p.prefill_tokens_per_s.value, expected_ms, expected_ms * 1e-9);
}

TEST(PredictInterval, ASpreadWidensTheRateAndFlipsForTimes) {
  const auto info = toy_model();
  predict::Config cfg;
  cfg.threads = 2;
  cfg.n_prompt = 0;
  cfg.n_gen = 10;
  const predict::Spread s{0.8, 1.1, "test"};
  const auto p = predict::predict(info, toy_ceilings(info, true), cfg, s, s, 0);
  EXPECT_NEAR(p.decode_tokens_per_s.low, 0.8 * p.decode_tokens_per_s.value, 1e-9);
  EXPECT_NEAR(p.decode_tokens_per_s.high, 1.1 * p.decode_tokens_per_s.value, 1e-9);
  // the slowest rate gives the longest time
  EXPECT_NEAR(p.generation_ms.high, 10 / p.decode_tokens_per_s.low * 1e3, 1e-6);
  EXPECT_LT(p.generation_ms.low, p.generation_ms.value);
}

TEST(PredictMemory, SaysWillNotFitAgainstTheDevicesMemory) {
  const auto info = toy_model();
  predict::Config cfg;
  cfg.threads = 2;
  const auto fits = predict::predict(info, toy_ceilings(info, true), cfg, {}, {}, 1ull << 30);
  EXPECT_TRUE(fits.memory.fits);
  const auto tight = predict::predict(info, toy_ceilings(info, true), cfg, {}, {}, 100'000);
  EXPECT_FALSE(tight.memory.fits);
  EXPECT_EQ(tight.memory.weights_bytes, info.weight_bytes());
  EXPECT_FALSE(predict::to_json(tight)["memory"]["fits"].get<bool>());
}

TEST(PredictSpec, DecodeIsTheBandwidthRoofTimesTheStoredEfficiency) {
  const auto info = toy_model();
  predict::DeviceSpec spec;
  spec.bandwidth_gb_per_s = 25;
  predict::Efficiency de{0.8, 0.6, 0.9, 12, 3};
  predict::Config cfg;
  cfg.n_prompt = 0;
  cfg.n_gen = 1;
  const auto p = predict::predict_from_spec(info, spec, cfg, de, {});
  const double bytes = probe::decode_bytes_per_token(info, 0, 2.0);
  EXPECT_NEAR(p.decode_tokens_per_s.value, 25e9 / bytes * 0.8, 1e-6);
  EXPECT_NEAR(p.decode_tokens_per_s.low, 25e9 / bytes * 0.6, 1e-6);
  EXPECT_NE(p.decode_spread.basis.find("12 stored run(s) on 3 device(s)"), std::string::npos) << p.decode_spread.basis;
  // No efficiencies stored: unavailable, with the reason.
  const auto none = predict::predict_from_spec(info, spec, cfg, {}, {});
  EXPECT_EQ(none.decode_tokens_per_s.value, 0);
}

TEST(PredictCheck, CarriesBothTheBestAndTheMedianRatio) {
  const auto info = toy_model();
  predict::Config cfg;
  cfg.threads = 2;
  cfg.n_prompt = 0;
  cfg.n_gen = 16;
  const auto p = predict::predict(info, toy_ceilings(info, true), cfg, {}, {}, 0);
  const auto j = predict::check_json(p, {}, {p.decode_tokens_per_s.value * 0.9, p.decode_tokens_per_s.value * 0.8});
  EXPECT_TRUE(j["prefill"].is_null());
  EXPECT_NEAR(j["decode"]["best_over_predicted"].get<double>(), 0.9, 1e-12);
  EXPECT_NEAR(j["decode"]["median_over_predicted"].get<double>(), 0.8, 1e-12);
}

// A GPU entry of the ceilings (probe --gpu): points at threads 0, no step costs.
probe::DeviceCeilings toy_gpu(const model::GgufInfo& info) {
  probe::DeviceCeilings g = toy_ceilings(info, false);
  g.device = "Vulkan0";
  g.threads = 0;
  for (auto& p : g.bandwidth.points) p.threads = 0;
  for (auto& k : g.kernels) k.threads = 0;
  return g;
}

TEST(PredictGpu, UsesTheGpusOwnKernelRatesAndSaysStepCostsAreTheCpusOnly) {
  const auto info = toy_model();
  predict::Config cfg;
  cfg.threads = 0;
  cfg.n_prompt = 64;
  cfg.n_gen = 16;
  const auto p = predict::predict(info, toy_gpu(info), cfg, {}, {}, 0);
  // The same figures as the CPU's toy at 2 threads, so the same decode rate without step costs.
  predict::Config cpu = cfg;
  cpu.threads = 2;
  const auto q = predict::predict(info, toy_ceilings(info, false), cpu, {}, {}, 0);
  ASSERT_GT(p.decode_tokens_per_s.value, 0);
  EXPECT_DOUBLE_EQ(p.decode_tokens_per_s.value, q.decode_tokens_per_s.value);
  EXPECT_DOUBLE_EQ(p.prefill_tokens_per_s.value, q.prefill_tokens_per_s.value);
  bool said = false;
  for (const auto& n : p.notes) said = said || n.find("measured for the CPU only: on Vulkan0") != std::string::npos;
  EXPECT_TRUE(said) << p.notes.front();
}

TEST(PredictGpu, ATypeTheGpuHasNoKernelForIsUnavailableNotAnotherTypesRate) {
  const auto info = toy_model();
  auto g = toy_gpu(info);
  // Vulkan without the q8_0 kernel: the probe stored errors instead of rates.
  std::erase_if(g.kernels, [](const probe::KernelPoint&) { return true; });
  probe::KernelPoint pre;
  pre.phase = "prefill";
  pre.type = "q8_0";
  pre.tokens = 64;
  pre.error = "Vulkan0 has no q8_0 matmul kernel (llama.cpp runs it on the CPU)";
  g.kernels.push_back(pre);
  probe::KernelPoint dec = pre;
  dec.phase = "decode";
  dec.model = probe::matrices_signature(probe::decode_matrices(info));
  g.kernels.push_back(dec);
  probe::KernelPoint other;  // another model's decode point, which a CPU prediction would borrow
  other.phase = "decode";
  other.model = "q4_0:4096x4096x1";
  other.best_gb_per_s = other.median_gb_per_s = 10;
  other.cpu_share = 1;
  g.kernels.push_back(other);
  probe::ComputePoint generic;  // another type's generic rate exists: not used either
  generic.type = "q4_0";
  generic.best_gflop_per_s = generic.median_gflop_per_s = 50;
  generic.cpu_share = 1;
  g.compute.points.push_back(generic);
  predict::Config cfg;
  cfg.threads = 0;
  cfg.n_prompt = 64;
  cfg.n_gen = 16;
  const auto p = predict::predict(info, g, cfg, {}, {}, 0);
  EXPECT_EQ(p.decode_tokens_per_s.value, 0);
  EXPECT_EQ(p.prefill_tokens_per_s.value, 0);
  std::string all;
  for (const auto& n : p.notes) all += n + "\n";
  EXPECT_NE(all.find("decode unavailable on Vulkan0: Vulkan0 has no q8_0 matmul kernel"), std::string::npos) << all;
  EXPECT_NE(all.find("prefill unavailable: no matmul rate for q8_0 on Vulkan0: Vulkan0 has no q8_0"), std::string::npos)
      << all;
}
