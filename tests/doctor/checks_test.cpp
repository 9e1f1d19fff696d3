// The checks as pure functions: Evidence put together by hand (bench results built from
// the result structs, with only what each check reads filled in), so every threshold and
// estimate is pinned without running a model.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "doctor/bench_results.h"
#include "doctor/config.h"
#include "doctor/doctor.h"
#include "doctor/evidence.h"
#include "doctor/finding.h"

using namespace edgeprobe;
using namespace edgeprobe::doctor;
using nlohmann::json;

namespace {

result::TestResult bench_test(const std::string& test, int threads, double pp, double tg, json decode_telemetry = nullptr) {
  return doctor_test::test_result(test, threads, pp, tg,
                                  decode_telemetry.is_null() ? json(nullptr) : json{{"decode", decode_telemetry}});
}

result::BenchReport report(std::vector<result::TestResult> results, const std::string& sha = "aa",
                           const std::string& quant = "q4_0") {
  result::ModelIdentity m;
  m.path = "/m/model-q4_0.gguf";
  m.sha256 = sha;
  m.size_bytes = 1000;
  m.dominant_type = quant;
  m.n_params = 10;
  m.bits_per_weight = 4.5;
  result::BenchReport r = doctor_test::bench_report(std::move(results), m);
  r.provenance.engine.name = "llama.cpp";
  r.provenance.engine.commit = "80fb11a";
  r.provenance.engine.cpu_variant = "zen4";
  r.provenance.extra["isa_gap"] = {{"fallback", false}, {"loaded_variant", "zen4"}, {"summary", "best"}};
  return r;
}

model::GgufInfo q4_model(const std::string& path, const std::string& type = "q4_0") {
  model::GgufInfo info;
  info.path = path;
  info.name = "test";
  const uint64_t params = 1 << 20;
  const uint64_t bytes = type == "f16" ? params * 2 : params * 18 / 32;
  info.tensors.push_back({"blk.0.ffn_up.weight", type, {1024, 1024}, static_cast<int64_t>(params), bytes, 0});
  info.file_bytes = bytes + 4096;
  return info;
}

Evidence base_evidence() {
  Evidence e;
  e.options.model_path = "/m/model-q4_0.gguf";
  e.options.config.threads = 2;
  e.options.n_prompt = 128;
  e.options.n_gen = 32;
  e.model = q4_model(e.options.model_path);
  e.device.affinity = {0, 1};
  e.primary.report = report({bench_test("pp128", 2, 200, 0), bench_test("tg32", 2, 0, 40)});
  return e;
}

const Finding* find(const std::vector<Finding>& findings, const std::string& id) {
  for (const auto& f : findings)
    if (f.id == id) return &f;
  return nullptr;
}

bool any_warning(const std::vector<Finding>& findings) {
  return std::any_of(findings.begin(), findings.end(), [](const Finding& f) { return f.severity != Severity::kInfo; });
}

}  // namespace

TEST(DoctorConfig, BenchArgsListOnlyWhatDiffersFromTheDefaults) {
  RunConfig c;
  c.threads = 4;
  EXPECT_EQ(c.flags_text(), "-t 4");
  c.cpu_mask = "0xf0";
  c.cpu_strict = 1;
  c.poll = 0;
  c.n_ubatch = 256;
  c.flash_attn = "1";
  c.use_mmap = false;
  c.cpu_variant = "sse42";
  EXPECT_EQ(c.flags_text(), "-t 4 -C 0xf0 --cpu-strict 1 --poll 0 -ub 256 -fa 1 -mmp 0 --cpu-variant sse42");
  // llama.cpp's tools have no variant flag: the text says how to get the variant instead.
  EXPECT_EQ(c.llama_cpp_flags_text().rfind("-t 4 -C 0xf0 --cpu-strict 1 --poll 0 -ub 256 -fa 1 -mmp 0 (", 0), 0u);
  EXPECT_NE(c.llama_cpp_flags_text().find("libggml-cpu-sse42.so"), std::string::npos);
}

TEST(DoctorConfig, ShellJoinQuotesWhatTheShellWouldSplit) {
  EXPECT_EQ(shell_join({"edgeprobe", "-m", "/a b/it's.gguf"}), "edgeprobe -m '/a b/it'\\''s.gguf'");
}

