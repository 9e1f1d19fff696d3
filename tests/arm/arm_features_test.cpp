// Arm CPU knowledge that needs no Arm machine: HWCAP-style feature names from cpuinfo text,
// MIDR part numbers to core names, the dotprod gap of a baseline variant, and the signs of
// running under qemu-user.
#include <gtest/gtest.h>

#include <algorithm>

#include "platform/cpu_features.h"
#include "platform/isa_gap.h"

namespace edgeprobe::platform {
namespace {

// A Cortex-A76 (dotprod, fp16 arithmetic, no SVE) as its kernel lists it.
constexpr const char* kA76Features =
    "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\n";

std::string processor(int n, const char* part) {
  return "processor\t: " + std::to_string(n) + "\n" + kA76Features +
         "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x1\nCPU part\t: " + part + "\n\n";
}

TEST(ArmFeatures, CpuinfoFeaturesMapToEdgeprobeNames) {
  const CpuFeatures f = parse_cpuinfo_features(kA76Features);
  EXPECT_EQ(f.arch, "aarch64");
  EXPECT_TRUE(f.has("NEON"));
  EXPECT_TRUE(f.has("FP16"));
  EXPECT_TRUE(f.has("DOTPROD"));
  EXPECT_FALSE(f.has("I8MM"));
  EXPECT_FALSE(f.has("SVE"));
}

TEST(ArmFeatures, BaselineVariantOnADotprodCpuIsAFallbackToArmv82) {
  const CpuFeatures cpu = parse_cpuinfo_features(kA76Features);
  engine::CpuBackendInfo loaded;
  loaded.variant = "armv8.0_1";
  loaded.library_path = "lib/libggml-cpu-armv8.0_1.so";
  loaded.features = {{"NEON", "1"}, {"ARM_FMA", "1"}};
  const IsaGap gap = compare_isa(cpu, loaded, {"armv8.0_1", "armv8.2_1", "armv8.2_2", "armv8.6_2"});
  EXPECT_TRUE(gap.fallback);
  EXPECT_EQ(gap.best_variant, "armv8.2_2");
  EXPECT_EQ(gap.best_installed_variant, "armv8.2_2");
  EXPECT_NE(std::find(gap.unused_features.begin(), gap.unused_features.end(), "DOTPROD"), gap.unused_features.end());
  EXPECT_NE(std::find(gap.unused_features.begin(), gap.unused_features.end(), "FP16"), gap.unused_features.end());
  EXPECT_EQ(std::find(gap.unused_features.begin(), gap.unused_features.end(), "NEON"), gap.unused_features.end());
}

TEST(ArmFeatures, DotprodVariantOnTheSameCpuIsNoFallback) {
  engine::CpuBackendInfo loaded;
  loaded.variant = "armv8.2_2";
  loaded.features = {{"NEON", "1"}, {"DOTPROD", "1"}, {"FP16_VA", "1"}};
  const IsaGap gap = compare_isa(parse_cpuinfo_features(kA76Features), loaded);
  EXPECT_FALSE(gap.fallback);
  EXPECT_TRUE(gap.unused_features.empty());
}

TEST(ArmFeatures, MidrPartsNameTheCoreTypesOfABigLittlePhone) {
  std::string text;
  int n = 0;
  for (int i = 0; i < 4; ++i) text += processor(n++, "0xd46");
  for (int i = 0; i < 3; ++i) text += processor(n++, "0xd47");
  text += processor(n++, "0xd48");
  EXPECT_EQ(arm_core_summary(text), "4x Cortex-A510 + 3x Cortex-A710 + 1x Cortex-X2");
  EXPECT_EQ(arm_core_name(0x41, 0xd0b), "Cortex-A76");
  EXPECT_EQ(arm_core_name(0x41, 0xfff), "");
}

TEST(ArmFeatures, UnknownPartsAreNamedByNumberAndX86TextHasNoCores) {
  EXPECT_EQ(arm_core_summary(processor(0, "0xabc")), "1x Arm implementer 0x41 part 0xabc");
  EXPECT_EQ(arm_core_summary("processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t: fpu sse2\n"), "");
}

TEST(ArmFeatures, EmulationIsSeenFromAForeignCpuinfoOrTheMarker) {
  const std::string x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu sse2 avx2\n";
  EXPECT_NE(emulation_sign("aarch64", x86, nullptr), "");
  EXPECT_EQ(emulation_sign("aarch64", processor(0, "0xd0b"), nullptr), "");
  EXPECT_EQ(emulation_sign("x86_64", x86, nullptr), "");
  EXPECT_EQ(emulation_sign("x86_64", x86, "1"), "EDGEPROBE_EMULATED is set");
  EXPECT_EQ(emulation_sign("x86_64", x86, "0"), "");
  // Arm on Arm: the host kernel's cpuinfo is an A76, HWCAP is what qemu's -cpu gave.
  const std::string a76 = processor(0, "0xd0b");
  EXPECT_EQ(emulation_sign("aarch64", a76, nullptr, {"asimd", "asimdhp", "asimddp"}), "");
  const std::string a53_hwcap = emulation_sign("aarch64", a76, nullptr, {"asimd"});
  EXPECT_NE(a53_hwcap.find("HWCAP and /proc/cpuinfo disagree on 'asimdhp'"), std::string::npos) << a53_hwcap;
  // An HWCAP2 feature (read only where the headers name it) is never a sign by itself.
  EXPECT_EQ(emulation_sign("aarch64", a76, nullptr, {"asimd", "asimdhp", "asimddp", "i8mm"}), "");
  CpuFeatures f;
  EXPECT_EQ(emulation_warning(f), "");
  f.emulated = true;
  f.emulation_sign = emulation_sign("aarch64", x86, nullptr);
  EXPECT_NE(emulation_warning(f).find("timings are not the performance"), std::string::npos);
}

}  // namespace
}  // namespace edgeprobe::platform
