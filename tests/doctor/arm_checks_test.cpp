// Doctor's Arm findings as pure functions of the Evidence, on the Android phone fixture
// (tests/fixtures/sysfs/android-phone-3cluster: 3 little + 4 mid + 1 prime core): the
// dotprod/i8mm variant gap, threads on the little cores, and a big core held back by
// cpufreq (clock pinned) or hotplug (offline). Scratch copies of the fixture change one file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <tuple>

#include "analysis/explain.h"
#include "doctor/bench_results.h"
#include "doctor/doctor.h"
#include "doctor/evidence.h"
#include "doctor/finding.h"
#include "report/doctor_reporters.h"
#include "support/run_process.h"

using namespace edgeprobe;
using namespace edgeprobe::doctor;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kPhone = std::string(EDGEPROBE_TEST_DATA_DIR) + "/fixtures/sysfs/android-phone-3cluster";

// A scratch copy of the phone, so a test can change one sysfs file.
struct ScratchPhone {
  test_support::TempDir dir;
  ScratchPhone() { fs::copy(kPhone, dir.path(), fs::copy_options::recursive | fs::copy_options::overwrite_existing); }
  void write(const std::string& file, const std::string& text) const { std::ofstream(dir.path() + file) << text << "\n"; }
  std::string root() const { return dir.path(); }
};

json decode_telemetry(const std::vector<std::pair<std::string, double>>& thread_share) {
  json clusters = json::array();
  for (const auto& [name, share] : thread_share)
    clusters.push_back({{"name", name}, {"thread_time_share", share}, {"mean_freq_share", 0.97}, {"min_cap_share", 1.0}});
  return {{"duration_ms", 500.0}, {"clusters", clusters}};
}

result::BenchReport phone_report(const json& isa_gap, const json& telemetry = nullptr) {
  std::vector<result::TestResult> results = {doctor_test::test_result("pp128", 2, 100, 0)};
  if (!telemetry.is_null()) results.push_back(doctor_test::test_result("tg32", 2, 0, 20, {{"decode", telemetry}}));
  result::ModelIdentity m;
  m.path = "/m/model-q4_0.gguf";
  m.dominant_type = "q4_0";
  m.bits_per_weight = 4.5;
  result::BenchReport r = doctor_test::bench_report(std::move(results), m);
  r.provenance.engine.cpu_variant = isa_gap.value("loaded_variant", "armv8.2_2");
  r.provenance.extra["isa_gap"] = isa_gap;
  return r;
}

const json kBestVariant = {{"fallback", false}, {"loaded_variant", "armv8.2_2"}, {"summary", "the best variant ran"}};

Evidence phone_evidence(const std::string& root, const result::BenchReport& report) {
  Evidence e;
  e.options.model_path = "/m/model-q4_0.gguf";
  e.options.config.threads = 2;
  e.options.n_prompt = 128;
  e.options.n_gen = 32;
  e.options.sysfs_root = root;
  e.device = collect_device_facts(FsRoot(root));
  e.device.affinity = {0, 1, 2, 3, 4, 5, 6, 7};
  e.primary.report = report;
  return e;
}

const Finding* find(const std::vector<Finding>& findings, const std::string& id) {
  for (const auto& f : findings)
    if (f.id == id) return &f;
  return nullptr;
}

std::string all_text(const Finding& f) {
  std::string out = f.title + "\n" + f.fix + "\n" + f.speedup_basis;
  for (const auto& line : f.evidence) out += "\n" + line;
  return out;
}

