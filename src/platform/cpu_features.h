#pragma once
#include <nlohmann/json_fwd.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/fs.h"

namespace edgeprobe::platform {

// What the CPU can execute at run time, as opposed to what the loaded ggml CPU variant was
// compiled for (see isa_gap.h). Feature names are edgeprobe's display names ("AVX2",
// "AVX512_VNNI", "DOTPROD"); raw_flags keeps the kernel's spellings for the record.
struct CpuFeatures {
  std::string arch;    // "x86_64", "aarch64", or what uname/cpuinfo says
  std::string source;  // "cpuid+xgetbv", "hwcap", "/proc/cpuinfo"
  // The inference-relevant features in a fixed order for the arch, each with presence.
  std::vector<std::pair<std::string, bool>> named;
  std::set<std::string> raw_flags;  // kernel spellings from /proc/cpuinfo (empty for cpuid)
  // Running under a user-mode emulator (qemu-user): features are the emulated CPU's, but
  // timings say nothing about any real device. `emulation_sign` says how we know.
  bool emulated = false;
  std::string emulation_sign;

  bool has(const std::string& display_name) const;
  std::vector<std::string> present() const;  // display names that are present, in order
};

// "model name" (x86), or "Hardware" on Arm, else the Arm core types from the MIDR fields
// ("4x Cortex-A55 + 3x Cortex-A78 + 1x Cortex-X1"); "unknown" if none.
std::string cpu_model_name(const FsRoot& fs);
// The same rule on cpuinfo text from a device whose uname machine is `arch` (the lab reads
// it over ssh or adb): an aarch64 device whose cpuinfo describes an x86 host is qemu-user.
std::string cpu_model_from_cpuinfo(const std::string& cpuinfo_text, const std::string& arch);

// The core a MIDR implementer/part pair names (Linux arch/arm64/include/asm/cputype.h):
// "Cortex-A76" for 0x41/0xd0b; "" when edgeprobe does not know it.
std::string arm_core_name(unsigned implementer, unsigned part);
// The core types of an arm64 /proc/cpuinfo with counts, in order of first appearance;
// unknown parts are named numerically. "" when the text has no MIDR fields.
std::string arm_core_summary(const std::string& cpuinfo_text);

// On the live machine (root "/") x86 uses cpuid with the OS's XCR0 state (a feature the
// kernel does not save registers for is unusable), Arm uses getauxval(AT_HWCAP/AT_HWCAP2).
// Under any other root (fixtures) the features come from <root>/proc/cpuinfo.
CpuFeatures detect_cpu_features(const FsRoot& fs);

// Parses /proc/cpuinfo text: x86 "flags" line or Arm "Features" line. `arch_hint` picks
// the name table when the text does not say ("" = infer from the text).
CpuFeatures parse_cpuinfo_features(const std::string& cpuinfo_text, const std::string& arch_hint = "");

// Signs that this process is emulated: "" when none. The one place edgeprobe decides it;
// the signs, in order:
//  - the marker EDGEPROBE_EMULATED (not "0"), passed by the caller as `marker_env`, for an
//    emulator that shows no other sign;
//  - qemu-user passes the host's /proc/cpuinfo through, so an aarch64 binary that reads an
//    x86 cpuinfo (or the reverse) is not on the CPU it reports;
//  - Arm on Arm: `hwcap_flags` (this process's AT_HWCAP, kernel spellings) disagree with the
//    host cpuinfo's Features on asimd, asimdhp, asimddp or sve: qemu's -cpu set the HWCAP.
std::string emulation_sign(const std::string& binary_arch, const std::string& host_cpuinfo,
                           const char* marker_env, const std::set<std::string>& hwcap_flags = {});
// One line for the user when `features.emulated`; "" otherwise.
std::string emulation_warning(const CpuFeatures& features);

nlohmann::json to_json(const CpuFeatures& features);

}  // namespace edgeprobe::platform
