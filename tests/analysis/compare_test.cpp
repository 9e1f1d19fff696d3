#include "analysis/compare.h"
#include "core/error.h"

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
  ASSERT_TRUE(e->ci.has_value());
  EXPECT_LE(e->ci->low, 2.0);
  EXPECT_GE(e->ci->high, 2.0);
  EXPECT_GT(e->ci->low, 1.6);
  EXPECT_LT(e->ci->high, 2.5);
  EXPECT_LT(e->p_value, 0.01);
  const auto again = compare_samples(a, b);
  EXPECT_EQ(again->ci->low, e->ci->low);
  EXPECT_EQ(again->ci->high, e->ci->high);
  EXPECT_EQ(judge("decode_tokens_per_s", *e).kind, VerdictKind::kBetter);
}

TEST(Compare, SameDistributionGivesIntervalAroundOne) {
  const std::vector<double> a{10, 11, 9, 10.5, 9.5, 10.2, 9.8, 10.1};
  const std::vector<double> b{10.05, 10.9, 9.1, 10.4, 9.6, 10.25, 9.75, 10.0};
  const auto e = compare_samples(a, b);
  ASSERT_TRUE(e.has_value());
  ASSERT_TRUE(e->ci.has_value());
  EXPECT_LT(e->ci->low, 1.0);
  EXPECT_GT(e->ci->high, 1.0);
  EXPECT_GT(e->p_value, 0.5);
  EXPECT_EQ(judge("decode_tokens_per_s", *e).text, "no difference shown (n=8/8)");
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
  nlohmann::json a = bench_document(provenance("s"), {10, 11}), b = a;
  a["results"][0]["config"]["n_gen"] = 64;
  b["results"][0]["config"]["n_gen"] = 128;
  const CompareReport r = compare_documents(a, b);
  EXPECT_FALSE(r.comparable());
  ASSERT_EQ(r.mismatches.size(), 1u);
  EXPECT_EQ(r.mismatches[0].label, "workload");
  EXPECT_NE(r.mismatches[0].message().find("64"), std::string::npos) << r.mismatches[0].message();
}

// A real device B almost always runs another thread count than A: the same model on the
// same workload is compared, and the setting that differs is listed with the ratios.
TEST(Compare, AThreadCountThatDiffersIsASettingToShowNotARefusal) {
  const CompareReport r = compare_documents(bench_document(provenance("s"), {10, 11, 12, 13}, 2),
                                            bench_document(provenance("s"), {5, 6, 5, 6}, 1));
  EXPECT_TRUE(r.comparable());
  ASSERT_EQ(r.differences.size(), 1u);
  EXPECT_EQ(r.differences[0].text(), "threads: 2 → 1");
  EXPECT_TRUE(r.differences[0].configuration);
  ASSERT_FALSE(r.metrics.empty());
  EXPECT_EQ(r.metrics[0].metric, "decode_tokens_per_s");
}