TEST(DoctorArm, TheBaselineVariantOnADotprodCpuNamesTheGapAndTheVariant) {
  const json gap = {{"fallback", true}, {"loaded_variant", "armv8.0_1"}, {"best_variant", "armv8.2_2"},
                    {"cpu_features", {"NEON", "FP16", "DOTPROD"}}, {"compiled_features", {"NEON"}}, {"unused_features", {"FP16", "DOTPROD"}}};
  Evidence e = phone_evidence(kPhone, phone_report(gap));
  e.options.config.cpu_variant = "armv8.0_1";
  auto findings = diagnose(e);
  sort_by_impact(findings);
  ASSERT_FALSE(findings.empty());
  const Finding& f = findings[0];
  EXPECT_EQ(f.id, "kernel.isa_fallback") << all_text(f);
  EXPECT_EQ(f.severity, Severity::kWarning);
  EXPECT_NE(f.title.find("DOTPROD present, not used"), std::string::npos) << f.title;
  EXPECT_NE(all_text(f).find("SDOT"), std::string::npos) << all_text(f);
  EXPECT_NE(f.fix.find("drop --cpu-variant armv8.0_1"), std::string::npos) << f.fix;
  EXPECT_NE(f.fix.find("'armv8.2_2'"), std::string::npos) << f.fix;
  // Not forced: the fix is a build that has the variant, or one for this CPU.
  e.options.config.cpu_variant.clear();
  const auto not_forced = diagnose(e);
  const Finding* built = find(not_forced, "kernel.isa_fallback");
  ASSERT_NE(built, nullptr);
  EXPECT_NE(built->fix.find("GGML_CPU_ARM_ARCH=armv8.2-a+fp16+dotprod"), std::string::npos) << built->fix;
}

TEST(DoctorArm, AnI8mmGapIsNamedToo) {
  const json gap = {{"fallback", true}, {"loaded_variant", "armv8.2_2"}, {"best_variant", "armv8.6_1"},
                    {"cpu_features", {"NEON", "FP16", "DOTPROD", "I8MM"}}, {"compiled_features", {"NEON", "FP16", "DOTPROD"}}};
  const auto findings = diagnose(phone_evidence(kPhone, phone_report(gap)));
  const Finding* f = find(findings, "kernel.isa_fallback");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("I8MM present, not used"), std::string::npos) << f->title;
  EXPECT_NE(all_text(*f).find("SMMLA"), std::string::npos) << all_text(*f);
}

TEST(DoctorArm, ThreadsOnTheLittleCoresOfThePhoneAreAWarningWithAPinningFix) {
  const json telemetry = decode_telemetry({{"policy0", 0.7}, {"policy3", 0.3}, {"policy7", 0.0}});
  const auto findings = diagnose(phone_evidence(kPhone, phone_report(kBestVariant, telemetry)));
  const Finding* f = find(findings, "threads.little_cores");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  ASSERT_TRUE(f->speedup.has_value());
  EXPECT_GT(*f->speedup, 1.0);
  EXPECT_NE(f->fix.find("--cpu-strict 1"), std::string::npos) << f->fix;
  // On the prime core alone there is nothing to name.
  const json on_big = decode_telemetry({{"policy0", 0.0}, {"policy3", 0.0}, {"policy7", 1.0}});
  EXPECT_EQ(find(diagnose(phone_evidence(kPhone, phone_report(kBestVariant, on_big))), "threads.little_cores"), nullptr);
}

TEST(DoctorArm, APrimeCoreCappedFarBelowItsClockIsPinned) {
  // The fixture's own cap (2.52 of 3.19 GHz, 79 %) is a warm phone, not a pinned core.
  EXPECT_EQ(find(diagnose(phone_evidence(kPhone, phone_report(kBestVariant))), "power.big_core_pinned"), nullptr);
  ScratchPhone phone;
  phone.write("/sys/devices/system/cpu/cpufreq/policy7/scaling_max_freq", "1094400");
  const auto findings = diagnose(phone_evidence(phone.root(), phone_report(kBestVariant)));
  const Finding* f = find(findings, "power.big_core_pinned");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_NE(f->title.find("CPUs 7"), std::string::npos) << f->title;
  ASSERT_TRUE(f->speedup.has_value());
  EXPECT_NEAR(*f->speedup, 3187200.0 / 1094400.0, 1e-6);
  EXPECT_NE(all_text(*f).find("scaling_max_freq 1.09 GHz of cpuinfo_max_freq 3.19 GHz"), std::string::npos) << all_text(*f);
  EXPECT_NE(f->fix.find("echo 3187200 > /sys/devices/system/cpu/cpufreq/policy7/scaling_max_freq"), std::string::npos) << f->fix;
}

