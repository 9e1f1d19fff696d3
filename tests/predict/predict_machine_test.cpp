// predict on this machine, and bench results checking it: the structure, not the accuracy
// (that is bench/predict-accuracy.sh's, run on a quiet machine).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_process.h"

using edgeprobe::test_support::run_edgeprobe;
using edgeprobe::test_support::TempDir;
using nlohmann::json;

namespace {

json run_json(const std::vector<std::string>& args, int timeout_s = 600) {
  const auto r = run_edgeprobe(args, timeout_s);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto doc = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(doc.is_discarded()) << r.out.substr(0, 500);
  return doc.is_discarded() ? json::object() : doc;
}

}  // namespace

TEST(PredictMachine, PredictsThisMachineAndBenchCarriesThePredictionCheckReadsIt) {
  TempDir dir;
  const std::string db = dir.file("store.db");
  const std::string model = edgeprobe::test_support::tiny_model();

  const json predicted = run_json({"predict", "-m", model, "-p", "32", "-n", "8", "-t", "1", "--db", db, "-o", "json"});
  ASSERT_EQ(predicted.value("kind", ""), "predict");
  ASSERT_EQ(predicted["rows"].size(), 1u);
  const json& row = predicted["rows"][0];
  EXPECT_FALSE(predicted["emulated"].get<bool>());
  EXPECT_GT(row["decode_tokens_per_s"]["value"].get<double>(), 0) << row.dump();
  EXPECT_GT(row["prefill_tokens_per_s"]["value"].get<double>(), 0) << row.dump();
  EXPECT_LE(row["decode_tokens_per_s"]["low"].get<double>(), row["decode_tokens_per_s"]["value"].get<double>());
  EXPECT_GT(row["ttft_ms"]["value"].get<double>(), 0);
  EXPECT_GT(row["generation_ms"]["value"].get<double>(), 0);
  EXPECT_TRUE(row["decode_bound"].is_string());
  EXPECT_GT(row["memory"]["kv_bytes"].get<double>(), 0);

  const json bench = run_json({"bench", "-m", model, "-p", "32", "-n", "8", "-t", "1", "-r", "2", "--db", db, "-o",
                               "json", "-q"});
  ASSERT_EQ(bench["results"].size(), 2u);
  for (const auto& r : bench["results"]) {
    const json& p = r["roofline"]["prediction"];
    const char* phase = r["config"]["n_gen"].get<int>() > 0 ? "decode" : "prefill";
    ASSERT_TRUE(p[phase].is_object()) << r.dump().substr(0, 2000);
    EXPECT_GT(p[phase]["predicted_tokens_per_s"].get<double>(), 0);
    EXPECT_GT(p[phase]["best_over_predicted"].get<double>(), 0);
    EXPECT_GE(p[phase]["best_over_predicted"].get<double>(), p[phase]["median_over_predicted"].get<double>());
  }

  // The stored run reads back with its predictions.
  const json check = run_json({"predict", "--check", "1", "--db", db, "-o", "json"});
  EXPECT_EQ(check["checked"].get<int>(), 2) << check.dump();

  // The device that run recorded, predicted from the store alone.
  const json runs = run_json({"runs", "--db", db, "-o", "json"});
  ASSERT_FALSE(runs.empty());
  const json& first = runs.is_array() ? runs[0] : runs["runs"][0];
  const std::string device = first.value("device_id", first.value("device", ""));
  ASSERT_FALSE(device.empty()) << runs.dump();
  const json stored = run_json({"predict", "-m", model, "-p", "32", "-n", "8", "-t", "1", "--device", device, "--db", db,
                                "-o", "json"});
  EXPECT_NE(stored.value("device", "").find(device), std::string::npos) << stored.dump();
  EXPECT_GT(stored["rows"][0]["decode_tokens_per_s"]["value"].get<double>(), 0) << stored.dump();
}