TEST(DoctorFindings, CriticalFirstThenLargestGain) {
  std::vector<Finding> f(4);
  f[0].id = "info";
  f[1].id = "small";
  f[1].severity = Severity::kWarning;
  f[1].speedup = 1.2;
  f[2].id = "big";
  f[2].severity = Severity::kWarning;
  f[2].speedup = 3;
  f[3].id = "void";
  f[3].severity = Severity::kCritical;
  sort_by_impact(f);
  EXPECT_EQ(f[0].id, "void");
  EXPECT_EQ(f[1].id, "big");
  EXPECT_EQ(f[2].id, "small");
  EXPECT_EQ(f[3].id, "info");
}

TEST(DoctorChecks, AHealthyRunHasNoWarning) {
  const auto findings = diagnose(base_evidence());
  EXPECT_FALSE(any_warning(findings));
  EXPECT_NE(find(findings, "ceiling.efficiency"), nullptr);
}

TEST(DoctorChecks, F16WeightsInAFileNamedQ4AreCritical) {
  Evidence e = base_evidence();
  e.model = q4_model("/m/llama-q4_0.gguf", "f16");
  const auto findings = diagnose(e);
  const Finding* f = find(findings, "precision.mismatch");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_NEAR(*f->speedup, 16.0 / 4.5, 0.01);  // bits per weight actually read over promised
}

TEST(DoctorChecks, AQuantisedNameWinsOverTheFloatItCameFrom) {
  Evidence e = base_evidence();
  e.model = q4_model("/m/llama-f16-converted-q4_0.gguf", "f16");
  const auto findings = diagnose(e);
  const Finding* f = find(findings, "precision.mismatch");
  ASSERT_NE(f, nullptr);
  EXPECT_DOUBLE_EQ(f->data.at("claimed_bits_per_weight").get<double>(), 4.5);
}

TEST(DoctorChecks, ARealQ4FileIsNotFlagged) {
  Evidence e = base_evidence();
  e.model = q4_model("/m/llama-Q4_K_M.gguf", "q4_0");
  EXPECT_EQ(find(diagnose(e), "precision.mismatch"), nullptr);
}

TEST(DoctorChecks, ABaselineWithAnotherFileVoidsTheComparison) {
  Evidence e = base_evidence();
  e.baseline = report({}, "bb", "q3_K");
  const auto findings = diagnose(e);
  const Finding* f = find(findings, "identity.baseline_mismatch");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kCritical);
  EXPECT_EQ(f->data.at("differences").size(), 2u);  // SHA and quantisation; same size and params
  e.baseline = report({}, "aa", "q4_0");
  EXPECT_EQ(find(diagnose(e), "identity.baseline_mismatch"), nullptr);
}

namespace {

// A comparison of `a` against `b` from its children's seconds, pair by pair in ABBA order,
// with the reference kernel at `speed` (ms) during each child unless given per pair.
Comparison pairs_of(const std::string& a, const std::string& b, const std::vector<std::pair<double, double>>& seconds,
                    const std::vector<std::pair<double, double>>& kernel_ms = {}) {
  Comparison c;
  c.what = "threads";
  c.a_label = a;
  c.b_label = b;
  for (size_t i = 0; i < seconds.size(); ++i) {
    const auto [ka, kb] = i < kernel_ms.size() ? kernel_ms[i] : std::pair{1.0, 1.0};
    // Rates per phase that follow the seconds: prefill gains what the turn gains, decode half of it.
    PairChild ca{false, seconds[i].first, {ka, ka}, 0.0, 0.0, std::nullopt, 1, "", 100.0, 10.0};
    PairChild cb{true, seconds[i].second, {kb, kb}, 0.0, 0.0, std::nullopt, 1, "",
                 100.0 * seconds[i].first / seconds[i].second, 10.0 * (1 + (seconds[i].first / seconds[i].second - 1) / 2)};
    if (i % 2) std::swap(ca, cb);  // ABBA: the B child first in odd pairs
    c.children.push_back(ca);
    c.children.push_back(cb);
  }
  settle(c, 1.0, StopRule{}, false);
  return c;
}

}  // namespace