TEST(DoctorArm, APowersaveGovernorOnThePrimeCoreIsPinnedToItsFloor) {
  ScratchPhone phone;
  phone.write("/sys/devices/system/cpu/cpufreq/policy7/scaling_governor", "powersave");
  const auto findings = diagnose(phone_evidence(phone.root(), phone_report(kBestVariant)));
  const Finding* f = find(findings, "power.big_core_pinned");
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(*f->speedup, 3187200.0 / 595200.0, 1e-6);
  EXPECT_NE(f->fix.find("scaling_governor"), std::string::npos) << f->fix;
}

TEST(DoctorArm, AnOfflinePrimeCoreIsNamedWithTheCommandThatBringsItBack) {
  ScratchPhone phone;
  phone.write("/sys/devices/system/cpu/online", "0-6");
  const auto findings = diagnose(phone_evidence(phone.root(), phone_report(kBestVariant)));
  const Finding* f = find(findings, "power.big_core_offline");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::kWarning);
  EXPECT_FALSE(f->speedup.has_value());
  EXPECT_EQ(f->speedup_basis.rfind("none: ", 0), 0u) << f->speedup_basis;
  EXPECT_NE(f->fix.find("echo 1 > /sys/devices/system/cpu/cpu7/online"), std::string::npos) << f->fix;
}

TEST(DoctorArm, UnderEmulationEverySpeedupSaysSoAndDoesNotRank) {
  const json gap = {{"fallback", true}, {"loaded_variant", "armv8.0_1"}, {"best_variant", "armv8.2_2"},
                    {"cpu_features", {"NEON", "DOTPROD"}}, {"compiled_features", {"NEON"}}};
  ScratchPhone phone;
  phone.write("/sys/devices/system/cpu/cpufreq/policy7/scaling_max_freq", "1094400");  // an estimated x2.9
  result::BenchReport report = phone_report(gap);
  report.provenance.extra["cpu_features"] = {{"arch", "aarch64"}, {"emulated", "/proc/cpuinfo describes an x86 host (qemu-user)"}};
  Evidence e = phone_evidence(phone.root(), report);
  EXPECT_EQ(emulated_run(e), "/proc/cpuinfo describes an x86 host (qemu-user)");
  auto findings = diagnose(e);
  sort_by_impact(findings);
  ASSERT_FALSE(findings.empty());
  EXPECT_EQ(findings[0].id, "kernel.isa_fallback");  // the feature gap, not an emulated speed-up, comes first
  for (const auto& f : findings) {
    if (f.speedup) {
      EXPECT_EQ(f.speedup_basis.rfind(kEmulatedSpeedup, 0), 0u) << f.id << ": " << f.speedup_basis;
    }
  }
  const Finding* pinned = find(findings, "power.big_core_pinned");
  ASSERT_NE(pinned, nullptr);
  EXPECT_TRUE(pinned->data.contains("emulated"));
  // The report says so before any finding, and the gain next to a title names its source.
  Diagnosis d{e, findings, 1.0};
  const std::string text = report::to_text(to_report(d));
  const auto header = text.find("timings are emulated (/proc/cpuinfo describes an x86 host (qemu-user))");
  ASSERT_NE(header, std::string::npos) << text;
  EXPECT_LT(header, text.find("1. [warning] kernel.isa_fallback")) << text;
  EXPECT_NE(text.find("if fixed (estimated, from an emulated run, not any device's speed)"), std::string::npos) << text;
  EXPECT_EQ(result::to_json(to_report(d))["doctor"]["emulated"], "/proc/cpuinfo describes an x86 host (qemu-user)");
}

}  // namespace

