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

TEST(PredictCli, ASpecWithAnEmptyStoreSaysDecodeIsUnavailableAndWhy) {
  TempDir dir;
  const auto r = run_edgeprobe({"predict", "-m", "tinyllama-1.1b", "-q", "q4_0,q8_0", "--bandwidth", "25", "--gflops",
                                "200", "--memory-gb", "1", "--db", dir.file("none.db"), "-o", "json"},
                               120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["kind"], "predict");
  ASSERT_EQ(doc["rows"].size(), 2u);
  for (const auto& row : doc["rows"]) {
    EXPECT_TRUE(row["decode_tokens_per_s"].is_null());
    // Memory needs no efficiency: q8_0 TinyLlama (1.1 GB of weights) does not fit in 1 GB.
    EXPECT_GT(row["memory"]["weights_bytes"].get<double>(), 5e8);
  }
  EXPECT_EQ(doc["rows"][0]["quant"], "q4_0");
  EXPECT_TRUE(doc["rows"][0]["memory"]["fits"].get<bool>());
  EXPECT_FALSE(doc["rows"][1]["memory"]["fits"].get<bool>());
  EXPECT_NE(doc.dump().find("run edgeprobe bench on any device"), std::string::npos);
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