TEST(DoctorChecks, MoreThreadsThanUsableCpusTakesTheSpeedupFromThePairs) {
  Evidence e = base_evidence();
  e.options.config.threads = 8;
  e.primary.report = report({bench_test("pp128", 8, 20, 0), bench_test("tg32", 8, 0, 4)});
  BenchRun sweep;
  sweep.report = report({bench_test("pp128", 1, 100, 0), bench_test("tg32", 1, 0, 25), bench_test("pp128", 2, 200, 0), bench_test("tg32", 2, 0, 40)});
  e.thread_sweep = sweep;
  e.thread_pairs = pairs_of("-t 8", "-t 2", {{10, 2}, {12, 2}, {9, 2}, {11, 2}});
  const auto findings = diagnose(e);
  const Finding* f = find(findings, "threads.oversubscribed");
  ASSERT_NE(f, nullptr);
  // Ratios 5, 6, 4.5, 5.5: median 5.25, [min, max] = [4.5, 6] at 87.5 %.
  ASSERT_TRUE(f->speedup);
  EXPECT_NEAR(*f->speedup, 5.25, 1e-9);
  EXPECT_NE(f->speedup_basis.find("[4.50, 6.00]"), std::string::npos) << f->speedup_basis;
  EXPECT_EQ(f->fix, "-t 2");
  EXPECT_FALSE(f->data.contains("disagreement"));
  // The same pairs per phase, for explain: prefill x5.25, decode half the gain (x3.125).
  const json& phases = f->data["measured"]["phases"];
  EXPECT_NEAR(phases["prefill"]["median_ratio"].get<double>(), 5.25, 1e-9) << phases.dump();
  EXPECT_NEAR(phases["decode"]["median_ratio"].get<double>(), 3.125, 1e-9) << phases.dump();
  EXPECT_EQ(phases["decode"]["pairs"], 4);
}

// Issue 17: -t 2 on one CPU, and the measured fix came out slower twice. The finding
// keeps its reason, carries no measured speed-up, and says that the two disagree.
TEST(DoctorChecks, AFixThatMeasuresSlowerIsSaidToDisagree) {
  Evidence e = base_evidence();
  e.device.affinity = {0};
  e.thread_pairs = pairs_of("-t 2", "-t 1", {{1, 3}, {1.1, 3}, {0.9, 3.5}, {1, 2.8}});
  e.thread_pairs->first_estimate = e.thread_pairs->estimate;
  e.thread_pairs->first_verdict = e.thread_pairs->verdict;
  ASSERT_EQ(e.thread_pairs->verdict, PairVerdict::kSlower);
  const auto findings = diagnose(e);
  const Finding* f = find(findings, "threads.oversubscribed");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->speedup);
  EXPECT_EQ(f->speedup_basis.rfind("none: -t 1 measured slower", 0), 0u) << f->speedup_basis;
  EXPECT_TRUE(f->data.value("disagreement", false));
  EXPECT_NE(f->fix.find("not confirmed"), std::string::npos);
  bool said = false;
  for (const auto& line : f->evidence) said |= line.find("disagrees with the reason") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(DoctorChecks, FasterFewerThreadsIsAWarningUnlessSomethingElseHeldTheCpus) {
  Evidence e = base_evidence();
  BenchRun sweep;
  sweep.report = report({bench_test("pp128", 1, 400, 0), bench_test("tg32", 1, 0, 80)});
  e.thread_sweep = sweep;
  e.thread_pairs = pairs_of("-t 2", "-t 1", {{2, 1}, {2.2, 1}, {1.8, 1}, {2, 1}});
  const Finding* f = nullptr;
  auto findings = diagnose(e);
  f = find(findings, "threads.count");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NEAR(*f->speedup, 2.0, 1e-9);
  e.primary.window.other_cpu_share = 0.4;
  findings = diagnose(e);
  EXPECT_EQ(find(findings, "threads.count")->severity, Severity::kInfo);
  EXPECT_EQ(find(findings, "contention.other_processes")->severity, Severity::kWarning);
}

