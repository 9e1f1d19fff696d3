#include "platform/cpu_features.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
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
  // HWCAP follows the CPU the kernel (or qemu-user's -cpu) gives this process; /proc/cpuinfo
  // can describe another machine under emulation, so it is not consulted for features.
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

std::string emulation_sign(const std::string& binary_arch, const std::string& host_cpuinfo,
                           const char* marker_env, const std::set<std::string>& hwcap_flags) {
  if (marker_env && *marker_env && std::string(marker_env) != "0")
    return "EDGEPROBE_EMULATED is set";
  const bool host_x86 = !cpuinfo_value(host_cpuinfo, "vendor_id").empty() ||
                        !cpuinfo_value(host_cpuinfo, "flags").empty();
  const bool host_arm = !cpuinfo_value(host_cpuinfo, "CPU implementer").empty() ||
                        !cpuinfo_value(host_cpuinfo, "Features").empty();
  if (binary_arch == "aarch64" && host_x86) return "/proc/cpuinfo describes an x86 host (qemu-user)";
  if (binary_arch == "x86_64" && host_arm && !host_x86) return "/proc/cpuinfo describes an Arm host";
  // Arm on Arm: the kernel prints the same system-wide capabilities in /proc/cpuinfo as it
  // puts in this process's HWCAP, so a disagreement means something else (qemu-user's
  // -cpu) chose the HWCAP. Only AT_HWCAP bits every arm64 header defines are compared (an
  // HWCAP2 bit an older header lacks would read as absent).
  const std::string arm_features = cpuinfo_value(host_cpuinfo, "Features");
  if (binary_arch == "aarch64" && !hwcap_flags.empty() && !arm_features.empty()) {
    const auto host_flags = split_words(arm_features);
    for (const char* flag : {"asimd", "asimdhp", "asimddp", "sve"}) {
      const bool in_hwcap = hwcap_flags.count(flag) > 0, in_cpuinfo = host_flags.count(flag) > 0;
      if (in_hwcap != in_cpuinfo)
        return fmt::format("HWCAP and /proc/cpuinfo disagree on '{}' (HWCAP {}, cpuinfo {}): qemu-user's CPU, not the host's", flag,
                           in_hwcap ? "has it" : "lacks it", in_cpuinfo ? "has it" : "lacks it");
    }
  }
  return "";
}

std::string emulation_warning(const CpuFeatures& features) {
  if (!features.emulated) return "";
  return fmt::format("running under emulation ({}); timings are not the performance of any device",
                     features.emulation_sign);
}

CpuFeatures detect_cpu_features(const FsRoot& fs) {
  if (fs.root() == "/") {
#if defined(__x86_64__) || (defined(__aarch64__) && defined(__linux__))
#if defined(__x86_64__)
    CpuFeatures live = live_x86();
#else
    CpuFeatures live = live_arm();
#endif
    const auto host = fs.read_text("/proc/cpuinfo");
    live.emulation_sign = emulation_sign(live.arch, host.value_or(""), std::getenv("EDGEPROBE_EMULATED"),
                                         live.arch == "aarch64" ? live.raw_flags : std::set<std::string>{});
    live.emulated = !live.emulation_sign.empty();
    return live;
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
#if defined(__aarch64__)
  return cpu_model_from_cpuinfo(*text, "aarch64");
#else
  return cpu_model_from_cpuinfo(*text, "");
#endif
}

std::string cpu_model_from_cpuinfo(const std::string& text, const std::string& arch) {
  for (const char* key : {"model name", "Hardware", "Model"}) {
    auto value = cpuinfo_value(text, key);
    // qemu-user shows the host's cpuinfo: do not let it pass for the emulated CPU (the
    // same decision as emulation_sign's).
    if (!value.empty() && arch == "aarch64" && !emulation_sign("aarch64", text, nullptr).empty())
      return value + " (x86 host, emulated aarch64)";
    if (!value.empty()) return value;
  }
  // arm64 cpuinfo has only MIDR fields: name the cores from them.
  const auto cores = arm_core_summary(text);
  return cores.empty() ? "unknown" : cores;
}

std::string arm_core_name(unsigned implementer, unsigned part) {
  struct Part {
    unsigned implementer, part;
    const char* name;
  };
  static constexpr Part kParts[] = {
      {0x41, 0xd03, "Cortex-A53"},  {0x41, 0xd04, "Cortex-A35"},  {0x41, 0xd05, "Cortex-A55"},
      {0x41, 0xd07, "Cortex-A57"},  {0x41, 0xd08, "Cortex-A72"},  {0x41, 0xd09, "Cortex-A73"},
      {0x41, 0xd0a, "Cortex-A75"},  {0x41, 0xd0b, "Cortex-A76"},  {0x41, 0xd0c, "Neoverse-N1"},
      {0x41, 0xd0d, "Cortex-A77"},  {0x41, 0xd40, "Neoverse-V1"}, {0x41, 0xd41, "Cortex-A78"},
      {0x41, 0xd44, "Cortex-X1"},   {0x41, 0xd46, "Cortex-A510"}, {0x41, 0xd47, "Cortex-A710"},
      {0x41, 0xd48, "Cortex-X2"},   {0x41, 0xd49, "Neoverse-N2"}, {0x41, 0xd4b, "Cortex-A78C"},
      {0x41, 0xd4d, "Cortex-A715"}, {0x41, 0xd4e, "Cortex-X3"},   {0x41, 0xd4f, "Neoverse-V2"},
      {0x41, 0xd80, "Cortex-A520"}, {0x41, 0xd81, "Cortex-A720"}, {0x41, 0xd82, "Cortex-X4"},
      {0x4e, 0x004, "NVIDIA Carmel"}, {0x51, 0x802, "Kryo 3xx Gold"}, {0x51, 0x803, "Kryo 3xx Silver"},
      {0x51, 0x804, "Kryo 4xx Gold"}, {0x51, 0x805, "Kryo 4xx Silver"},
  };
  for (const auto& p : kParts)
    if (p.implementer == implementer && p.part == part) return p.name;
  return "";
}

std::string arm_core_summary(const std::string& text) {
  // Each processor block has its own "CPU implementer" and "CPU part" lines, in that order.
  std::vector<std::pair<std::string, int>> counts;
  std::istringstream in(text);
  std::string line;
  unsigned implementer = 0;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    const std::string value = trim(line.substr(colon + 1));
    if (key == "CPU implementer") implementer = static_cast<unsigned>(std::strtoul(value.c_str(), nullptr, 0));
    if (key != "CPU part") continue;
    const auto part = static_cast<unsigned>(std::strtoul(value.c_str(), nullptr, 0));
    std::string name = arm_core_name(implementer, part);
    if (name.empty()) name = fmt::format("Arm implementer {:#04x} part {:#05x}", implementer, part);
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == name; });
    if (it == counts.end()) counts.emplace_back(name, 1);
    else ++it->second;
  }
  std::string out;
  for (const auto& [name, n] : counts) out += fmt::format("{}{}x {}", out.empty() ? "" : " + ", n, name);
  return out;
}

nlohmann::json to_json(const CpuFeatures& features) {
  nlohmann::json named = nlohmann::json::object();
  for (const auto& [name, on] : features.named) named[name] = on;
  nlohmann::json j = {{"arch", features.arch}, {"source", features.source}, {"features", named},
                      {"present", features.present()}};
  if (features.emulated) j["emulated"] = features.emulation_sign;
  return j;
}

}  // namespace edgeprobe::platform