// explain on the phone: B's doctor findings from the fixture (threads on the little cores,
// the prime core held at half its clock) become factors of B/A with their fixes, against a
// healthy run of the same model on the same phone.
TEST(DoctorArm, ExplainGivesThePhonesPlacementAndClockTheirFactorsAndFixes) {
  ScratchPhone phone;
  phone.write("/sys/devices/system/cpu/cpufreq/policy7/scaling_max_freq", "1593600");  // 50 % of 3.19 GHz
  const json on_little = decode_telemetry({{"policy0", 0.7}, {"policy3", 0.3}, {"policy7", 0.0}});
  const auto findings = diagnose(phone_evidence(phone.root(), phone_report(kBestVariant, on_little)));
  // What explain reads beside the findings: rates per repetition, ceilings, the model's hash.
  auto explainable = [](json report, double pp, double tg) {
    report["kind"] = "bench";
    report["provenance"]["device"] = {{"id", "dev-phone"}, {"cpu_model", "phone"}};
    report["provenance"]["models"][0]["sha256"] = "5ca1ab1e";
    json results = json::array();
    for (const auto& [test, n_prompt, n_gen] : {std::tuple{"pp128", 128, 0}, std::tuple{"tg32", 0, 32}}) {
      workload::TestCase config;  // every setting, as bench writes a config
      config.n_threads = 2;
      config.n_prompt = n_prompt;
      config.n_gen = n_gen;
      results.push_back({{"test", test}, {"status", "ok"},
                         {"config", result::to_json(config)},
                         {"repetitions", {{{"index", 0}, {"prefill_tokens_per_s", n_prompt ? pp : 0.0}, {"decode_tokens_per_s", n_gen ? tg : 0.0}}}},
                         {"roofline", {{"prefill_ceiling_tokens_per_s", 400.0}, {"decode_ceiling_tokens_per_s", 40.0},
                                       {"decode_bound", "bandwidth"}}}});
    }
    report["results"] = results;
    return report;
  };
  json b_findings = json::array();
  for (const auto& f : findings) b_findings.push_back(result::to_json(f));
  const json b = {{"kind", "doctor"},
                  {"doctor", {{"findings", b_findings}, {"primary", explainable(result::to_json(phone_report(kBestVariant, on_little)), 100, 8)}}}};
  const json a = explainable(result::to_json(phone_report(kBestVariant)), 300, 30);
  const auto e = analysis::explain(analysis::explain_side(a, "healthy.json"), analysis::explain_side(b, "phone.json"));
  ASSERT_EQ(e.phases.size(), 2u);
  const auto& decode = e.phases[1];
  ASSERT_EQ(decode.phase, "decode");
  const analysis::ExplainFactor *little = nullptr, *clock = nullptr;
  for (const auto& f : decode.factors) {
    if (f.id == "threads.little_cores") little = &f;
    if (f.id == "power.big_core_pinned") clock = &f;
  }
  ASSERT_NE(little, nullptr) << analysis::to_json(e).dump(1);
  ASSERT_NE(clock, nullptr) << analysis::to_json(e).dump(1);
  EXPECT_EQ(little->side, "B");
  EXPECT_LT(little->factor, 1.0);
  EXPECT_NE(little->fix.find("--cpu-strict 1"), std::string::npos) << little->fix;
  EXPECT_NEAR(clock->factor, 1593600.0 / 3187200.0, 1e-6);
  EXPECT_NE(clock->fix.find("scaling_max_freq"), std::string::npos) << clock->fix;
  // The table has a step per fix, each with the fix, and the product is the measured ratio.
  size_t with_fix = 0;
  for (const auto& s : decode.steps) with_fix += !s.fix.empty();
  EXPECT_GE(with_fix, 2u);
  double product = 1;
  for (const auto& f : decode.factors) product *= f.factor;
  EXPECT_NEAR(product, decode.ratio, 1e-12);
}
