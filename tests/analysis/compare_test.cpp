#include "analysis/compare.h"

#include <gtest/gtest.h>

namespace edgeprobe::analysis {
namespace {

nlohmann::json provenance(const std::string& sha, const std::string& quant = "Q4_0",
                          const std::string& commit = "80fb11a") {
  // The shape result/result.h writes (schema 2): one entry per model file, the engine.
  return {{"models", {{{"sha256", sha}, {"quant", quant}, {"path", "/m/" + sha.substr(0, 4) + ".gguf"}}}},
          {"engine", {{"name", "llama.cpp"}, {"commit", commit}}}};
}

// The provisional shape of `edgeprobe bench -o json`.
nlohmann::json bench_document(const nlohmann::json& prov, const std::vector<double>& decode, int threads = 2) {
  nlohmann::json reps = nlohmann::json::array();
  for (size_t i = 0; i < decode.size(); ++i)
    reps.push_back({{"decode_tokens_per_s", decode[i]}, {"ttft_ms", 100.0 + static_cast<double>(i)}, {"ordinal", i}});
  return {{"schema_version", 1},
          {"provenance", prov},
          {"results", {{{"test", "tg64"}, {"config", {{"n_threads", threads}}}, {"repetitions", reps}}}}};
}

TEST(Compare, MannWhitneyExactPValueMatchesHandCount) {
  // a entirely below b: U = 0; P(U <= 0) = 1 / C(6,3) = 1/20, two-sided 0.1.
  const MannWhitney mw = mann_whitney(std::vector<double>{1, 2, 3}, std::vector<double>{4, 5, 6});
  EXPECT_TRUE(mw.exact);
  EXPECT_DOUBLE_EQ(mw.u, 0);
  EXPECT_NEAR(mw.p_value, 0.1, 1e-12);
  // 5 vs 5 fully separated: 2 / C(10,5) = 2/252.
  const MannWhitney mw5 = mann_whitney(std::vector<double>{6, 7, 8, 9, 10}, std::vector<double>{1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(mw5.u, 25);
  EXPECT_NEAR(mw5.p_value, 2.0 / 252.0, 1e-12);
}

TEST(Compare, MannWhitneyWithTiesUsesNormalApproximation) {
  const MannWhitney mw = mann_whitney(std::vector<double>{1, 2, 2, 3}, std::vector<double>{2, 3, 3, 4});
  EXPECT_FALSE(mw.exact);
  // Ranks: 1 | 2 2 2 -> 3 | 3 3 3 -> 6 | 4 -> 8; a = 1 + 3 + 3 + 6 = 13, U = 13 - 10 = 3.
  EXPECT_DOUBLE_EQ(mw.u, 3);
  EXPECT_GT(mw.p_value, 0.05);
  EXPECT_LT(mw.p_value, 1.0);
}

TEST(Compare, RatioOfMediansWithDeterministicBootstrapInterval) {
  const std::vector<double> a{10, 11, 9, 10.5, 9.5, 10.2, 9.8};
  const std::vector<double> b{20, 22, 18, 21, 19, 20.4, 19.6};
  const auto e = compare_samples(a, b);
  ASSERT_TRUE(e.has_value());
  EXPECT_DOUBLE_EQ(e->median_a, 10);
  EXPECT_DOUBLE_EQ(e->median_b, 20);
  EXPECT_DOUBLE_EQ(e->ratio, 2.0);
  EXPECT_LE(e->ci_low, 2.0);
  EXPECT_GE(e->ci_high, 2.0);
  EXPECT_GT(e->ci_low, 1.6);
  EXPECT_LT(e->ci_high, 2.5);
  EXPECT_LT(e->p_value, 0.01);
  const auto again = compare_samples(a, b);
  EXPECT_EQ(again->ci_low, e->ci_low);
  EXPECT_EQ(again->ci_high, e->ci_high);
}

TEST(Compare, SameDistributionGivesIntervalAroundOne) {
  const std::vector<double> a{10, 11, 9, 10.5, 9.5, 10.2, 9.8, 10.1};
  const std::vector<double> b{10.05, 10.9, 9.1, 10.4, 9.6, 10.25, 9.75, 10.0};
  const auto e = compare_samples(a, b);
  ASSERT_TRUE(e.has_value());
  EXPECT_LT(e->ci_low, 1.0);
  EXPECT_GT(e->ci_high, 1.0);
  EXPECT_GT(e->p_value, 0.5);
}

TEST(Compare, EmptyOrZeroBaselineHasNoEstimate) {
  EXPECT_FALSE(compare_samples(std::vector<double>{}, std::vector<double>{1}).has_value());
  EXPECT_FALSE(compare_samples(std::vector<double>{0, 0, 0}, std::vector<double>{1}).has_value());
}

TEST(Compare, RefusesRunsOfDifferentModels) {
  const std::string sha_a(64, 'a'), sha_b = std::string(4, 'c') + std::string(60, 'd');
  const CompareReport r = compare_documents(bench_document(provenance(sha_a), {10, 11, 12}),
                                            bench_document(provenance(sha_b), {20, 21, 22}));
  EXPECT_FALSE(r.comparable());
  ASSERT_EQ(r.mismatches.size(), 1u);
  EXPECT_EQ(r.mismatches[0].label, "model sha256");
  const std::string msg = r.mismatches[0].message();
  EXPECT_NE(msg.find("model sha256 differs"), std::string::npos) << msg;
  EXPECT_NE(msg.find("aaaaaaaaaaaa"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ccccdddd"), std::string::npos) << msg;
}

TEST(Compare, ReportsEveryDifferingField) {
  const std::vector<Mismatch> m = comparability_mismatches(
      provenance_checks(provenance("x", "Q4_0", "80fb11a"), provenance("x", "Q8_0", "b5000")));
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].label, "quantisation");
  EXPECT_EQ(m[1].label, "engine version");
  EXPECT_EQ(m[1].message(), "engine version differs (80fb11a vs b5000)");
}

TEST(Compare, InProcessAgainstAnotherEngineIsNotComparable) {
  nlohmann::json endpoint = provenance("x");
  endpoint["engine"]["name"] = "http";
  const std::vector<Mismatch> m = comparability_mismatches(provenance_checks(provenance("x"), endpoint));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].message(), "engine differs (llama.cpp vs http)");
}

// The token loop against one request per repetition (--api): a request's TTFT also holds
// the template and the request, so the two are not the same measurement. A result without
// the field ran the token loop.
TEST(Compare, TheTokenLoopAgainstTheRequestPathIsNotComparable) {
  nlohmann::json request = provenance("x");
  request["request_path"] = "completions";
  const std::vector<Mismatch> m = comparability_mismatches(provenance_checks(provenance("x"), request));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].message(), "request path differs (token vs completions)");
  EXPECT_TRUE(comparability_mismatches(provenance_checks(provenance("x"), provenance("x"))).empty());
  EXPECT_TRUE(comparability_mismatches(provenance_checks(request, request)).empty());
}