TEST(DoctorChecks, AScreenWithoutConfirmingPairsIsNoWarning) {
  Evidence e = base_evidence();
  BenchRun sweep;
  sweep.report = report({bench_test("pp128", 1, 400, 0), bench_test("tg32", 1, 0, 80)});
  e.thread_sweep = sweep;
  // The screen said x2, the pairs found nothing: no finding to act on.
  e.thread_pairs = pairs_of("-t 2", "-t 1", {{1, 1.01}, {1, 0.99}, {1.02, 1}, {1, 1}});
  const auto findings = diagnose(e);
  EXPECT_EQ(find(findings, "threads.count"), nullptr);
  EXPECT_FALSE(any_warning(findings));
}

TEST(DoctorChecks, AnUndecidedComparisonIsReportedInconclusiveWithTheMachinesVariation) {
  Evidence e = base_evidence();
  e.device.affinity = {0};
  e.thread_pairs = pairs_of("-t 2", "-t 1", {{1, 2}, {2, 1}, {1, 1.5}, {1.5, 1}});
  settle(*e.thread_pairs, 1.0, StopRule{}, true);  // out of time
  ASSERT_EQ(e.thread_pairs->verdict, PairVerdict::kInconclusive);
  e.speed_variation = 0.37;
  const auto findings = diagnose(e);
  const Finding* f = find(findings, "threads.oversubscribed");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->speedup);
  EXPECT_NE(f->speedup_basis.find("inconclusive: the machine's speed varied by 37 %"), std::string::npos) << f->speedup_basis;
  const Finding* i = find(findings, "measurement.inconclusive");
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(i->title, "inconclusive: the machine's speed varied by 37 % during the diagnosis");
}

TEST(DoctorChecks, EveryWarningCarriesASpeedupOrSaysWhyNot) {
  Evidence e = base_evidence();
  e.primary.report->provenance.extra["llama_log"] = json::array({{{"level", 3}, {"text", "something failed"}}});
  const auto findings = diagnose(e);
  ASSERT_NE(find(findings, "kernel.log_messages"), nullptr);
  for (const auto& f : findings)
    if (f.severity != Severity::kInfo) {
      EXPECT_TRUE(f.speedup || !f.speedup_basis.empty()) << f.id;
    }
}

TEST(DoctorChecks, ADecodeStepDownTheReferenceKernelAlsoShowsIsTheMachine) {
  Evidence e = base_evidence();
  result::TestResult tg = bench_test("tg32", 2, 0, 40);
  std::vector<double> steps;
  for (int i = 0; i < 32; ++i) steps.push_back((i < 16 ? 10.0 : 14.0) + (i * 7 % 5 - 2) * 0.05);  // x1.4 from token 16, some jitter
  tg.repetitions[0].decode_step_ms = steps;
  tg.repetitions[0].telemetry = {{"decode", json::object()}};
  e.primary.report = report({bench_test("pp128", 2, 200, 0), tg});
  e.primary.reference_ms = {1.0, 1.02, 1.4, 1.45, 1.5};
  auto findings = diagnose(e);
  const Finding* f = find(findings, "throttle.decode_step_down");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
  EXPECT_TRUE(f->data.value("machine_slowed", false));
  EXPECT_NE(f->title.find("and so did the machine"), std::string::npos);
  e.primary.reference_ms = {1.0, 1.02, 1.01, 1.03, 1.0};  // the machine held its speed
  findings = diagnose(e);
  f = find(findings, "throttle.decode_step_down");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(f->data.value("machine_slowed", true));
}

TEST(DoctorChecks, ADecodeStepDownWhileOtherProcessesBrieflyRanIsInfoAndACgroupThrottleIsAWarning) {
  Evidence e = base_evidence();
  result::TestResult tg = bench_test("tg32", 2, 0, 40);
  std::vector<double> steps;
  for (int i = 0; i < 32; ++i) steps.push_back((i < 16 ? 10.0 : 12.5) + (i * 7 % 5 - 2) * 0.05);  // x1.25 from token 16
  tg.repetitions[0].decode_step_ms = steps;
  tg.repetitions[0].telemetry = {{"decode", {{"other_cpu_share", 0.4}}}};
  e.primary.report = report({bench_test("pp128", 2, 200, 0), tg});
  e.primary.reference_ms = {1.0, 1.02, 1.01, 1.03, 1.0};  // the reference kernel held its speed
  auto findings = diagnose(e);
  const Finding* f = find(findings, "throttle.decode_step_down");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kInfo);
  tg.repetitions[0].telemetry["decode"]["throttled_ms"] = 120.0;  // the device's own limit: a warning
  e.primary.report = report({bench_test("pp128", 2, 200, 0), tg});
  findings = diagnose(e);
  f = find(findings, "throttle.decode_step_down");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
}

