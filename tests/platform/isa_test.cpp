// Run-time instruction sets (this machine's /proc/cpuinfo, fixture cpuinfo files) and the
// gap to what a ggml CPU variant was compiled with.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "platform/cpu_features.h"
#include "platform/isa_gap.h"
#include "support/sysfs_fixtures.h"

namespace edgeprobe::platform {
namespace {

engine::CpuBackendInfo backend(const std::string& variant, std::vector<std::pair<std::string, std::string>> features = {}) {
  engine::CpuBackendInfo b;
  b.variant = variant;
  b.library_path = "/opt/llama/bin/libggml-cpu-" + variant + ".so";
  b.features = std::move(features);
  return b;
}

TEST(Isa, LiveDetectionAgreesWithThisMachinesProcCpuinfo) {
  const FsRoot root("/");
  const auto cpuinfo = root.read_text("/proc/cpuinfo");
  ASSERT_TRUE(cpuinfo.has_value());
  const CpuFeatures from_kernel = parse_cpuinfo_features(*cpuinfo);
  const CpuFeatures live = detect_cpu_features(root);
  if (live.source == "/proc/cpuinfo") GTEST_SKIP() << "no live detector for " << live.arch;
  ASSERT_EQ(live.named.size(), from_kernel.named.size());
  for (size_t i = 0; i < live.named.size(); ++i) {
    EXPECT_EQ(live.named[i].first, from_kernel.named[i].first);
    EXPECT_EQ(live.named[i].second, from_kernel.named[i].second)
        << live.named[i].first << ": " << live.source << " says " << live.named[i].second << ", /proc/cpuinfo says "
        << from_kernel.named[i].second;
  }
}

TEST(Isa, ArmFeaturesLineOfAPhoneWithoutSveIsRead) {
  const CpuFeatures f = detect_cpu_features(test_support::sysfs_fixture_root("phone-1-3-4"));
  EXPECT_EQ(f.arch, "aarch64");
  EXPECT_EQ(f.source, "/proc/cpuinfo");
  for (const char* on : {"NEON", "FP16", "DOTPROD", "I8MM", "BF16"}) EXPECT_TRUE(f.has(on)) << on;
  for (const char* off : {"SVE", "SVE2", "SME"}) EXPECT_FALSE(f.has(off)) << off;
  EXPECT_EQ(cpu_model_name(test_support::sysfs_fixture_root("phone-1-3-4")), "Qualcomm Technologies, Inc SM8450");
}

TEST(Isa, PhoneOnALowerAndroidVariantShowsTheFallbackAndTheBestVariant) {
  const CpuFeatures f = detect_cpu_features(test_support::sysfs_fixture_root("phone-1-3-4"));
  const IsaGap gap = compare_isa(f, backend("android_armv8.2_1", {{"NEON", "1"}, {"DOTPROD", "1"}}));
  EXPECT_TRUE(gap.fallback);
  EXPECT_EQ(gap.best_variant, "android_armv8.6_1");
  EXPECT_EQ(gap.unused_features, (std::vector<std::string>{"FP16", "I8MM"}));
}

TEST(Isa, HybridLaptopOnHaswellMissesAvxVnniAndShouldLoadAlderlake) {
  const CpuFeatures f = detect_cpu_features(test_support::sysfs_fixture_root("intel-hybrid-laptop"));
  EXPECT_TRUE(f.has("AVX_VNNI"));
  EXPECT_FALSE(f.has("AVX512F"));
  const IsaGap gap = compare_isa(f, backend("haswell", {{"AVX", "1"}, {"AVX2", "1"}, {"FMA", "1"}, {"F16C", "1"}}),
                                 {"x64", "sse42", "haswell"});
  EXPECT_TRUE(gap.fallback);
  EXPECT_EQ(gap.best_variant, "alderlake");
  EXPECT_EQ(gap.best_installed_variant, "haswell");
  EXPECT_EQ(gap.unused_features, (std::vector<std::string>{"AVX_VNNI"}));
  EXPECT_NE(gap.summary.find("FALLBACK"), std::string::npos);
}

TEST(Isa, ServerOnSse42LosesAvxThroughAvx512AndSkylakexIsBest) {
  const CpuFeatures f = detect_cpu_features(test_support::sysfs_fixture_root("server-2socket"));
  const IsaGap gap = compare_isa(f, backend("sse42", {{"SSE3", "1"}, {"SSSE3", "1"}}));
  EXPECT_TRUE(gap.fallback);
  EXPECT_EQ(gap.best_variant, "skylakex");
  EXPECT_EQ(gap.loaded_score, 5);
  EXPECT_EQ(gap.best_score, 192);
  for (const char* missing : {"AVX", "AVX2", "FMA", "F16C", "AVX512F", "AVX512BW"})
    EXPECT_NE(std::find(gap.unused_features.begin(), gap.unused_features.end(), missing), gap.unused_features.end())
        << missing;
}

TEST(Isa, BestVariantLoadedReportsNoFallback) {
  const CpuFeatures f = detect_cpu_features(test_support::sysfs_fixture_root("server-2socket"));
  const IsaGap gap = compare_isa(f, backend("skylakex", {{"AVX512", "1"}, {"AVX2", "1"}}));
  EXPECT_FALSE(gap.fallback);
  EXPECT_TRUE(gap.unused_features.empty());
  const auto j = to_json(gap);
  EXPECT_EQ(j["best_variant"], "skylakex");
  EXPECT_EQ(j["fallback"], false);
}

TEST(Isa, VariantScoresMatchGgmlsScoringTable) {
  // research notes 3.2: haswell 64, alderlake 128, zen4 1984, sapphirerapids 4032, armv9.2_2 127
  std::map<std::string, int> expected = {{"x64", 1},       {"haswell", 64},         {"alderlake", 128},
                                         {"zen4", 1984},   {"sapphirerapids", 4032}, {"armv9.2_2", 127},
                                         {"icelake", 1472}, {"armv8.6_1", 31}};
  for (const auto& v : known_cpu_variants()) {
    if (expected.count(v.name)) {
      EXPECT_EQ(v.score, expected[v.name]) << v.name;
    }
  }
}

}  // namespace
}  // namespace edgeprobe::platform
