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

  bool has(const std::string& display_name) const;
  std::vector<std::string> present() const;  // display names that are present, in order
};

// "model name" (x86), or "Hardware"/"CPU part" based description on Arm; "unknown" if none.
std::string cpu_model_name(const FsRoot& fs);

// On the live machine (root "/") x86 uses cpuid with the OS's XCR0 state (a feature the
// kernel does not save registers for is unusable), Arm uses getauxval(AT_HWCAP/AT_HWCAP2).
// Under any other root (fixtures) the features come from <root>/proc/cpuinfo.
CpuFeatures detect_cpu_features(const FsRoot& fs);

// Parses /proc/cpuinfo text: x86 "flags" line or Arm "Features" line. `arch_hint` picks
// the name table when the text does not say ("" = infer from the text).
CpuFeatures parse_cpuinfo_features(const std::string& cpuinfo_text, const std::string& arch_hint = "");

nlohmann::json to_json(const CpuFeatures& features);
std::string to_text(const CpuFeatures& features);

}  // namespace edgeprobe::platform