// ---- the paired statistics and the stopping rule, on synthetic series -----------------

TEST(DoctorPaired, OrderStatisticIntervalHasItsExactCoverage) {
  auto e = estimate_pairs({1.2, 1.1, 1.3, 1.25});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->n, 4);
  EXPECT_NEAR(e->median, 1.225, 1e-12);
  EXPECT_EQ(e->low, 1.1);
  EXPECT_EQ(e->high, 1.3);
  EXPECT_NEAR(e->coverage, 0.875, 1e-12);  // 1 - 2 / 2^4
  // Seven pairs: [x2, x6] still covers 87.5 % (1 - 2 * 8/128), so the extremes drop out.
  e = estimate_pairs({5, 1, 2, 3, 4, 6, 7});
  EXPECT_EQ(e->low, 2);
  EXPECT_EQ(e->high, 6);
  EXPECT_NEAR(e->coverage, 0.875, 1e-12);
  // Too few for the confidence asked: [min, max] and the coverage it really has.
  e = estimate_pairs({2, 1});
  EXPECT_NEAR(e->coverage, 0.5, 1e-12);
  EXPECT_FALSE(estimate_pairs({}));
}

TEST(DoctorPaired, StopsWhenClearAndGivesUpWhenOutOfPairsOrTime) {
  const StopRule rule;
  EXPECT_EQ(decide(std::nullopt, rule, false), PairVerdict::kContinue);
  EXPECT_EQ(decide(estimate_pairs({2, 2.1, 1.9}), rule, false), PairVerdict::kContinue);  // fewer than min_pairs
  EXPECT_EQ(decide(estimate_pairs({2, 2.1, 1.9, 2.2}), rule, false), PairVerdict::kFaster);
  EXPECT_EQ(decide(estimate_pairs({0.5, 0.6, 0.4, 0.55}), rule, false), PairVerdict::kSlower);
  EXPECT_EQ(decide(estimate_pairs({1.01, 0.99, 1.02, 1.0}), rule, false), PairVerdict::kSame);
  EXPECT_EQ(decide(estimate_pairs({0.8, 1.3, 1.0, 1.2}), rule, false), PairVerdict::kContinue);
  EXPECT_EQ(decide(estimate_pairs({0.8, 1.3, 1.0, 1.2}), rule, true), PairVerdict::kInconclusive);
  EXPECT_EQ(decide(estimate_pairs(std::vector<double>(10, 1.0 + 0.3)), rule, false), PairVerdict::kFaster);
  std::vector<double> noisy = {0.8, 1.3, 1.0, 1.2, 0.7, 1.4, 0.9, 1.1, 0.6, 1.5};
  EXPECT_EQ(decide(estimate_pairs(noisy), rule, false), PairVerdict::kInconclusive);  // max_pairs reached
}

TEST(DoctorPaired, PairsWhoseChildrenSawAnotherMachineAreSetAside) {
  // Pair 3's B child ran while the machine was at half speed: its ratio (x4) is out.
  const Comparison c = pairs_of("-t 2", "-t 1", {{2, 1}, {2, 1}, {2, 0.5}, {2, 1}, {2, 1}},
                                {{1, 1}, {1, 1}, {1, 2}, {1, 1}, {1, 1}});
  ASSERT_EQ(c.pairs.size(), 5u);
  EXPECT_TRUE(c.pairs[2].disturbed);
  EXPECT_NE(c.pairs[2].why.find("reference kernel"), std::string::npos);
  EXPECT_FALSE(c.includes_disturbed);
  ASSERT_TRUE(c.estimate);
  EXPECT_EQ(c.estimate->n, 4);
  EXPECT_EQ(c.estimate->high, 2.0);
  EXPECT_NEAR(c.speed_variation, 0.5, 1e-12);
  EXPECT_EQ(c.verdict, PairVerdict::kFaster);
  // With too few quiet pairs, all of them count, and the estimate says so.
  const Comparison d = pairs_of("a", "b", {{2, 1}, {2, 0.5}, {2, 0.5}, {2, 1}}, {{1, 1}, {1, 2}, {1, 2}, {1, 1}});
  EXPECT_TRUE(d.includes_disturbed);
  EXPECT_EQ(d.estimate->n, 4);
}

