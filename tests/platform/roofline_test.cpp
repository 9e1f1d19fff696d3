// Roofline arithmetic on a hand-built Llama-2-7B Q4_0 shape, checked against numbers
// worked out by hand below (not by the code under test).
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "model/gguf_info.h"
#include "probe/ceilings.h"
#include "probe/roofline.h"
#include "report/device_reporters.h"

namespace edgeprobe::probe {
namespace {

constexpr int64_t kEmbd = 4096, kFf = 11008, kVocab = 32000, kLayers = 32, kHeads = 32;

uint64_t q4_0_bytes(int64_t n) { return static_cast<uint64_t>(n / 32 * 18); }  // 18 bytes per 32 weights

model::TensorInfo tensor(const std::string& name, const std::string& type, int64_t ne0, int64_t ne1 = 1) {
  model::TensorInfo t;
  t.name = name;
  t.type = type;
  t.shape = ne1 > 1 ? std::vector<int64_t>{ne0, ne1} : std::vector<int64_t>{ne0};
  t.n_elements = ne0 * ne1;
  t.n_bytes = type == "f32" ? static_cast<uint64_t>(t.n_elements * 4) : q4_0_bytes(t.n_elements);
  return t;
}

// Llama 2 7B: every matrix Q4_0 (including token_embd and output), norms f32.
model::GgufInfo llama7b_q4_0(bool with_output = true) {
  model::GgufInfo info;
  info.path = "/models/llama-7b-q4_0.gguf";
  info.shape = {"llama", kVocab, 4096, kEmbd, kLayers, kFf, kHeads, kHeads};
  info.tensors.push_back(tensor("token_embd.weight", "q4_0", kEmbd, kVocab));
  for (int l = 0; l < kLayers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output"})
      info.tensors.push_back(tensor(p + m + ".weight", "q4_0", kEmbd, kEmbd));
    info.tensors.push_back(tensor(p + "ffn_gate.weight", "q4_0", kEmbd, kFf));
    info.tensors.push_back(tensor(p + "ffn_up.weight", "q4_0", kEmbd, kFf));
    info.tensors.push_back(tensor(p + "ffn_down.weight", "q4_0", kFf, kEmbd));
    info.tensors.push_back(tensor(p + "attn_norm.weight", "f32", kEmbd));
    info.tensors.push_back(tensor(p + "ffn_norm.weight", "f32", kEmbd));
  }
  info.tensors.push_back(tensor("output_norm.weight", "f32", kEmbd));
  if (with_output) info.tensors.push_back(tensor("output.weight", "q4_0", kEmbd, kVocab));
  info.file_bytes = 3'800'000'000;
  return info;
}

// By hand, per layer: 4 x 4096^2 + 3 x 4096 x 11008 = 67,108,864 + 135,266,304
// = 202,375,168 weights -> x 18/32 = 113,836,032 bytes, + 2 norms x 4096 x 4 B = 32,768
// -> 113,868,800 bytes; x 32 layers = 3,643,801,600.
// output 4096 x 32000 = 131,072,000 weights -> 73,728,000 bytes; output_norm 16,384;
// token_embd: one row of 4096 weights = 128 blocks x 18 B = 2,304 bytes.
// Total at depth 0: 3,643,801,600 + 73,728,000 + 16,384 + 2,304 = 3,717,548,288 bytes.
constexpr double kWeightsBytes = 3'717'548'288.0;
// KV at depth 4096, f16: 2 x 32 layers x 32 kv heads x 128 head_dim x 4096 x 2 B
// = 2,147,483,648 bytes (2 GiB).
constexpr double kKv4096Bytes = 2'147'483'648.0;

TEST(Roofline, DecodeBytesOf7BQ4_0AtDepthZeroAreWeightsWithOneEmbeddingRow) {
  EXPECT_EQ(decode_weight_bytes_per_token(llama7b_q4_0()), static_cast<uint64_t>(kWeightsBytes));
  EXPECT_DOUBLE_EQ(decode_bytes_per_token(llama7b_q4_0(), 0), kWeightsBytes);
}

TEST(Roofline, DecodeBytesOf7BQ4_0AtDepth4096AddTwoGiBOfF16KvCache) {
  EXPECT_DOUBLE_EQ(decode_bytes_per_token(llama7b_q4_0(), 4096), kWeightsBytes + kKv4096Bytes);
  // q8_0 KV cache: 34 bytes per 32 elements
  EXPECT_DOUBLE_EQ(decode_bytes_per_token(llama7b_q4_0(), 4096, 34.0 / 32.0), kWeightsBytes + kKv4096Bytes / 2 * 34 / 32);
}

TEST(Roofline, QuantizedKvCacheShrinksTheBytesReadPerToken) {
  EXPECT_DOUBLE_EQ(kv_type_bytes_per_element("f16"), 2.0);
  EXPECT_DOUBLE_EQ(kv_type_bytes_per_element("q8_0"), 34.0 / 32);
  EXPECT_DOUBLE_EQ(kv_type_bytes_per_element("q4_0"), 18.0 / 32);
  EXPECT_DOUBLE_EQ(kv_type_bytes_per_element("nonsense"), 0.0);
  // 65 tokens from depth 4064 (mean depth 4096) with a q8_0 cache: 2 GiB x 34/64.
  const Roofline r = compute_roofline(llama7b_q4_0(), DeviceCeilings{}, 0, 65, 4064, 0, 0, 0, 0, 34.0 / 32);
  EXPECT_DOUBLE_EQ(r.decode_bytes_per_token, kWeightsBytes + kKv4096Bytes * 34 / 64);
}

TEST(Roofline, TiedEmbeddingIsReadInFullWhenThereIsNoOutputMatrix) {
  // Without output.weight: 3,643,801,600 + 16,384 + the whole token_embd 73,728,000.
  EXPECT_EQ(decode_weight_bytes_per_token(llama7b_q4_0(false)), 3'717'545'984u);
}

TEST(Roofline, PrefillFlopsAreTwicePerMatmulWeightPlusAttention) {
  // Matmul weights per token: 32 x 202,375,168 + 131,072,000 (output) = 6,607,077,376 -> x2
  // = 13,214,154,752 FLOP. Attention at context c: 2 x 2 x 32 x 32 x 128 x c = 524,288 c.
  EXPECT_DOUBLE_EQ(prefill_flops_per_token(llama7b_q4_0(), 0), 13'214'154'752.0);
  EXPECT_DOUBLE_EQ(prefill_flops_per_token(llama7b_q4_0(), 1000), 13'214'154'752.0 + 524'288'000.0);
}

// Every ceiling below is the median pass or run (kCeilingStatistic); the best ones are set
// 1.5x above, so a ceiling taken from the best instead shows in every figure.
DeviceCeilings ceilings_20gbs() {
  DeviceCeilings c;
  c.bandwidth.read_best_gb_per_s = 30.0;
  c.bandwidth.read_median_gb_per_s = 20.0;
  c.bandwidth.points.push_back({"read", "device", 1, {0}, 18.0, 12.0, 5});
  c.bandwidth.points.push_back({"read", "device", 2, {0, 1}, 30.0, 20.0, 5});
  c.compute_status = "measured";
  ComputePoint q4;
  q4.type = "q4_0";
  q4.best_gflop_per_s = 150.0;
  q4.median_gflop_per_s = 100.0;
  ComputePoint f16;
  f16.type = "f16";
  f16.best_gflop_per_s = 75.0;
  f16.median_gflop_per_s = 50.0;
  c.compute.points = {q4, f16};
  StorageResult s;
  s.path = "/models/llama-7b-q4_0.gguf";
  s.cold_mb_per_s = 1000.0;
  s.warm_mb_per_s = 5000.0;
  c.storage = s;
  return c;
}

TEST(Roofline, DecodeCeilingIsBandwidthOverBytesPerToken) {
  // n_gen 1 at depth 0: 20e9 / 3,717,548,288 = 5.37991 t/s; 4 t/s measured -> 0.7435.
  const Roofline r = compute_roofline(llama7b_q4_0(), ceilings_20gbs(), 0, 1, 0, 0, 4.0, 0, 1);
  EXPECT_NEAR(r.decode_ceiling_tokens_per_s, 20e9 / kWeightsBytes, 1e-9);
  EXPECT_NEAR(r.decode_efficiency, 4.0 / (20e9 / kWeightsBytes), 1e-12);
  EXPECT_NEAR(r.decode_ceiling_at_threads_tokens_per_s, 12e9 / kWeightsBytes, 1e-9);
  EXPECT_NEAR(r.decode_achieved_gb_per_s, 4.0 * kWeightsBytes / 1e9, 1e-9);
}

TEST(Roofline, JsonNamesTheStatisticOfItsCeilings) {
  const Roofline r = compute_roofline(llama7b_q4_0(), ceilings_20gbs(), 512, 1, 0, 5.0, 4.0, 0, 1);
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j.at("ceiling_statistic"), "median");
  EXPECT_DOUBLE_EQ(j.at("bandwidth_gb_per_s").get<double>(), 20.0);  // the median pass, not the best (30)
  EXPECT_DOUBLE_EQ(j.at("bandwidth_at_threads_gb_per_s").get<double>(), 12.0);
}

// The roofline is part of the result document: it reads back into the same struct, and one
// written by an earlier release keeps the keys it lacked absent (it never checked whether
// a ceiling was suspect, so its document does not say "false").
TEST(Roofline, ItsDocumentReadsBackAndAnEarlierOneKeepsWhatItLackedAbsent) {
  Roofline r = compute_roofline(llama7b_q4_0(), ceilings_20gbs(), 512, 1, 0, 5.0, 4.0, 0, 1);
  r.device = "Vulkan0";
  r.notes.push_back("partial offload");
  r.prediction = {{"decode_tokens_per_s", 3.9}};
  const nlohmann::json written = result::to_json(r);
  EXPECT_EQ(result::to_json(result::roofline_from_json(written)), written);
  EXPECT_EQ(result::roofline_from_json(written).decode_efficiency, r.decode_efficiency);
  nlohmann::json earlier = written;
  for (const char* key : {"decode_ceiling_suspect", "prefill_ceiling_suspect", "decode_cache_resident", "remeasure_command"})
    earlier.erase(key);
  const Roofline read = result::roofline_from_json(earlier);
  EXPECT_EQ(read.bandwidth_gb_per_s, 20.0);
  EXPECT_EQ(result::to_json(read), earlier);
  EXPECT_FALSE(result::roofline_optional_from_json(nullptr)) << "no ceilings: no roofline";
}

TEST(Roofline, DecodeUsesTheMeanDepthOfTheGeneratedTokens) {
  // 65 tokens from depth 4064: token i sees 4064 + i cached entries, mean 4096.
  const Roofline r = compute_roofline(llama7b_q4_0(), ceilings_20gbs(), 0, 65, 4064, 0, 2.0, 0);
  EXPECT_DOUBLE_EQ(r.decode_mean_depth, 4096.0);
  EXPECT_DOUBLE_EQ(r.decode_bytes_per_token, kWeightsBytes + kKv4096Bytes);
}

TEST(Roofline, PromptMultipliesTheOutputMatrixOnlyForTokensWithLogits) {
  // Output matrix: 2 x 131,072,000 = 262,144,000 FLOP per token that gets logits. A 512-token
  // prompt in one 2048-token batch asks for 1: 262,144,000 / 512 = 512,000 per token, so the
  // matmuls are 13,214,154,752 - 262,144,000 + 512,000 = 12,952,522,752 FLOP per token.
  double flop = 0;
  for (const auto& tf : weight_flops_per_token(llama7b_q4_0(), 1.0 / 512)) flop += tf.flop;
  EXPECT_DOUBLE_EQ(flop, 12'952'522'752.0);
  // 4096 tokens in batches of 2048: two tokens get logits -> 262,144,000 x 2 / 4096 = 128,000.
  const Roofline r = compute_roofline(llama7b_q4_0(), ceilings_20gbs(), 4096, 0, 0, 0, 0, 0, 0, 2.0, 2048, 512);
  EXPECT_DOUBLE_EQ(r.prefill_flop_per_token, 12'952'010'752.0 + 128'000.0 + 524'288.0 * 2048.5);
}

TEST(Roofline, PrefillCeilingWeighsEachTypeByItsMeasuredRate) {
  // pp512 at depth 0: mean context (512 + 1) / 2 = 256.5 -> attention 524,288 x 256.5
  // = 134,479,872 FLOP at 50 GFLOP/s (f16) = 2.68959744 ms; matmuls 12,952,522,752 FLOP
  // at 100 GFLOP/s (q4_0, generic shape: no model kernels) = 129.52522752 ms.
  // 1 / 0.13221482496 s = 7.56345 t/s.
  const Roofline r = compute_roofline(llama7b_q4_0(), ceilings_20gbs(), 512, 0, 0, 5.0, 0, 0);
  EXPECT_NEAR(r.prefill_ceiling_tokens_per_s, 1.0 / 0.13221482496, 1e-9);
  EXPECT_NEAR(r.prefill_efficiency, 5.0 * 0.13221482496, 1e-12);
  EXPECT_EQ(r.prefill_compute_basis.rfind("generic", 0), 0u) << r.prefill_compute_basis;
}

KernelPoint prefill_point(int64_t cols, int64_t rows, int64_t tokens, int threads, double gflop_per_s) {
  KernelPoint k;
  k.phase = "prefill";
  k.type = "q4_0";
  k.cols = cols;
  k.rows = rows;
  k.tokens = tokens;
  k.threads = threads;
  k.median_gflop_per_s = gflop_per_s;
  k.best_gflop_per_s = 1.5 * gflop_per_s;
  return k;
}

TEST(Roofline, PrefillShapesAreTheDominantTypesDistinctMatricesWithoutTheOutput) {
  // FLOPs by shape: 4096x11008 x64 = 2.89e9, 4096x4096 x128 = 2.15e9, 11008x4096 x32 = 1.44e9.
  const auto shapes = prefill_shapes(llama7b_q4_0());
  ASSERT_EQ(shapes.size(), 3u);
  EXPECT_EQ(shapes[0].cols, 4096);
  EXPECT_EQ(shapes[0].rows, kFf);
  EXPECT_EQ(shapes[1].rows, kEmbd);
  EXPECT_EQ(shapes[1].cols, kEmbd);
  EXPECT_EQ(shapes[2].cols, kFf);
  for (const auto& s : shapes) {
    EXPECT_EQ(s.type, "q4_0");
    EXPECT_EQ(s.count, 1);
  }
  EXPECT_EQ(prefill_kernel_tokens(128, 512), 128);
  EXPECT_EQ(prefill_kernel_tokens(4096, 512), 512);
}

TEST(Roofline, PrefillCeilingUsesTheBestOfTheModelsOwnShapesAtTheUbatch) {
  DeviceCeilings c = ceilings_20gbs();
  c.threads = 2;
  c.kernels = {prefill_point(4096, kFf, 512, 2, 150.0), prefill_point(4096, 4096, 512, 2, 200.0),
               prefill_point(kFf, 4096, 512, 2, 120.0),
               // not this bench's: another ubatch, another thread count, another shape
               prefill_point(4096, 4096, 256, 2, 999.0), prefill_point(4096, 4096, 512, 1, 999.0),
               prefill_point(2048, 2048, 512, 2, 999.0)};
  // 12,952,522,752 FLOP at 200 GFLOP/s = 64.76261376 ms + attention 2.68959744 ms
  // = 67.4522112 ms per token.
  const Roofline r = compute_roofline(llama7b_q4_0(), c, 512, 0, 0, 10.0, 0, 0);
  EXPECT_NEAR(r.prefill_ceiling_tokens_per_s, 1.0 / 0.0674522112, 1e-9);
  EXPECT_NEAR(r.prefill_efficiency, 10.0 * 0.0674522112, 1e-12);
  auto says_above = [](const Roofline& x) {
    return std::any_of(x.notes.begin(), x.notes.end(),
                       [](const std::string& n) { return n.find("of its ceiling") != std::string::npos; });
  };
  EXPECT_FALSE(says_above(r));
  // 16 t/s is 1.08 of the 14.825 t/s ceiling: the ceiling was measured on a slower machine.
  const Roofline beyond = compute_roofline(llama7b_q4_0(), c, 512, 0, 0, 16.0, 0, 0);
  EXPECT_GT(beyond.prefill_efficiency, 1.0);
  EXPECT_TRUE(says_above(beyond));
  EXPECT_EQ(r.prefill_compute_basis, "model shapes x 512 tokens");
  EXPECT_NEAR(r.prefill_compute_gflop_per_s, r.prefill_flop_per_token / 0.0674522112 / 1e9, 1e-6);
}

// The model's matrices: 32 x 113,836,032 + output 73,728,000 = 3,716,481,024 bytes; the rest
// of a token's bytes (norms 1,064,960 + embedding row 2,304) = 1,067,264 go at bandwidth.
constexpr double kMatrixBytes = 3'716'481'024.0;

// gb_per_s is the median run; the best run is set well above it, so a ceiling taken from
// the best instead of the median shows in every figure below.
KernelPoint decode_point(int threads, double gb_per_s) {
  KernelPoint k;
  k.phase = "decode";
  k.model = matrices_signature(decode_matrices(llama7b_q4_0()));
  k.threads = threads;
  k.median_gb_per_s = gb_per_s;
  k.best_gb_per_s = 1.5 * gb_per_s;
  return k;
}

TEST(Roofline, DecodeMatricesAreEveryMultipliedWeightGroupedByShape) {
  const auto m = decode_matrices(llama7b_q4_0());
  ASSERT_EQ(m.size(), 4u);  // 4096x4096 x128, 4096x11008 x64, 11008x4096 x32, output x1
  EXPECT_EQ(m[0].count, 128);
  EXPECT_EQ(m[1].count, 64);
  EXPECT_EQ(m[2].count, 32);
  EXPECT_EQ(m[3].rows, kVocab);
  EXPECT_EQ(m[3].count, 1);
  // Tied: the embedding is the output matrix.
  const auto tied = decode_matrices(llama7b_q4_0(false));
  ASSERT_EQ(tied.size(), 4u);
  EXPECT_EQ(tied[0].rows, kVocab);
  EXPECT_NE(matrices_signature(m), "");
  EXPECT_EQ(matrices_signature(m), matrices_signature({m[3], m[2], m[1], m[0]}));  // order-free
}

TEST(Roofline, DecodeCeilingIsTheLowerOfBandwidthAndTheMatvecKernelsAndNamesIt) {
  DeviceCeilings c = ceilings_20gbs();
  c.threads = 2;
  c.kernels = {decode_point(2, 10.0), decode_point(1, 6.0)};
  // Kernel: 3,716,481,024 B / 10 GB/s + 1,067,264 B / 20 GB/s = 0.3717014656 s -> 2.69033 t/s,
  // under 0.9 x the bandwidth ceiling 20e9 / 3,717,548,288 = 5.37991 t/s: kernel-bound.
  const Roofline r = compute_roofline(llama7b_q4_0(), c, 0, 1, 0, 0, 2.0, 0, 1);
  EXPECT_NEAR(r.decode_kernel_ceiling_tokens_per_s, 1.0 / 0.3717014656, 1e-9);
  EXPECT_NEAR(r.decode_bandwidth_ceiling_tokens_per_s, 20e9 / kWeightsBytes, 1e-9);
  EXPECT_DOUBLE_EQ(r.decode_ceiling_tokens_per_s, r.decode_kernel_ceiling_tokens_per_s);
  EXPECT_EQ(r.decode_bound, "kernel");
  EXPECT_NEAR(r.decode_efficiency, 2.0 * 0.3717014656, 1e-12);
  EXPECT_NEAR(r.decode_bandwidth_efficiency, 2.0 / (20e9 / kWeightsBytes), 1e-12);  // kept, not hidden
  EXPECT_DOUBLE_EQ(r.decode_kernel_gb_per_s, 10.0);
  // With 1 thread: bandwidth 12 GB/s -> 3.22793 t/s; kernel 6 GB/s: 3,716,481,024 / 6e9 +
  // 1,067,264 / 12e9 = 0.6195024427 s -> 1.61419 t/s.
  EXPECT_NEAR(r.decode_ceiling_at_threads_tokens_per_s, 1.0 / (kMatrixBytes / 6e9 + 1'067'264.0 / 12e9), 1e-9);
  EXPECT_EQ(r.decode_bound_at_threads, "kernel");
  // 2 t/s beats that 1-thread ceiling by 24 %: not a figure (kSuspectMargin), but the main
  // ceiling, which 2 t/s does not beat, is not suspect for it.
  EXPECT_EQ(r.decode_efficiency_at_threads, 0);
  EXPECT_FALSE(r.decode_ceiling_suspect);
  const auto j = to_json(r);
  EXPECT_EQ(j["decode_bound"], "kernel");
  EXPECT_TRUE(j["decode_bandwidth_efficiency"].is_number());
}

TEST(Roofline, MatvecKernelsNearTheBandwidthAreBandwidthBound) {
  DeviceCeilings c = ceilings_20gbs();
  c.threads = 2;
  c.kernels = {decode_point(2, 19.0)};
  // 3,716,481,024 / 19e9 + 1,067,264 / 20e9 = 0.19565... s -> 5.1111 t/s >= 0.9 x 5.37991.
  const Roofline r = compute_roofline(llama7b_q4_0(), c, 0, 1, 0, 0, 5.0, 0);
  EXPECT_EQ(r.decode_bound, "bandwidth");
  EXPECT_NEAR(r.decode_ceiling_tokens_per_s, 1.0 / (kMatrixBytes / 19e9 + 1'067'264.0 / 20e9), 1e-9);
  // A kernel point for another model is not used.
  DeviceCeilings other = ceilings_20gbs();
  other.threads = 2;
  other.kernels = {decode_point(2, 1.0)};
  other.kernels[0].model = "q4_0:64x64x1";
  const Roofline o = compute_roofline(llama7b_q4_0(), other, 0, 1, 0, 0, 5.0, 0);
  EXPECT_EQ(o.decode_kernel_ceiling_tokens_per_s, 0);
  EXPECT_EQ(o.decode_bound, "bandwidth");
  EXPECT_NEAR(o.decode_ceiling_tokens_per_s, 20e9 / kWeightsBytes, 1e-9);
}

TEST(Roofline, LoadCeilingIsFileBytesAtColdReadRate) {
  // 3.8e9 bytes at 1000 MB/s = 3800 ms; a 4750 ms load is 80 % of the ceiling.
  const Roofline r = compute_roofline(llama7b_q4_0(), ceilings_20gbs(), 0, 0, 0, 0, 0, 4750.0);
  EXPECT_DOUBLE_EQ(r.load_ceiling_ms, 3800.0);
  EXPECT_EQ(r.load_ceiling_basis, "cold");
  EXPECT_DOUBLE_EQ(r.load_efficiency, 0.8);
}

TEST(Roofline, MissingMeasurementsStayUnavailableNotZeroInJson) {
  DeviceCeilings none;
  none.compute_status = "unavailable: no CPU backend";
  const Roofline r = compute_roofline(llama7b_q4_0(), none, 512, 64, 0, 10.0, 3.0, 100.0);
  const auto j = to_json(r);
  EXPECT_TRUE(j["decode_ceiling_tokens_per_s"].is_null());
  EXPECT_TRUE(j["decode_efficiency"].is_null());
  EXPECT_TRUE(j["prefill_ceiling_tokens_per_s"].is_null());
  EXPECT_TRUE(j["load_ceiling_ms"].is_null());
  EXPECT_TRUE(j["decode_bound"].is_null());
  EXPECT_TRUE(j["decode_bandwidth_efficiency"].is_null());
  EXPECT_TRUE(j["decode_kernel_ceiling_tokens_per_s"].is_null());
  EXPECT_FALSE(r.notes.empty());
}

TEST(Roofline, UnmeasuredQuantTypeBorrowsTheNearestMeasuredRateAndSaysSo) {
  auto info = llama7b_q4_0();
  info.tensors.back().type = "q6_K";  // output.weight, as llama.cpp's Q4_0 files have it
  const Roofline r = compute_roofline(info, ceilings_20gbs(), 512, 0, 0, 0, 0, 0);
  EXPECT_GT(r.prefill_ceiling_tokens_per_s, 0);
  bool said = false;
  for (const auto& n : r.notes) said |= n.find("q6_K") != std::string::npos;
  EXPECT_TRUE(said);
}


// Issue 24: a ceiling the run beats is not a ceiling. 20 GB/s stored as 0.02 GB/s (a probe
// taken while the machine crawled): 4 t/s against a 0.0054 t/s ceiling is 744x.
TEST(Roofline, ARateFarAboveItsCeilingIsCeilingSuspectNeverAFigure) {
  DeviceCeilings low = ceilings_20gbs();
  low.bandwidth.read_median_gb_per_s = 0.02;
  low.compute.variant = "sse42";
  const Roofline r = compute_roofline(llama7b_q4_0(), low, 0, 1, 0, 0, 4.0, 0);
  EXPECT_TRUE(r.decode_ceiling_suspect);
  EXPECT_EQ(r.decode_efficiency, 0);
  EXPECT_EQ(r.decode_bandwidth_efficiency, 0);
  EXPECT_NEAR(r.decode_over_ceiling, 4.0 / (0.02e9 / kWeightsBytes), 1e-6);
  EXPECT_EQ(r.remeasure_command, "edgeprobe probe -m /models/llama-7b-q4_0.gguf --refresh --replace --cpu-variant sse42");
  const auto j = to_json(r);
  EXPECT_TRUE(j["decode_efficiency"].is_null());
  EXPECT_TRUE(j["decode_bandwidth_efficiency"].is_null());
  EXPECT_EQ(j["decode_ceiling_suspect"], true);
  EXPECT_EQ(j["prefill_ceiling_suspect"], false);
  EXPECT_NE(report::to_text(r).find("ceiling suspect"), std::string::npos);
  // Inside the noise margin (1.08 of the ceiling) it is a figure, with a note.
  const double ceiling = 20e9 / kWeightsBytes;
  const Roofline near = compute_roofline(llama7b_q4_0(), ceilings_20gbs(), 0, 1, 0, 0, 1.08 * ceiling, 0);
  EXPECT_FALSE(near.decode_ceiling_suspect);
  EXPECT_NEAR(near.decode_efficiency, 1.08, 1e-9);
  // Prefill likewise: the 7.56 t/s ceiling beaten at 20 t/s.
  const Roofline pp = compute_roofline(llama7b_q4_0(), ceilings_20gbs(), 512, 0, 0, 20.0, 0, 0);
  EXPECT_TRUE(pp.prefill_ceiling_suspect);
  EXPECT_EQ(pp.prefill_efficiency, 0);
  EXPECT_TRUE(to_json(pp)["prefill_efficiency"].is_null());
}

// A model whose bytes fit in the last-level cache is not bound by DRAM bandwidth: decode is
// judged against the kernel probe alone (the model's own matrices, cached as a token's are).
TEST(Roofline, ACacheResidentModelIsJudgedAgainstTheKernelsNotDram) {
  DeviceCeilings c = ceilings_20gbs();
  c.threads = 2;
  c.llc_total_bytes = 8ull << 30;  // larger than the 3.7 GB model
  c.kernels = {decode_point(2, 40.0)};
  // 40 GB/s of matrices beats 20 GB/s of DRAM: 3,716,481,024 / 40e9 + 1,067,264 / 20e9 s.
  const double kernel = 1.0 / (kMatrixBytes / 40e9 + 1'067'264.0 / 20e9);
  const Roofline r = compute_roofline(llama7b_q4_0(), c, 0, 1, 0, 0, 0.9 * kernel, 0);
  EXPECT_TRUE(r.decode_cache_resident);
  EXPECT_EQ(r.decode_bound, "kernel");
  EXPECT_NEAR(r.decode_ceiling_tokens_per_s, kernel, 1e-9);
  EXPECT_NEAR(r.decode_efficiency, 0.9, 1e-9);
  EXPECT_EQ(r.decode_bandwidth_efficiency, 0);  // no "190% bw" against a roof it does not meet
  EXPECT_FALSE(r.decode_ceiling_suspect);
  EXPECT_EQ(to_json(r)["decode_cache_resident"], true);
}

// A point measured while other processes held the CPUs is kept for the record, never used.
TEST(Roofline, ContendedPointsAreNeverCeilings) {
  DeviceCeilings c = ceilings_20gbs();
  c.threads = 2;
  c.kernels = {decode_point(2, 0.5)};
  c.kernels[0].cpu_share = 0.24;
  const std::string signature = matrices_signature(decode_matrices(llama7b_q4_0()));
  EXPECT_EQ(c.decode_kernel(signature, 2), nullptr);
  const Roofline r = compute_roofline(llama7b_q4_0(), c, 0, 1, 0, 0, 4.0, 0);
  EXPECT_EQ(r.decode_kernel_ceiling_tokens_per_s, 0);
  EXPECT_EQ(r.decode_bound, "bandwidth");
  EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [](const std::string& n) {
    return n.find("only while other processes held the CPUs") != std::string::npos && n.find("24%") != std::string::npos;
  }));
  // Bandwidth: the contended 2-thread pass is left out of the device figures.
  BandwidthResult bw;
  bw.points.push_back({"read", "device", 1, {0}, 18.0, 12.0, 5, 0.99});
  bw.points.push_back({"read", "device", 2, {0, 1}, 9.0, 6.0, 5, 0.5});
  summarize_points(bw);
  EXPECT_DOUBLE_EQ(bw.read_median_gb_per_s, 12.0);
  EXPECT_DOUBLE_EQ(bw.read_median_gb_per_s_at(2), 0.0);
  ASSERT_FALSE(bw.notes.empty());
  EXPECT_NE(bw.notes.back().find("kept out of the ceilings"), std::string::npos);
  // A compute point likewise: the rate of a contended type is not a rate.
  ComputeResult compute;
  compute.points.push_back({"q4_0", 2, 4096, 4096, 512, "CPU", 90.0, 80.0, 3, 0.4, ""});
  EXPECT_EQ(compute.gflop_per_s("q4_0"), 0.0);
}

// A refresh on a busier machine does not lower what was stored: each figure keeps the higher
// of the stored and the fresh one, and says which it kept.
TEST(Roofline, ARefreshKeepsTheHigherStoredFigures) {
  DeviceCeilings stored = ceilings_20gbs();
  stored.measured_at_utc = "2026-11-30T10:00:00Z";
  stored.bandwidth.points = {{"read", "device", 1, {0}, 18.0, 12.0, 5, 0.99}, {"read", "device", 2, {0, 1}, 30.0, 20.0, 5, 0.98}};
  summarize_points(stored.bandwidth);
  stored.kernels = {decode_point(2, 10.0)};
  DeviceCeilings fresh = stored;
  fresh.kernels.clear();
  fresh.bandwidth.points = {{"read", "device", 1, {0}, 19.0, 13.0, 5, 0.99},       // higher: taken
                            {"read", "device", 2, {0, 1}, 16.0, 10.5, 5, 0.97}};  // lower: kept out
  fresh.compute.points[0].median_gflop_per_s = 40.0;  // q4_0 lower: the stored 100 stays
  fresh.compute.points[1].median_gflop_per_s = 60.0;  // f16 higher: taken
  const DeviceCeilings merged = keep_higher(stored, fresh);
  EXPECT_DOUBLE_EQ(merged.bandwidth.read_median_gb_per_s, 20.0);
  EXPECT_DOUBLE_EQ(merged.bandwidth.read_median_gb_per_s_at(1), 13.0);
  EXPECT_DOUBLE_EQ(merged.compute.points[0].median_gflop_per_s, 100.0);
  EXPECT_DOUBLE_EQ(merged.compute.points[1].median_gflop_per_s, 60.0);
  EXPECT_EQ(merged.kernels.size(), 1u);  // measured again by ensure_model_kernels, keeping the better
  ASSERT_EQ(merged.kept_notes.size(), 2u);
  EXPECT_NE(merged.kept_notes[0].find("20.0 GB/s"), std::string::npos) << merged.kept_notes[0];
  EXPECT_NE(merged.kept_notes[0].find("10.5"), std::string::npos) << merged.kept_notes[0];
  // A contended fresh point never replaces a clean stored one, even when it reads higher.
  fresh.bandwidth.points[1] = {"read", "device", 2, {0, 1}, 40.0, 25.0, 5, 0.5};
  EXPECT_DOUBLE_EQ(keep_higher(stored, fresh).bandwidth.read_median_gb_per_s, 20.0);
}

// A kernel point measured again keeps the higher median (the ceiling) and the best run of
// both measurements (what predict reads): the 12-05 refresh that kept a point with median
// 37.0 and best 37.6 over one with median 36.3 and best 53.8 lowered f16's predictions.
TEST(Roofline, AKernelPointMeasuredAgainKeepsTheHigherMedianAndTheBestRunOfBoth) {
  KernelPoint stored = decode_point(2, 36.3);
  stored.best_gb_per_s = 53.8;
  stored.weight_memory = "mapped file";
  KernelPoint fresh = decode_point(2, 37.0);
  fresh.best_gb_per_s = 37.6;
  fresh.weight_memory = "mapped file";
  KernelPoint merged = stored;
  EXPECT_FALSE(merge_kernel_point(merged, fresh, false));
  EXPECT_DOUBLE_EQ(merged.median_gb_per_s, 37.0);
  EXPECT_DOUBLE_EQ(merged.best_gb_per_s, 53.8);
  // The other way round: the stored median stays, named in a note; the best is still both's.
  merged = fresh;
  const auto note = merge_kernel_point(merged, stored, false);
  ASSERT_TRUE(note);
  EXPECT_NE(note->find("kept the stored decode"), std::string::npos) << *note;
  EXPECT_NE(note->find("(37.0 GB/s) over this measurement's 36.3"), std::string::npos) << *note;
  EXPECT_DOUBLE_EQ(merged.median_gb_per_s, 37.0);
  EXPECT_DOUBLE_EQ(merged.best_gb_per_s, 53.8);
  // A contended measurement lends nothing, not even its best run.
  KernelPoint busy = decode_point(2, 80.0);
  busy.cpu_share = 0.3;
  merged = stored;
  EXPECT_TRUE(merge_kernel_point(merged, busy, false));
  EXPECT_DOUBLE_EQ(merged.median_gb_per_s, 36.3);
  EXPECT_DOUBLE_EQ(merged.best_gb_per_s, 53.8);
  // --replace stores what was measured; a failed measurement replaces nothing.
  merged = stored;
  EXPECT_FALSE(merge_kernel_point(merged, fresh, true));
  EXPECT_DOUBLE_EQ(merged.best_gb_per_s, 37.6);
  KernelPoint failed;
  failed.phase = "decode";
  failed.error = "no backend";
  const auto failed_note = merge_kernel_point(merged, failed, true);
  ASSERT_TRUE(failed_note);
  EXPECT_NE(failed_note->find("measuring it again failed (no backend)"), std::string::npos) << *failed_note;
  EXPECT_DOUBLE_EQ(merged.median_gb_per_s, 37.0);
  // Prefill points compare GFLOP/s the same way.
  KernelPoint prefill_stored, prefill_fresh;
  prefill_stored.phase = prefill_fresh.phase = "prefill";
  prefill_stored.median_gflop_per_s = 100, prefill_stored.best_gflop_per_s = 140;
  prefill_fresh.median_gflop_per_s = 110, prefill_fresh.best_gflop_per_s = 120;
  EXPECT_FALSE(merge_kernel_point(prefill_stored, prefill_fresh, false));
  EXPECT_DOUBLE_EQ(prefill_stored.median_gflop_per_s, 110);
  EXPECT_DOUBLE_EQ(prefill_stored.best_gflop_per_s, 140);
}

// A run that offloaded is judged against the GPU's figures: its JSON names the device, a
// ceiling that is suspect points at the GPU's probe, and no same-thread-count figure exists.
TEST(Roofline, AGpusCeilingsNameTheDeviceAndItsRemeasureCommand) {
  DeviceCeilings gpu = ceilings_20gbs();
  gpu.device = "Vulkan0";
  gpu.threads = 0;
  for (auto& p : gpu.bandwidth.points) p.threads = 0;
  const Roofline r = compute_roofline(llama7b_q4_0(), gpu, 0, 1, 0, 0, 100.0, 0, 0);
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j.at("ceiling_device"), "Vulkan0");
  EXPECT_TRUE(j.at("decode_ceiling_suspect").get<bool>());  // 100 t/s is far above 20 GB/s over 3.7 GB
  EXPECT_NE(r.remeasure_command.find("--gpu Vulkan0"), std::string::npos) << r.remeasure_command;
  EXPECT_EQ(r.remeasure_command.find("--cpu-variant"), std::string::npos) << r.remeasure_command;
  EXPECT_EQ(r.decode_ceiling_at_threads_tokens_per_s, 0);
  EXPECT_NE(report::to_text(r).find("ceilings of Vulkan0"), std::string::npos);
  // The CPU's JSON has no such key, so CPU results read as before.
  EXPECT_FALSE(to_json(compute_roofline(llama7b_q4_0(), ceilings_20gbs(), 0, 1, 0, 0, 4.0, 0, 1)).contains("ceiling_device"));
}

}  // namespace
}  // namespace edgeprobe::probe
