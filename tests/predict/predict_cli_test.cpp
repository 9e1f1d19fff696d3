// `edgeprobe predict` through the real binary: the refusals (each one line, exit 2, before
// anything is measured) and the paths that need no probe of this machine.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_process.h"

using edgeprobe::test_support::run_edgeprobe;
using edgeprobe::test_support::TempDir;
namespace test_support = edgeprobe::test_support;

namespace {

void expect_refused(const std::vector<std::string>& args, const std::string& needle) {
  const auto r = run_edgeprobe(args, 120);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

}  // namespace

TEST(PredictCli, UnknownShapeListsTheKnownOnes) {
  expect_refused({"predict", "-m", "llama-9b"}, "tinyllama-1.1b");
  expect_refused({"predict", "-m", "synth:llama-9b:q4_0"}, "known shapes: tiny");
}

TEST(PredictCli, UnknownQuantizationListsTheKnownOnes) {
  expect_refused({"predict", "-m", "tiny", "-q", "q9_z"}, "q4_k_m");
}

TEST(PredictCli, QuantOfAFileIsRefused) {
  expect_refused({"predict", "-m", test_support::tiny_model(), "-q", "q8_0"}, "holds its own quantization");
}

TEST(PredictCli, ASpecWithoutBandwidthSaysWhichFlag) {
  expect_refused({"predict", "-m", "tiny", "--gflops", "100"}, "--bandwidth");
}

TEST(PredictCli, ASweepPastTheBoundIsRefusedWithItsSize) {
  // 10 thread counts x 11 prompts x 10 generations = 1100 configurations.
  expect_refused({"predict", "-m", "tiny", "-t", "1,2,3,4,5,6,7,8,9,10", "-p", "1,2,3,4,5,6,7,8,9,10,11", "-n",
                  "1,2,3,4,5,6,7,8,9,10"},
                 "1100 configurations");
}

TEST(PredictCli, ADeviceNotInTheStoreIsNamed) {
  TempDir dir;
  const std::string db = dir.file("store.db");
  expect_refused({"predict", "-m", "tiny", "--device", "dev-0000", "--db", db}, "no results store");
  // A store holding one run of this machine, but no such device.
  const auto bench = run_edgeprobe({"bench", "-m", test_support::tiny_model(), "-p", "8", "-n", "2", "-r", "1",
                                    "--ceilings", "off", "--db", db, "-q"},
                                   300);
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  expect_refused({"predict", "-m", "tiny", "--device", "dev-0000", "--db", db}, "no device 'dev-0000'");
}

TEST(PredictCli, ASpecWithAnEmptyStoreIsAnsweredFromTheCatalogue) {
  // Before issue 47 this was "decode unavailable: run bench first"; the published fit
  // measurements (data/predict) now give the efficiencies, with an interval and a note.
  TempDir dir;
  const auto r = run_edgeprobe({"predict", "-m", "tinyllama-1.1b", "-q", "q4_0,q8_0", "--bandwidth", "25", "--gflops",
                                "200", "--memory-gb", "1", "--db", dir.file("none.db"), "-o", "json"},
                               120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["kind"], "predict");
  ASSERT_EQ(doc["rows"].size(), 2u);
  for (const auto& row : doc["rows"]) {
    ASSERT_TRUE(row["decode_tokens_per_s"].is_object()) << row.dump();
    EXPECT_LT(row["decode_tokens_per_s"]["low"].get<double>(),
              row["decode_tokens_per_s"]["high"].get<double>());
    // Memory needs no efficiency: q8_0 TinyLlama (1.1 GB of weights) does not fit in 1 GB.
    EXPECT_GT(row["memory"]["weights_bytes"].get<double>(), 5e8);
  }
  EXPECT_EQ(doc["rows"][0]["quant"], "q4_0");
  EXPECT_TRUE(doc["rows"][0]["memory"]["fits"].get<bool>());
  EXPECT_FALSE(doc["rows"][1]["memory"]["fits"].get<bool>());
  EXPECT_NE(doc.dump().find("the store holds no run to scale this spec by"), std::string::npos);
  EXPECT_NE(doc.dump().find("--gflops is not used with the catalogue"), std::string::npos);
}

TEST(PredictCli, ACatalogueDeviceIsPredictedPerThreadCount) {
  TempDir dir;
  const auto r = run_edgeprobe({"predict", "-m", "llama-3.2-3b", "-q", "q4_k_m", "--device-spec",
                                "raspberry-pi-5", "-t", "1,2,4", "--db", dir.file("none.db"), "-o", "json"},
                               120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["rows"].size(), 3u);
  double last = 0;
  for (const auto& row : doc["rows"]) {
    ASSERT_TRUE(row["prefill_tokens_per_s"].is_object()) << row.dump();
    const double v = row["prefill_tokens_per_s"]["value"].get<double>();
    EXPECT_GT(v, last);
    last = v;
  }
  EXPECT_NE(doc["device"].get<std::string>().find("raspberry-pi-5"), std::string::npos);
  // Its bandwidth is derived (no source states it), and the output says so.
  EXPECT_NE(doc.dump().find("derived"), std::string::npos);
  // A GPU backend of a discrete GPU.
  const auto g = run_edgeprobe({"predict", "-m", "llama-7b", "-q", "q4_0", "--device-spec", "RTX 4090",
                                "--backend", "cuda", "--db", dir.file("none.db"), "-o", "json"},
                               120);
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const auto gd = nlohmann::json::parse(g.out);
  EXPECT_GT(gd["rows"][0]["decode_tokens_per_s"]["value"].get<double>(), 50);
}

TEST(PredictCli, ACatalogueDeviceRefusesOnOneLine) {
  expect_refused({"predict", "-m", "tiny", "--device-spec", "raspbery-pi-5"}, "nearest: raspberry-pi-5");
  expect_refused({"predict", "-m", "tiny", "--device-spec", "snapdragon-8-elite-gen-5"}, "--bandwidth");
  expect_refused({"predict", "-m", "tiny", "--device-spec", "nvidia-rtx-4090"}, "--backend");
  expect_refused({"predict", "-m", "tiny", "--device-spec", "raspberry-pi-5", "--backend", "cuda", "-t", "2"},
                 "-t applies to the cpu backend");
  expect_refused({"predict", "-m", "tiny", "--device-spec", "raspberry-pi-5", "--backend", "tpu"},
                 "unknown backend 'tpu'");
}

TEST(PredictCli, CheckOfARunWithoutPredictionsSaysSo) {
  TempDir dir;
  const std::string out = dir.file("r.json");
  const auto bench = run_edgeprobe({"bench", "-m", test_support::tiny_model(), "-p", "8", "-n", "2", "-r", "1",
                                    "--ceilings", "off", "--no-store", "-o", "json", "--output", out, "-q"},
                                   300);
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const auto r = run_edgeprobe({"predict", "--check", out, "-o", "json"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["checked"], 0);
  ASSERT_FALSE(doc["rows"].empty());
  EXPECT_NE(doc["rows"][0].value("note", "").find("no prediction stored"), std::string::npos);
}

TEST(PredictCli, SpeculationRefusesOnOneLine) {
  expect_refused({"predict", "-m", "tiny", "--acceptance", "0.5"}, "apply with --draft MODEL");
  expect_refused({"predict", "-m", "tiny", "--draft", "synth:tiny:q4_0", "--acceptance", "1.5"}, "0 to 1");
  expect_refused({"predict", "-m", "tiny", "--draft", "synth:tiny:q4_0", "--draft-max", "0"},
                 "must be 1 to 256");
  expect_refused({"predict", "-m", "tiny", "--draft", "synth:tiny:q4_0", "--bandwidth", "25"},
                 "--draft needs a measured CPU's ceilings");
  // A run without a draft has no acceptance to predict at.
  TempDir dir;
  const std::string out = dir.file("r.json");
  const auto bench =
      run_edgeprobe({"bench", "-m", test_support::tiny_model(), "-p", "8", "-n", "2", "-r", "1", "--ceilings",
                     "off", "--no-store", "-o", "json", "--output", out, "-q"},
                    300);
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  expect_refused({"predict", "-m", "tiny", "--draft", "synth:tiny:q4_0", "--acceptance-from", out},
                 "measured no speculative decoding");
}