TEST(DoctorPaired, SpeedVariationIsTheSpreadOverTheBest) {
  EXPECT_EQ(speed_variation({}), 0);
  EXPECT_EQ(speed_variation({0.9}), 0);
  EXPECT_NEAR(speed_variation({1.0, 0.6, 0.8}), 0.4, 1e-12);
  EXPECT_NEAR(*speed_factor({2.0, 4.0, 3.0}, 1.5), 0.5, 1e-12);
  EXPECT_FALSE(speed_factor({}, 1.0));
}

TEST(DoctorChecks, ACgroupQuotaBelowTheThreadsIsNamedWithItsEstimate) {
  Evidence e = base_evidence();
  e.device.cgroup.version = 1;
  e.device.cgroup.quota_cpus = 0.3;
  e.device.cgroup.cpu_dir = "/sys/fs/cgroup/cpu/x";
  e.primary.window.wall_s = 10;
  e.primary.window.throttled_ms = 6000;
  const auto findings = diagnose(e);
  const Finding* f = find(findings, "throttle.cgroup_quota");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(*f->speedup, 2 / 0.3, 1e-9);
  EXPECT_NE(f->fix.find("/sys/fs/cgroup/cpu/x/cpu.cfs_quota_us"), std::string::npos);
}

TEST(DoctorChecks, ALowClockUnderPowersaveIsTheGovernor) {
  Evidence e = base_evidence();
  telemetry::CpufreqPolicy policy;
  policy.name = "policy0";
  policy.dir = "/sys/devices/system/cpu/cpufreq/policy0";
  policy.driver = "qcom-cpufreq-hw";
  e.device.cpus.policies.push_back(policy);
  telemetry::Cluster cluster;
  cluster.name = "policy0";
  cluster.governor = "powersave";
  cluster.policies = {0};
  e.device.cpus.clusters.push_back(cluster);
  const json decode = {{"duration_ms", 100.0}, {"clusters", {{{"name", "policy0"}, {"mean_freq_share", 0.4}, {"min_cap_share", 1.0}, {"thread_time_share", 1.0}}}}};
  e.primary.report = report({bench_test("pp128", 2, 200, 0), bench_test("tg32", 2, 0, 40, decode)});
  auto findings = diagnose(e);
  const Finding* f = find(findings, "power.governor");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(*f->speedup, 2.5, 1e-9);
  // intel_pstate's "powersave" is its normal dynamic mode: a low clock there is not the governor.
  e.device.cpus.policies[0].driver = "intel_pstate";
  findings = diagnose(e);
  EXPECT_EQ(find(findings, "power.governor"), nullptr);
  EXPECT_NE(find(findings, "throttle.clock"), nullptr);
}

TEST(DoctorConfig, CpuMaskOfSetsOneBitPerCpu) {
  EXPECT_EQ(cpu_mask_of({0, 1}), "0x3");
  EXPECT_EQ(cpu_mask_of({4, 5, 6, 7}), "0xf0");
  EXPECT_EQ(cpu_mask_of({7}), "0x80");
  EXPECT_EQ(cpu_mask_of({}), "0x0");
}

