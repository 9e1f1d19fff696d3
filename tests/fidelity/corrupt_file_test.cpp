// Fast but wrong: a q4_k_m file with the scales of one tensor's blocks overwritten (same
// size, same speed, a file any loader accepts). `fidelity --check-quantization` against the
// f32 says the file is further from it than llama.cpp's own q4_k_m of it, even for a
// corruption too small to change 32 greedy tokens; `bench --verify-against` a verified f32
// run catches the gross one. The honest file beside them passes both.
#include <gtest/gtest.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "model/gguf_info.h"
#include "support/run_process.h"

using namespace edgeprobe;
using namespace edgeprobe::test_support;

namespace {

nlohmann::json run_json(const std::vector<std::string>& args) {
  const auto r = run_edgeprobe(args, 900);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

// Rewrites the f16 super-block scale d at the start of every q4_K block (144 bytes) of
// `tensor` in a copy of `source`; returns the copy's path.
std::string corrupted_copy(const std::string& source, const std::string& tensor, const std::string& path,
                           uint16_t (*rewrite)(uint16_t)) {
  const auto info = model::read_gguf_info(source);
  std::string bytes = read_file(source);
  size_t changed = 0;
  for (const auto& t : info.tensors) {
    if (t.name != tensor) continue;
    EXPECT_EQ(t.type, "q4_K") << tensor;
    for (size_t b = 0; b < t.n_bytes / 144; ++b) {
      const size_t at = info.data_offset + t.offset + b * 144;
      const auto d = static_cast<uint16_t>(static_cast<uint8_t>(bytes[at]) |
                                           static_cast<uint16_t>(static_cast<uint8_t>(bytes[at + 1]) << 8));
      const uint16_t out = rewrite(d);
      bytes[at] = static_cast<char>(out & 0xff);  // little-endian
      bytes[at + 1] = static_cast<char>(out >> 8);
      changed += out != d;
    }
  }
  EXPECT_GT(changed, 0u) << tensor;
  write_file(path, bytes);
  return path;
}

// x8: the f16 exponent plus 3 (zero, subnormal and near-overflow scales left alone).
uint16_t times_eight(uint16_t d) {
  const int exponent = (d >> 10) & 0x1f;
  return exponent == 0 || exponent >= 0x1b ? d : static_cast<uint16_t>(d + 0x0c00);
}
// 1.0: about 500x the trained magnitude.
uint16_t one(uint16_t) { return 0x3c00; }

}  // namespace

TEST(FastButWrong, ACorruptedFileIsFlaggedByFidelityAndByVerify) {
  TempDir dir;
  auto fidelity = [&](const std::string& model) {
    return run_json({"fidelity", "-m", model, "--reference", "trained:main", "--check-quantization", "-c",
                     "256", "--chunks", "8", "-t", "2", "-o", "json", "-q"});
  };
  const auto honest = fidelity("trained:main:q4_k_m");
  ASSERT_TRUE(honest.contains("quantization_check")) << honest.dump();
  const std::string honest_path = honest["model"]["path"];
  EXPECT_EQ(honest["quantization_check"]["verdict"], "as_fresh") << honest["quantization_check"].dump();

  const std::string subtle =
      corrupted_copy(honest_path, "blk.1.attn_output.weight", dir.file("subtle.gguf"), times_eight);
  const std::string gross =
      corrupted_copy(honest_path, "blk.1.attn_output.weight", dir.file("gross.gguf"), one);
  for (const auto& path : {subtle, gross}) {
    const auto bad = fidelity(path);
    ASSERT_TRUE(bad.contains("quantization_check")) << bad.dump();
    const auto& check = bad["quantization_check"];
    std::printf("%s: KLD %.3g, x%.2f a fresh q4_k_m's; top-1 %.2f %%\n", path.c_str(),
                bad["kld"]["mean"].get<double>(), check["kld_ratio"].get<double>(),
                bad["top1_agreement_percent"]["value"].get<double>());
    EXPECT_EQ(check["verdict"], "further") << check.dump();
    // The fresh quantization is the honest file's twin: the same KLD to the last digit.
    EXPECT_DOUBLE_EQ(check["kld"]["mean"].get<double>(), honest["kld"]["mean"].get<double>());
  }

  // The greedy continuation: the f32 verified once, each file checked against it.
  const std::string ref = dir.file("f32.json");
  auto bench_with = [&](const std::string& model, const std::vector<std::string>& extra) {
    std::vector<std::string> a{"bench", "-m", model, "-p",         "16",  "-n",         "4", "-r",
                               "1",     "-t", "2",   "--ceilings", "off", "--no-store", "-q"};
    a.insert(a.end(), extra.begin(), extra.end());
    return run_edgeprobe(a, 900);
  };
  ASSERT_EQ(bench_with("trained:main", {"--verify", "-o", "json", "--output", ref}).exit_code, 0);
  const auto ok = bench_with(honest_path, {"--verify-against", ref});
  const auto wrong = bench_with(gross, {"--verify-against", ref});
  ASSERT_EQ(wrong.exit_code, 0) << wrong.err;
  EXPECT_NE(wrong.out.find("diverges from the reference"), std::string::npos) << wrong.out;
  EXPECT_NE(ok.out.find("32/32 greedy tokens as the reference"), std::string::npos) << ok.out;
}