// Two doctor results compare their primary runs (what they diagnosed), with the settings
// that differ; a --tune result, which keeps no run, is refused by name.
TEST(Compare, DoctorResultsCompareTheirPrimaryRuns) {
  auto doctor_of = [](nlohmann::json primary) {
    return nlohmann::json{{"schema_version", 2}, {"kind", "doctor"}, {"doctor", {{"findings", nlohmann::json::array()}, {"primary", primary}}}};
  };
  const CompareReport r = compare_documents(doctor_of(bench_document(provenance("s"), {10, 11, 12, 13}, 2)),
                                            doctor_of(bench_document(provenance("s"), {5, 6, 5, 6}, 1)));
  EXPECT_TRUE(r.comparable());
  ASSERT_FALSE(r.metrics.empty());
  ASSERT_EQ(r.differences.size(), 1u);
  EXPECT_EQ(r.differences[0].text(), "threads: 2 → 1");
  const nlohmann::json tune = {{"schema_version", 2}, {"kind", "doctor"}, {"doctor", {{"tune", nlohmann::json::object()}}}};
  try {
    compare_documents(tune, tune);
    ADD_FAILURE() << "a tune result has no run to compare";
  } catch (const edgeprobe::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--tune"), std::string::npos) << e.what();
  }
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

// --- When a verdict is allowed (issue 24: "compare gives verdicts it cannot support") ---

// A RatioEstimate as compare_samples would give it, for the rule alone.
RatioEstimate estimate(size_t n, double ratio, double low, double high, double p) {
  RatioEstimate e;
  e.n_a = e.n_b = n;
  e.median_a = 100;
  e.median_b = 100 * ratio;
  e.ratio = ratio;
  e.ci = Interval{low, high};
  e.p_value = p;
  return e;
}

// The minimum follows from the test: fully separated samples give the smallest p there
// is, 2 / C(m+n, m); below the minimum it is not under 0.05, at the minimum it is.
TEST(CompareVerdict, MinimumSamplesIsWhereTheExactTestCanFirstReachTheLevel) {
  auto smallest_p = [](size_t m, size_t n) {
    std::vector<double> a, b;
    for (size_t i = 0; i < m; ++i) a.push_back(static_cast<double>(i));
    for (size_t i = 0; i < n; ++i) b.push_back(100.0 + static_cast<double>(i));
    const MannWhitney mw = mann_whitney(a, b);
    EXPECT_TRUE(mw.exact);
    return mw.p_value;
  };
  const size_t k = kMinSamplesPerSide;
  EXPECT_NEAR(smallest_p(3, 3), 0.1, 1e-12);
  EXPECT_GE(smallest_p(k - 1, k - 1), 0.05);
  EXPECT_GE(smallest_p(k - 1, k), 0.05);  // 2/35
  EXPECT_LT(smallest_p(k, k), 0.05);      // 2/70
}

TEST(CompareVerdict, TwoSingleRepetitionRunsGetNoVerdictAndNoInterval) {
  // The case: -r 1 against -r 1 printed "B better" over [r, r] at p = 1.
  const CompareReport r =
      compare_documents(bench_document(provenance("s"), {20}), bench_document(provenance("s"), {30}));
  ASSERT_TRUE(r.comparable());
  ASSERT_FALSE(r.metrics.empty());
  for (const MetricComparison& m : r.metrics) {
    ASSERT_TRUE(m.estimate.has_value()) << m.metric;
    EXPECT_FALSE(m.estimate->ci.has_value()) << m.metric << ": no interval from one sample";
    const Verdict v = judge(m.metric, *m.estimate);
    EXPECT_EQ(v.kind, VerdictKind::kTooFewSamples) << m.metric;
    EXPECT_FALSE(v.shown());
    EXPECT_EQ(v.text, "no difference shown (n=1/1; a verdict needs 4 per side)");
  }
  const nlohmann::json j = to_json(r);
  EXPECT_TRUE(j["metrics"][0]["ci"].is_null());
  EXPECT_EQ(j["metrics"][0]["verdict_kind"], "too_few_samples");
  EXPECT_EQ(j["metrics"][0]["ratio"], 1.5);  // the ratio of medians is still a fact
  EXPECT_EQ(j["rule"]["min_samples_per_side"], kMinSamplesPerSide);
}

TEST(CompareVerdict, ThreeRepetitionsNeverGiveAVerdictEvenFullySeparated) {
  // n = 3 printed "B worse" at p = 0.059; fully separated 3 against 3 is p = 0.1.
  const CompareReport r = compare_documents(bench_document(provenance("s"), {30, 30.5, 31}),
                                            bench_document(provenance("s"), {20, 20.5, 21}));
  ASSERT_EQ(r.metrics[0].metric, "decode_tokens_per_s");
  const Verdict v = judge(r.metrics[0].metric, *r.metrics[0].estimate);
  EXPECT_EQ(v.kind, VerdictKind::kTooFewSamples);
  EXPECT_EQ(v.text, "no difference shown (n=3/3; a verdict needs 4 per side)");
}

TEST(CompareVerdict, PNotBelowTheLevelOrAnIntervalHoldingOneIsNoVerdict) {
  Verdict v = judge("decode_tokens_per_s", estimate(6, 0.8, 0.7, 0.9, 0.059));
  EXPECT_EQ(v.kind, VerdictKind::kNoDifferenceShown);
  EXPECT_EQ(v.text, "no difference shown (n=6/6)");
  EXPECT_NE(v.reason.find("p = 0.059"), std::string::npos) << v.reason;
  EXPECT_EQ(judge("decode_tokens_per_s", estimate(6, 0.8, 0.7, 0.9, 0.05)).kind,
            VerdictKind::kNoDifferenceShown);
  v = judge("decode_tokens_per_s", estimate(6, 0.8, 0.7, 1.0, 0.01));
  EXPECT_EQ(v.kind, VerdictKind::kNoDifferenceShown);
  EXPECT_NE(v.reason.find("holds 1"), std::string::npos) << v.reason;
  // Everything holds: a verdict, by the metric's direction.
  EXPECT_EQ(judge("decode_tokens_per_s", estimate(6, 0.8, 0.7, 0.9, 0.01)).text, "B worse");
  EXPECT_EQ(judge("ttft_ms", estimate(6, 0.8, 0.7, 0.9, 0.01)).text, "B better");
  EXPECT_EQ(judge("frames", estimate(6, 0.8, 0.7, 0.9, 0.01)).text, "B lower");
}

TEST(CompareVerdict, OnePercentMorePeakRssIsNoPracticalDifference) {
  // Eight repetitions each, B's peak RSS 1 % above A's every time: significant, and not
  // a regression anyone should act on.
  std::vector<double> a, b;
  for (int i = 0; i < 8; ++i) {
    a.push_back(200e6 + 1e5 * i);
    b.push_back(202e6 + 1e5 * i + 5e5);
  }
  const auto e = compare_samples(a, b);
  ASSERT_TRUE(e.has_value());
  ASSERT_LT(e->p_value, 0.05);
  ASSERT_FALSE(e->ci->contains(1.0));
  const Verdict v = judge("peak_rss_bytes", *e);
  EXPECT_EQ(v.kind, VerdictKind::kNoPracticalDifference);
  EXPECT_EQ(v.text, "no practical difference (within ±5 %)");
  // Past the threshold the same evidence is a verdict.
  for (double& x : b) x *= 1.07;
  EXPECT_EQ(judge("peak_rss_bytes", *compare_samples(a, b)).text, "B worse");
  // Each class has its threshold; 2 % faster decode is within the 3 % of throughput.
  EXPECT_EQ(practical_threshold("decode_tokens_per_s"), 0.03);
  EXPECT_EQ(practical_threshold("ttft_ms"), 0.03);
  EXPECT_EQ(practical_threshold("peak_rss_bytes"), 0.05);
  EXPECT_EQ(practical_threshold("energy_j"), 0.10);
  EXPECT_EQ(judge("decode_tokens_per_s", estimate(8, 1.02, 1.01, 1.03, 0.001)).kind,
            VerdictKind::kNoPracticalDifference);
}

// Two runs of one configuration on a noisy host: repetitions with a realistic spread
// (about ±5 %, one slow outlier), dealt alternately to A and B, as if the same run had
// been made twice. Fixed numbers, so the test cannot flake.
TEST(CompareVerdict, TwoRunsOfTheSameConfigurationGetNoVerdict) {
  const std::vector<double> decode{41.2, 39.8, 44.1, 40.5, 38.9, 42.7, 43.3, 40.1, 39.5, 41.9, 36.0, 40.8};
  const std::vector<double> rss{212e6, 214e6, 211e6, 213e6, 215e6, 212e6,
                                213e6, 211e6, 214e6, 212e6, 213e6, 215e6};
  auto run = [&](size_t first) {
    nlohmann::json reps = nlohmann::json::array();
    for (size_t i = first; i < decode.size(); i += 2)
      reps.push_back(
          {{"decode_tokens_per_s", decode[i]}, {"ttft_ms", 1000.0 / decode[i]}, {"peak_rss_bytes", rss[i]}});
    return nlohmann::json{
        {"provenance", provenance("s")},
        {"results", {{{"test", "tg64"}, {"config", {{"n_threads", 2}}}, {"repetitions", reps}}}}};
  };
  for (const auto& [a, b] : {std::pair{run(0), run(1)}, std::pair{run(1), run(0)}}) {
    const CompareReport r = compare_documents(a, b);
    EXPECT_TRUE(r.comparable());
    EXPECT_TRUE(r.differences.empty());
    ASSERT_EQ(r.metrics.size(), 3u);
    for (const MetricComparison& m : r.metrics) {
      const Verdict v = judge(m.metric, *m.estimate);
      EXPECT_FALSE(v.shown()) << m.metric << ": " << v.text;
      EXPECT_NE(v.text.find("n=6/6"), std::string::npos) << v.text;
    }
  }
}

// --- The settings that differ ---

TEST(CompareDifferences, ListsTheCpuVariantAndConfigurationEvenWhenComparable) {
  nlohmann::json a = bench_document(provenance("s"), {10, 11, 12, 13}, 2);
  nlohmann::json b = bench_document(provenance("s"), {10, 11, 12, 13}, 4);
  a["provenance"]["engine"]["cpu_variant"] = "haswell";
  b["provenance"]["engine"]["cpu_variant"] = "sse42";
  a["provenance"]["engine"]["cpu_variant_features"] = {{"AVX", "1"}, {"AVX2", "1"}, {"REPACK", "1"}};
  b["provenance"]["engine"]["cpu_variant_features"] = {{"REPACK", "1"}, {"SSE3", "1"}};
  a["provenance"]["device"] = {{"id", "dev-1"}, {"cpu_model", "Example CPU"}};
  b["provenance"]["device"] = {{"id", "dev-1"}, {"cpu_model", "Example CPU"}};
  b["results"][0]["config"]["cpu_mask"] = "0x3";
  a["results"][0]["config"]["cpu_mask"] = "";
  const std::vector<SettingDifference> d = setting_differences(a, b);
  std::vector<std::string> texts;
  for (const SettingDifference& x : d) texts.push_back(x.text());
  EXPECT_EQ(texts, (std::vector<std::string>{"ggml cpu variant: haswell → sse42",
                                             "ggml cpu features on one side only: AVX AVX2 → SSE3",
                                             "cpu mask: (empty) → 0x3", "threads: 2 → 4"}));
  EXPECT_FALSE(d[0].configuration);
  EXPECT_TRUE(d.back().configuration);

  // The variant alone keeps two runs comparable (that is what is being compared), and is
  // still listed, in JSON too.
  b["results"][0]["config"] = a["results"][0]["config"];
  const CompareReport r = compare_documents(a, b);
  EXPECT_TRUE(r.comparable());
  ASSERT_EQ(r.differences.size(), 2u);
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["differences"][0]["setting"], "ggml cpu variant");
  EXPECT_EQ(j["differences"][0]["a"], "haswell");
  EXPECT_EQ(j["differences"][0]["b"], "sse42");
  EXPECT_EQ(j["differences"][0]["kind"], "provenance");
  EXPECT_EQ(j["differences"][0]["text"], "ggml cpu variant: haswell → sse42");
  EXPECT_TRUE(setting_differences(a, a).empty());
}

