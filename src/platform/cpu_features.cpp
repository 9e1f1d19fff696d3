#include "platform/cpu_features.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>
#include <sstream>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace edgeprobe::platform {
namespace {

struct NameMap {
  const char* display;
  const char* kernel;  // spelling in /proc/cpuinfo
};

// x86: the kernel's flag names (arch/x86/include/asm/cpufeatures.h); the set is what
// ggml's x86 variants are built from (ggml/src/CMakeLists.txt, research notes 3.2) plus
// the AVX-512 sub-extensions a skylakex+ variant needs.
constexpr NameMap kX86[] = {
    {"SSE3", "pni"},           {"SSSE3", "ssse3"},          {"SSE4.2", "sse4_2"},
    {"AVX", "avx"},            {"F16C", "f16c"},            {"FMA", "fma"},
    {"BMI2", "bmi2"},          {"AVX2", "avx2"},            {"AVX_VNNI", "avx_vnni"},
    {"AVX512F", "avx512f"},    {"AVX512CD", "avx512cd"},    {"AVX512VL", "avx512vl"},
    {"AVX512DQ", "avx512dq"},  {"AVX512BW", "avx512bw"},    {"AVX512_VBMI", "avx512vbmi"},
    {"AVX512_VNNI", "avx512_vnni"}, {"AVX512_BF16", "avx512_bf16"}, {"AMX_TILE", "amx_tile"},
    {"AMX_INT8", "amx_int8"},  {"AMX_BF16", "amx_bf16"},
};

// arm64: the "Features" names (Documentation/arch/arm64/elf_hwcaps.rst). FP16 here is
// FP16 vector arithmetic (asimdhp), which is what ggml's FP16_VA means.
constexpr NameMap kArm[] = {
    {"NEON", "asimd"}, {"FP16", "asimdhp"}, {"DOTPROD", "asimddp"}, {"I8MM", "i8mm"},
    {"BF16", "bf16"},  {"SVE", "sve"},      {"SVE2", "sve2"},       {"SME", "sme"},
    {"SME2", "sme2"},
};

template <size_t N>
std::vector<std::pair<std::string, bool>> from_flags(const NameMap (&table)[N],
                                                     const std::set<std::string>& flags) {
  std::vector<std::pair<std::string, bool>> out;
  for (const auto& entry : table) out.emplace_back(entry.display, flags.count(entry.kernel) > 0);
  return out;
}

std::string trim(std::string s) {
  const auto not_space = [](unsigned char c) { return !std::isspace(c); };
  s.erase(s.begin(), std::find_if(s.begin(), s.end(), not_space));
  s.erase(std::find_if(s.rbegin(), s.rend(), not_space).base(), s.end());
  return s;
}

// First "key : value" line of /proc/cpuinfo with that key (keys are tab padded).
std::string cpuinfo_value(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (trim(line.substr(0, colon)) == key) return trim(line.substr(colon + 1));
  }
  return "";
}

std::set<std::string> split_words(const std::string& text) {
  std::set<std::string> words;
  std::istringstream in(text);
  std::string word;
  while (in >> word) words.insert(word);
  return words;
}

#if defined(__x86_64__) || defined(__i386__)
CpuFeatures live_x86() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  bool f[sizeof(kX86) / sizeof(kX86[0])] = {};
  auto set = [&](const char* name, bool value) {
    for (size_t i = 0; i < std::size(kX86); ++i)
      if (std::string(kX86[i].display) == name) f[i] = value;
  };
  unsigned max_leaf = __get_cpuid_max(0, nullptr);
  unsigned ecx1 = 0, ebx7 = 0, ecx7 = 0, edx7 = 0, eax71 = 0;
  if (__get_cpuid(1, &a, &b, &c, &d)) ecx1 = c;
  if (max_leaf >= 7 && __get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    ebx7 = b;
    ecx7 = c;
    edx7 = d;
    if (a >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) eax71 = a;
  }
  // A feature is usable only if the OS saves its registers: XCR0 bits 1-2 (SSE/AVX state),
  // 5-7 (AVX-512 opmask/ZMM), 17-18 (AMX tiles) (Intel SDM vol. 1, 13.3).
  uint64_t xcr0 = 0;
  if (ecx1 & (1u << 27)) {  // OSXSAVE
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<uint64_t>(hi) << 32) | lo;
  }
  const bool os_avx = (xcr0 & 0x6) == 0x6;
  const bool os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;
  const bool os_amx = (xcr0 & 0x60000) == 0x60000;
  auto bit = [](unsigned reg, int n) { return (reg >> n) & 1u; };
  set("SSE3", bit(ecx1, 0));
  set("SSSE3", bit(ecx1, 9));
  set("SSE4.2", bit(ecx1, 20));
  set("AVX", os_avx && bit(ecx1, 28));
  set("F16C", os_avx && bit(ecx1, 29));
  set("FMA", os_avx && bit(ecx1, 12));
  set("BMI2", bit(ebx7, 8));
  set("AVX2", os_avx && bit(ebx7, 5));
  set("AVX_VNNI", os_avx && bit(eax71, 4));
  set("AVX512F", os_avx512 && bit(ebx7, 16));
  set("AVX512DQ", os_avx512 && bit(ebx7, 17));
  set("AVX512CD", os_avx512 && bit(ebx7, 28));
  set("AVX512BW", os_avx512 && bit(ebx7, 30));
  set("AVX512VL", os_avx512 && bit(ebx7, 31));
  set("AVX512_VBMI", os_avx512 && bit(ecx7, 1));
  set("AVX512_VNNI", os_avx512 && bit(ecx7, 11));
  set("AVX512_BF16", os_avx512 && bit(eax71, 5));
  set("AMX_BF16", os_amx && bit(edx7, 22));
  set("AMX_TILE", os_amx && bit(edx7, 24));
  set("AMX_INT8", os_amx && bit(edx7, 25));
  CpuFeatures out;
  out.arch = "x86_64";
  out.source = "cpuid+xgetbv";
  for (size_t i = 0; i < std::size(kX86); ++i) out.named.emplace_back(kX86[i].display, f[i]);
  return out;
}
#endif