namespace {

json log_line(const std::string& text) { return {{"level", 2}, {"text", text}}; }

// A run as llama.cpp logs it: the model loaded twice (cold, warm), two contexts.
Evidence with_memory(double peak_mib, double repack_mib) {
  Evidence e = base_evidence();
  e.model.file_bytes = 600ull << 20;
  json log = json::array();
  for (int load = 0; load < 2; ++load) {
    log.push_back(log_line("load_tensors:   CPU_Mapped model buffer size =   600.00 MiB"));
    log.push_back(
        log_line(fmt::format("load_tensors:   CPU_REPACK model buffer size =   {:.2f} MiB", repack_mib)));
  }
  log.push_back(log_line("llama_kv_cache:        CPU KV buffer size =     2.00 MiB"));
  log.push_back(log_line("sched_reserve:        CPU compute buffer size =     66.50 MiB"));
  log.push_back(log_line("llama_kv_cache:        CPU KV buffer size =    22.00 MiB"));
  log.push_back(log_line("sched_reserve:        CPU compute buffer size =     5.50 MiB"));
  e.primary.report->provenance.extra["llama_log"] = log;
  for (auto& rep : e.primary.report->results[1].repetitions) rep.peak_rss_bytes = static_cast<int64_t>(peak_mib * 1048576.0);
  return e;
}

}  // namespace

TEST(DoctorChecks, DeclaredMemoryKeepsTheLargestOfEachBuffer) {
  const Evidence e = with_memory(1000, 400);
  const DeclaredMemory d = declared_memory(e.primary.report->provenance.extra.at("llama_log"));
  EXPECT_DOUBLE_EQ(d.bytes.at("CPU KV"), 22.0 * 1048576);
  EXPECT_DOUBLE_EQ(d.bytes.at("CPU compute"), 66.5 * 1048576);
  EXPECT_DOUBLE_EQ(d.total(), (600 + 400 + 22 + 66.5) * 1048576.0);  // two loads count once
  EXPECT_DOUBLE_EQ(d.model_copies(), 400.0 * 1048576);               // the mapping is not a copy
}

TEST(DoctorChecks, AFootprintWithinLlamasBuffersIsInfoOnly) {
  // 1088.5 MiB declared; 1.25 x that + 128 MiB = 1488.6 MiB allowed.
  const auto findings = diagnose(with_memory(1400, 400));
  EXPECT_FALSE(any_warning(findings));
  ASSERT_NE(find(findings, "memory.footprint"), nullptr);
  EXPECT_NE(find(findings, "memory.footprint")->evidence[0].find("CPU_REPACK model 400.0 MiB"),
            std::string::npos);
}

TEST(DoctorChecks, RssBeyondLlamasBuffersIsAWarning) {
  const auto findings = diagnose(with_memory(1500, 400));
  const Finding* f = find(findings, "precision.memory_excess");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_EQ(find(findings, "precision.weights_expanded"), nullptr);
}

TEST(DoctorChecks, WeightsCopiedBeyondTheFileAreNamed) {
  // 4-bit weights held as f16 would take 3.6x the file; 1000 MiB of copies for 600 is 1.67x.
  const auto findings = diagnose(with_memory(1800, 1000));
  const Finding* f = find(findings, "precision.weights_expanded");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(*f->speedup, 1000.0 / 600.0, 1e-9);
  EXPECT_EQ(find(findings, "precision.memory_excess"), nullptr);  // 1800 <= 1.25 x 1688.5 + 128
}

namespace {

// A bench --draft result's speculative part as the document holds it: 5 pairs of 128 tokens
// (127 timed), plain 1 ms a token; 85 verify steps a pair of 4 proposals at 0.3 ms each and a
// batch of 2 ms; 0.5 accepted a step. `spec_ms` per pair.
json speculative_doc(const std::vector<double>& spec_ms, double draft_ms_per_pair = 102) {
  json pairs = json::array();
  for (size_t i = 0; i < spec_ms.size(); ++i)
    pairs.push_back({{"index", i},
                     {"tokens", 128},
                     {"plain_ms", 127.0},
                     {"spec_ms", spec_ms[i]},
                     {"draft_ms", draft_ms_per_pair},
                     {"verify_ms", 170.0},
                     {"overhead_ms", 1.0},
                     {"target_prefill_ms", 5.0},
                     {"draft_prefill_ms", 3.0},
                     {"identical", true}});
  const int64_t n = static_cast<int64_t>(spec_ms.size());
  return {{"draft", {{"path", "/m/draft.gguf"}}},
          {"draft_max", 4},
          {"draft_min", 0},
          {"verify_steps", 85 * n},
          {"plain_steps", 0},
          {"drafted", 340 * n},
          {"accepted", 212 * n / 5},
          {"positions", json::array({{{"drafted", 85 * n}, {"accepted", 30 * n}},
                                     {{"drafted", 85 * n}, {"accepted", 8 * n}},
                                     {{"drafted", 85 * n}, {"accepted", 3 * n}},
                                     {{"drafted", 85 * n}, {"accepted", 1 * n}}})},
          {"pairs", pairs}};
}

Evidence with_draft(const json& speculative) {
  Evidence e = base_evidence();
  auto& tg = e.primary.report->results.back();
  tg.speculative = result::speculative_from_json(speculative);
  return e;
}

}  // namespace