TEST(CompareDifferences, VersionsDevicesAndSweepsAreListed) {
  nlohmann::json a = bench_document(provenance("s", "Q4_0", "80fb11a"), {1, 2});
  nlohmann::json b = bench_document(provenance("s", "Q4_0", "b5000"), {1, 2});
  a["provenance"]["edgeprobe_version"] = "0.1.0";
  b["provenance"]["edgeprobe_version"] = "0.2.0";
  a["provenance"]["device"] = {{"cpu_model", "AMD EPYC 7763 64-Core Processor"}};
  b["provenance"]["device"] = {{"id", "dev-2"}, {"cpu_model", "AMD EPYC 9654 96-Core Processor"}};
  // B swept two thread counts: its values are listed in test order.
  b["results"].push_back(b["results"][0]);
  b["results"][1]["config"]["n_threads"] = 1;
  std::vector<std::string> texts;
  for (const SettingDifference& x : setting_differences(a, b)) texts.push_back(x.text());
  EXPECT_EQ(texts,
            (std::vector<std::string>{"engine commit: 80fb11a → b5000", "edgeprobe version: 0.1.0 → 0.2.0",
                                      "device id: (absent) → dev-2",
                                             "device cpu: AMD EPYC 7763 64-Core Processor → AMD EPYC 9654 96-Core Processor",
                                             "threads: 2 → 2,1"}));
}

// A sweep whose tests share a name (two thread counts, two models) keeps their samples
// apart instead of pooling two distributions into one.
TEST(CompareDifferences, TestsSharingANameInASweepAreNotPooled) {
  nlohmann::json doc = bench_document(provenance("s"), {10, 11}, 1);
  doc["results"].push_back(bench_document(provenance("s"), {20, 21}, 2)["results"][0]);
  const MetricSamples s = extract_metric_samples(doc);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s.at("tg64 (n_threads=1)").at("decode_tokens_per_s"), (std::vector<double>{10, 11}));
  EXPECT_EQ(s.at("tg64 (n_threads=2)").at("decode_tokens_per_s"), (std::vector<double>{20, 21}));
  doc["results"][1]["config"]["n_threads"] = 1;
  doc["results"][0]["model_index"] = 0;
  doc["results"][1]["model_index"] = 1;
  EXPECT_TRUE(extract_metric_samples(doc).contains("tg64 (model=1)"));
}

}  // namespace
}  // namespace edgeprobe::analysis