TEST(Compare, FieldPresentOnOneSideOnlyIsAMismatch) {
  const std::vector<Mismatch> m = comparability_mismatches({{"model sha256", "abc", std::nullopt}});
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].b, "(absent)");
}

TEST(Compare, SameProvenanceComparesEveryMetric) {
  const CompareReport r = compare_documents(bench_document(provenance("s"), {10, 10.5, 9.5}),
                                            bench_document(provenance("s"), {12, 12.6, 11.4}));
  EXPECT_TRUE(r.comparable());
  ASSERT_EQ(r.metrics.size(), 2u);  // decode_tokens_per_s and ttft_ms; "ordinal" is a label
  EXPECT_EQ(r.metrics[0].test, "tg64");
  EXPECT_EQ(r.metrics[0].metric, "decode_tokens_per_s");
  ASSERT_TRUE(r.metrics[0].estimate.has_value());
  EXPECT_DOUBLE_EQ(r.metrics[0].estimate->ratio, 1.2);
}

// A session result (`session -o json`, or a stored session loaded back): each
// configuration is a test and its turns are the samples; failed turns are left out.
TEST(Compare, ExtractsSamplesFromASession) {
  const nlohmann::json session{
      {"kind", "session"},
      {"provenance", provenance("s")},
      {"configs",
       {{{"ordinal", 0},
         {"config", {{"model_path", "/m.gguf"}, {"n_ctx", 2048}, {"n_threads", 2}}},
         {"turns",
          {{{"ttft_ms", 300.0}, {"decode_tokens_per_s", 20.0}},
           {{"ttft_ms", 310.0}, {"decode_tokens_per_s", 21.0}},
           {{"ttft_ms", 9999.0}, {"decode_tokens_per_s", 0.0}, {"error", {{"message", "failed"}}}}}}}}}};
  const MetricSamples s = extract_metric_samples(session);
  ASSERT_EQ(s.size(), 1u);
  const auto& samples = s.begin()->second;
  EXPECT_EQ(samples.at("ttft_ms"), (std::vector<double>{300, 310}));
  EXPECT_EQ(samples.at("decode_tokens_per_s"), (std::vector<double>{20, 21}));
  EXPECT_EQ(extract_provenance(session)["models"][0]["sha256"], "s");
  // The workload of a session is its configurations without the model path.
  nlohmann::json other = session;
  other["configs"][0]["config"]["model_path"] = "/elsewhere/m.gguf";
  EXPECT_EQ(workload_signature(session), workload_signature(other));
  other["configs"][0]["config"]["n_ctx"] = 1024;
  EXPECT_NE(workload_signature(session), workload_signature(other));
}