#if defined(__aarch64__) && defined(__linux__)
CpuFeatures live_arm() {
  const unsigned long hw = getauxval(AT_HWCAP);
  const unsigned long hw2 = getauxval(AT_HWCAP2);
  std::set<std::string> flags;
  // Bit names from arch/arm64/include/uapi/asm/hwcap.h; guarded for older headers.
  if (hw & HWCAP_ASIMD) flags.insert("asimd");
  if (hw & HWCAP_ASIMDHP) flags.insert("asimdhp");
  if (hw & HWCAP_ASIMDDP) flags.insert("asimddp");
  if (hw & HWCAP_SVE) flags.insert("sve");
#ifdef HWCAP2_SVE2
  if (hw2 & HWCAP2_SVE2) flags.insert("sve2");
#endif
#ifdef HWCAP2_I8MM
  if (hw2 & HWCAP2_I8MM) flags.insert("i8mm");
#endif
#ifdef HWCAP2_BF16
  if (hw2 & HWCAP2_BF16) flags.insert("bf16");
#endif
#ifdef HWCAP2_SME
  if (hw2 & HWCAP2_SME) flags.insert("sme");
#endif
#ifdef HWCAP2_SME2
  if (hw2 & HWCAP2_SME2) flags.insert("sme2");
#endif
  CpuFeatures out;
  out.arch = "aarch64";
  out.source = "hwcap";
  out.named = from_flags(kArm, flags);
  out.raw_flags = flags;
  return out;
}
#endif

}  // namespace

bool CpuFeatures::has(const std::string& display_name) const {
  for (const auto& [name, present] : named)
    if (name == display_name) return present;
  return false;
}

std::vector<std::string> CpuFeatures::present() const {
  std::vector<std::string> out;
  for (const auto& [name, on] : named)
    if (on) out.push_back(name);
  return out;
}

CpuFeatures parse_cpuinfo_features(const std::string& text, const std::string& arch_hint) {
  CpuFeatures out;
  out.source = "/proc/cpuinfo";
  const std::string x86_flags = cpuinfo_value(text, "flags");
  const std::string arm_features = cpuinfo_value(text, "Features");
  std::string arch = arch_hint;
  if (arch.empty()) arch = !x86_flags.empty() ? "x86_64" : !arm_features.empty() ? "aarch64" : "unknown";
  out.arch = arch;
  if (arch == "x86_64") {
    out.raw_flags = split_words(x86_flags);
    out.named = from_flags(kX86, out.raw_flags);
  } else if (arch == "aarch64") {
    out.raw_flags = split_words(arm_features);
    out.named = from_flags(kArm, out.raw_flags);
  }
  return out;
}

CpuFeatures detect_cpu_features(const FsRoot& fs) {
  if (fs.root() == "/") {
#if defined(__x86_64__)
    return live_x86();
#elif defined(__aarch64__) && defined(__linux__)
    return live_arm();
#endif
  }
  const auto text = fs.read_text("/proc/cpuinfo");
  if (!text) {
    CpuFeatures out;
    out.arch = "unknown";
    out.source = "unavailable: /proc/cpuinfo " + fs.last_error();
    return out;
  }
  return parse_cpuinfo_features(*text);
}

std::string cpu_model_name(const FsRoot& fs) {
  const auto text = fs.read_text("/proc/cpuinfo");
  if (!text) return "unknown";
  for (const char* key : {"model name", "Hardware", "Model"}) {
    auto value = cpuinfo_value(*text, key);
    if (!value.empty()) return value;
  }
  // arm64 cpuinfo has only MIDR fields: name the implementer and part numerically.
  const auto implementer = cpuinfo_value(*text, "CPU implementer");
  const auto part = cpuinfo_value(*text, "CPU part");
  if (!implementer.empty()) return fmt::format("Arm implementer {} part {}", implementer, part);
  return "unknown";
}

nlohmann::json to_json(const CpuFeatures& features) {
  nlohmann::json named = nlohmann::json::object();
  for (const auto& [name, on] : features.named) named[name] = on;
  return {{"arch", features.arch}, {"source", features.source}, {"features", named},
          {"present", features.present()}};
}

std::string to_text(const CpuFeatures& features) {
  std::string absent;
  for (const auto& [name, on] : features.named)
    if (!on) absent += (absent.empty() ? "" : " ") + name;
  std::string present;
  for (const auto& name : features.present()) present += (present.empty() ? "" : " ") + name;
  return fmt::format("CPU features ({}, {}): {}\n  absent: {}\n", features.arch, features.source,
                     present.empty() ? "none" : present, absent.empty() ? "none" : absent);
}

}  // namespace edgeprobe::platform
