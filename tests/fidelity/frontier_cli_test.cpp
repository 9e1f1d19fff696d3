// edgeprobe frontier end to end on the synthesized tiny model: each quantization's fidelity
// is the fidelity command's own figure, its speed a ratio per round, the dominated marked
// by the rule; a user's f16 file is quantized on first use exactly as llama.cpp quantizes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_process.h"

using namespace edgeprobe::test_support;

namespace {

nlohmann::json frontier_json(const std::vector<std::string>& args, int rounds = 4) {
  std::vector<std::string> a{"frontier", "-o",  "json",     "--quiet", "-t",       "2",
                             "-c",       "128", "--chunks", "4",       "--rounds", std::to_string(rounds),
                             "-p",       "16",  "-n",       "8"};
  a.insert(a.end(), args.begin(), args.end());
  const auto r = run_edgeprobe(a, 900);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
}

}  // namespace

TEST(FrontierCli, EachQuantizationAgainstTheReferenceWithItsRounds) {
  const auto f = frontier_json({"-m", "synth:tiny", "-q", "q8_0,q4_k_m,q3_k_m"});
  ASSERT_EQ(f["points"].size(), 4u) << f.dump();
  const auto& pts = f["points"];
  EXPECT_TRUE(pts[0]["reference"].get<bool>());
  EXPECT_NE(pts[0]["path"].get<std::string>().find("synth-tiny-f16"), std::string::npos);
  const char* quants[] = {"q8_0", "q4_k_m", "q3_k_m"};
  for (int i = 1; i <= 3; ++i) {
    EXPECT_EQ(pts[i]["quant"], quants[i - 1]);
    EXPECT_EQ(pts[i]["decode_ratio_per_round"].size(), 4u);
    EXPECT_EQ(pts[i]["positions"].get<int>(), 4 * (128 - 1 - 64));
    EXPECT_LT(pts[i]["size_bytes"].get<uint64_t>(), pts[i - 1]["size_bytes"].get<uint64_t>());
  }
  for (const auto& r : pts[0]["decode_ratio_per_round"]) EXPECT_DOUBLE_EQ(r.get<double>(), 1.0);
  // The quantization order of closeness (each gap far beyond its error on this model).
  EXPECT_LT(pts[1]["kld"]["mean"].get<double>(), pts[2]["kld"]["mean"].get<double>());
  EXPECT_LT(pts[2]["kld"]["mean"].get<double>(), pts[3]["kld"]["mean"].get<double>());
  // Whatever the noisy speeds were, a dominated point names one closer to the reference.
  for (const auto& p : pts) {
    if (p["dominated_by"].is_null()) continue;
    const auto by =
        std::find_if(pts.begin(), pts.end(), [&](const auto& q) { return q["quant"] == p["dominated_by"]; });
    ASSERT_NE(by, pts.end());
    EXPECT_LT((*by)["kld"]["mean"].get<double>(), p["kld"]["mean"].get<double>());
  }

  // The same figure as `edgeprobe fidelity` on the same work.
  const auto r = run_edgeprobe({"fidelity", "-o", "json", "-q", "-t", "2", "-m", "synth:tiny:q4_k_m",
                                "--reference", "synth:tiny:f16", "-c", "128", "--chunks", "4"},
                               900);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(r.out)["kld"]["mean"].get<double>(),
                   pts[2]["kld"]["mean"].get<double>());
}

TEST(FrontierCli, AUsersF16FileIsQuantizedOnFirstUseAsLlamaCppQuantizesIt) {
  const auto named = frontier_json({"-m", "synth:tiny", "-q", "q4_k_m"}, 1);
  ASSERT_EQ(named["points"].size(), 2u);
  const std::string f16 = named["points"][0]["path"];
  TempDir dir;
  const std::string copy = dir.file("my-model-f16.gguf");
  write_file(copy, read_file(f16));
  const auto from_file = frontier_json({"-m", copy, "-q", "q4_k_m"}, 1);
  ASSERT_EQ(from_file["points"].size(), 2u);
  EXPECT_EQ(from_file["points"][0]["path"], copy);
  EXPECT_NE(from_file["points"][1]["path"], named["points"][1]["path"]);
  EXPECT_EQ(from_file["points"][1]["sha256"], named["points"][1]["sha256"]);
  EXPECT_DOUBLE_EQ(from_file["points"][1]["kld"]["mean"].get<double>(),
                   named["points"][1]["kld"]["mean"].get<double>());
}

TEST(FrontierCli, BadInputIsOneLineExitTwo) {
  TempDir dir;
  const std::string truncated = dir.file("truncated.gguf");
  write_file(truncated, read_file(tiny_model("f16")).substr(0, 4000));
  const struct {
    std::vector<std::string> args;
    const char* expected;
  } cases[] = {
      {{"-m", "synth:tiny", "-q", "q4_k_m,q9_z"}, "q9_z"},
      {{"-m", "synth:tiny", "-q", "q4_k_m,q4_k_m"}, "q4_k_m twice"},
      {{"-m", dir.file("missing.gguf")}, "missing.gguf"},
      {{"-m", truncated}, "truncated.gguf"},
      {{"-m", "synth:tiny", "--rounds", "0"}, "--rounds"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> a{"frontier", "--quiet"};
    a.insert(a.end(), c.args.begin(), c.args.end());
    const auto r = run_edgeprobe(a, 300);
    EXPECT_EQ(r.exit_code, 2) << c.expected << ": " << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
    EXPECT_LE(count_of(r.err, "\n"), 1u) << r.err;
  }
}