TEST(Compare, MetricsATestDoesNotMeasureAreLeftOutAndThroughputComesFirst) {
  nlohmann::json a = bench_document(provenance("s"), {10, 11, 12});
  for (auto& rep : a["results"][0]["repetitions"]) {
    rep["prefill_tokens_per_s"] = 0.0;  // a tg test has no prefill
    rep["decode_ms"] = 100.0;
  }
  const CompareReport r = compare_documents(a, a);
  ASSERT_EQ(r.metrics.size(), 3u);
  EXPECT_EQ(r.metrics[0].metric, "decode_tokens_per_s");
  EXPECT_EQ(r.metrics[1].metric, "ttft_ms");
  EXPECT_EQ(r.metrics[2].metric, "decode_ms");
}

TEST(Compare, DifferentWorkloadIsNotComparable) {
  const CompareReport r = compare_documents(bench_document(provenance("s"), {10, 11}, 2),
                                            bench_document(provenance("s"), {10, 11}, 4));
  EXPECT_FALSE(r.comparable());
  ASSERT_EQ(r.mismatches.size(), 1u);
  EXPECT_EQ(r.mismatches[0].label, "workload");
}

TEST(Compare, EveryModelOfAMultiModelRunIsChecked) {
  nlohmann::json a = provenance("x"), b = provenance("x");
  a["models"].push_back({{"sha256", "y1"}, {"quant", "Q8_0"}});
  b["models"].push_back({{"sha256", "y2"}, {"quant", "Q8_0"}});
  EXPECT_EQ(read_field(a, {"/models/*/sha256"}), "x,y1");
  const std::vector<Mismatch> m = comparability_mismatches(provenance_checks(a, b));
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].message(), "model sha256 differs (x,y1 vs x,y2)");
}

TEST(Compare, FieldsAbsentOnBothSidesAreReportedAsUnverified) {
  const CompareReport r = compare_documents(bench_document(nlohmann::json::object(), {1, 2}),
                                            bench_document(nlohmann::json::object(), {1, 2}));
  EXPECT_TRUE(r.comparable());
  EXPECT_EQ(r.unverified, (std::vector<std::string>{"model sha256", "quantisation", "engine", "engine version"}));
}

}  // namespace
}  // namespace edgeprobe::analysis