TEST(DoctorChecks, ADraftMeasuredSlowerInEveryPairIsAWarningWithItsBreakEven) {
  const auto findings = diagnose(with_draft(speculative_doc({273, 260, 280, 270, 265})));
  const Finding* f = find(findings, "speculative.draft_costs_more");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_EQ(f->affects, "decode");
  EXPECT_NE(f->title.find("at x0.47 of plain decoding's speed"), std::string::npos) << f->title;  // 127 / 270
  EXPECT_NEAR(*f->speedup, 270.0 / 127.0, 1e-9);  // dropping the draft: the median pair's plain speed-up
  EXPECT_EQ(f->data["slower_pairs"], 5);
  // Costs from the summed pairs: 1 ms a plain token, 510 ms over 1700 proposals, 850 over 425 batches.
  EXPECT_NEAR(f->data["target_token_ms"].get<double>(), 1.0, 1e-9);
  EXPECT_NEAR(f->data["draft_token_ms"].get<double>(), 0.3, 1e-9);
  EXPECT_NEAR(f->data["verify_ms"].get<double>(), 2.0, 1e-9);
  // 1 + a + a^2 + a^3 + a^4 = (4 x 0.3 + 2) / 1 = 3.2 at a = 0.7747; the run's 1.499 tokens a step is a =
  // 0.3357.
  EXPECT_NEAR(f->data["break_even_alpha"].get<double>(), 0.7747, 1e-4);
  EXPECT_NEAR(f->data["alpha"].get<double>(), 0.3357, 1e-4);
  EXPECT_NE(f->evidence[2].find("it would pay above alpha 0.77"), std::string::npos) << f->evidence[2];
  EXPECT_NE(f->evidence[0].find("5 of 5 interleaved pairs slower"), std::string::npos) << f->evidence[0];
}

TEST(DoctorChecks, ADraftThatCannotPayAtItsLengthSaysSo) {
  // 1.2 ms a proposal, more than a plain token: 4 x 1.2 + 2 > 5 tokens' worth.
  const auto findings = diagnose(with_draft(speculative_doc({500, 480, 520, 510, 490}, 408)));
  const Finding* f = find(findings, "speculative.draft_costs_more");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->data["break_even_alpha"].is_null());
  EXPECT_NE(f->evidence[2].find("cannot pay at draft length 4"), std::string::npos) << f->evidence[2];
}

TEST(DoctorChecks, ADraftWhosePairsDoNotResolveIsNotAFinding) {
  // Two pairs of five faster: the interval straddles 1.
  EXPECT_EQ(
      find(diagnose(with_draft(speculative_doc({273, 120, 280, 110, 265}))), "speculative.draft_costs_more"),
      nullptr);
  // Slower in every pair, but three pairs are too few to resolve it (doctor's four).
  EXPECT_EQ(find(diagnose(with_draft(speculative_doc({273, 260, 280}))), "speculative.draft_costs_more"),
            nullptr);
  // Faster in every pair: it pays.
  EXPECT_EQ(
      find(diagnose(with_draft(speculative_doc({90, 95, 100, 92, 97}))), "speculative.draft_costs_more"),
      nullptr);
  // No draft: nothing to say.
  EXPECT_EQ(find(diagnose(base_evidence()), "speculative.draft_costs_more"), nullptr);
}
