#include "platform/isa_gap.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace edgeprobe::platform {
namespace {

const std::vector<std::string> kAvx512 = {"AVX512F", "AVX512CD", "AVX512VL", "AVX512DQ", "AVX512BW"};

// ggml's CMake feature words -> display names. "AVX512" is F+CD+VL+DQ+BW
// (ggml-cpu/arch/x86/cpu-feats.cpp checks all five).
std::vector<std::string> expand(const std::vector<std::string>& words) {
  std::vector<std::string> out;
  for (const auto& w : words) {
    if (w == "AVX512") {
      out.insert(out.end(), kAvx512.begin(), kAvx512.end());
    } else if (w == "SSE42") {
      out.insert(out.end(), {"SSE3", "SSSE3", "SSE4.2"});
    } else if (w == "FP16_VECTOR_ARITHMETIC") {
      out.push_back("FP16");
    } else if (w == "MATMUL_INT8") {
      out.push_back("I8MM");
    } else if (w == "AMX_INT8") {
      out.insert(out.end(), {"AMX_TILE", "AMX_INT8"});
    } else {
      out.push_back(w);
    }
  }
  return out;
}

// The score ggml_backend_score() adds per feature (research notes 3.3): x86 starts at 1,
// FMA 1, F16C 2, SSE42 4, BMI2 8, AVX 16, AVX2 32, AVX_VNNI 64, AVX512 128, VBMI 256,
// BF16 512, VNNI 1024, AMX_INT8 2048; arm starts at 1, DOTPROD 2, FP16 4, SVE 8, I8MM 16,
// SVE2 32, SME 64.
int score_of(const std::vector<std::string>& words) {
  static const std::map<std::string, int> kWeights = {
      {"FMA", 1}, {"F16C", 2}, {"SSE42", 4}, {"BMI2", 8}, {"AVX", 16}, {"AVX2", 32}, {"AVX_VNNI", 64},
      {"AVX512", 128}, {"AVX512_VBMI", 256}, {"AVX512_BF16", 512}, {"AVX512_VNNI", 1024}, {"AMX_INT8", 2048},
      {"DOTPROD", 2}, {"FP16_VECTOR_ARITHMETIC", 4}, {"SVE", 8}, {"MATMUL_INT8", 16}, {"SVE2", 32}, {"SME", 64}};
  int score = 1;
  for (const auto& w : words)
    if (auto it = kWeights.find(w); it != kWeights.end()) score += it->second;
  return score;
}

CpuVariant make(const char* name, const char* arch, std::vector<std::string> words) {
  return CpuVariant{name, arch, expand(words), score_of(words)};
}

// Feature names ggml_backend_get_features reports (ggml-cpu.cpp) -> display names.
std::vector<std::string> from_ggml_feature(const std::string& name) {
  if (name == "AVX512") return kAvx512;
  if (name == "FP16_VA") return {"FP16"};
  if (name == "MATMUL_INT8") return {"I8MM"};
  if (name == "AMX_INT8") return {"AMX_TILE", "AMX_INT8"};
  static const std::set<std::string> kSame = {"SSE3", "SSSE3", "AVX", "AVX_VNNI", "AVX2", "F16C", "FMA", "BMI2",
                                              "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16", "NEON", "DOTPROD",
                                              "SVE", "SME", "SME2"};
  if (kSame.count(name)) return {name};
  return {};
}

bool same_family(const std::string& loaded, const CpuVariant& v) {
  const bool loaded_android = loaded.rfind("android_", 0) == 0;
  const bool loaded_apple = loaded.rfind("apple_", 0) == 0;
  const bool v_android = v.name.rfind("android_", 0) == 0;
  const bool v_apple = v.name.rfind("apple_", 0) == 0;
  return loaded_android == v_android && loaded_apple == v_apple;
}

bool runs_on(const CpuVariant& v, const CpuFeatures& cpu) {
  return std::all_of(v.features.begin(), v.features.end(), [&](const std::string& f) { return cpu.has(f); });
}

}  // namespace

const std::vector<CpuVariant>& known_cpu_variants() {
  // ggml/src/CMakeLists.txt, ggml_add_cpu_backend_variant(...) calls at llama.cpp 80fb11a.
  static const std::vector<CpuVariant> kVariants = {
      make("x64", "x86_64", {}),
      make("sse42", "x86_64", {"SSE42"}),
      make("sandybridge", "x86_64", {"SSE42", "AVX"}),
      make("ivybridge", "x86_64", {"SSE42", "AVX", "F16C"}),
      make("piledriver", "x86_64", {"SSE42", "AVX", "F16C", "FMA"}),
      make("haswell", "x86_64", {"SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2"}),
      make("skylakex", "x86_64", {"SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512"}),
      make("cannonlake", "x86_64", {"SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VBMI"}),
      make("cascadelake", "x86_64", {"SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VNNI"}),
      make("icelake", "x86_64",
           {"SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VBMI", "AVX512_VNNI"}),
      make("cooperlake", "x86_64",
           {"SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VNNI", "AVX512_BF16"}),
      make("zen4", "x86_64",
           {"SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16"}),
      make("alderlake", "x86_64", {"SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX_VNNI"}),
      make("sapphirerapids", "x86_64",
           {"SSE42", "AVX", "F16C", "FMA", "AVX2", "BMI2", "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16",
            "AMX_TILE", "AMX_INT8"}),
      make("armv8.0_1", "aarch64", {}),
      make("armv8.2_1", "aarch64", {"DOTPROD"}),
      make("armv8.2_2", "aarch64", {"DOTPROD", "FP16_VECTOR_ARITHMETIC"}),
      make("armv8.2_3", "aarch64", {"DOTPROD", "FP16_VECTOR_ARITHMETIC", "SVE"}),
      make("armv8.6_1", "aarch64", {"DOTPROD", "FP16_VECTOR_ARITHMETIC", "SVE", "MATMUL_INT8"}),
      make("armv8.6_2", "aarch64", {"DOTPROD", "FP16_VECTOR_ARITHMETIC", "SVE", "MATMUL_INT8", "SVE2"}),
      make("armv9.2_1", "aarch64", {"DOTPROD", "FP16_VECTOR_ARITHMETIC", "SVE", "MATMUL_INT8", "SME"}),
      make("armv9.2_2", "aarch64", {"DOTPROD", "FP16_VECTOR_ARITHMETIC", "SVE", "MATMUL_INT8", "SVE2", "SME"}),
      make("android_armv8.0_1", "aarch64", {}),
      make("android_armv8.2_1", "aarch64", {"DOTPROD"}),
      make("android_armv8.2_2", "aarch64", {"DOTPROD", "FP16_VECTOR_ARITHMETIC"}),
      make("android_armv8.6_1", "aarch64", {"DOTPROD", "FP16_VECTOR_ARITHMETIC", "MATMUL_INT8"}),
      make("android_armv9.0_1", "aarch64", {"DOTPROD", "MATMUL_INT8", "FP16_VECTOR_ARITHMETIC", "SVE2"}),
      make("android_armv9.2_1", "aarch64", {"DOTPROD", "MATMUL_INT8", "FP16_VECTOR_ARITHMETIC", "SVE", "SME"}),
      make("android_armv9.2_2", "aarch64",
           {"DOTPROD", "MATMUL_INT8", "FP16_VECTOR_ARITHMETIC", "SVE", "SVE2", "SME"}),
      make("apple_m1", "aarch64", {"DOTPROD"}),
      make("apple_m2_m3", "aarch64", {"DOTPROD", "MATMUL_INT8"}),
      make("apple_m4", "aarch64", {"DOTPROD", "MATMUL_INT8", "SME"}),
  };
  return kVariants;
}

IsaGap compare_isa(const CpuFeatures& cpu, const engine::CpuBackendInfo& backend,
                   const std::vector<std::string>& installed) {
  IsaGap gap;
  gap.loaded_variant = backend.variant;
  gap.library_path = backend.library_path;

  // Features any ggml variant of this arch can use: the gap is only about these (AMX_BF16
  // or SHA would be noise).
  std::set<std::string> relevant;
  for (const auto& v : known_cpu_variants())
    if (v.arch == cpu.arch) relevant.insert(v.features.begin(), v.features.end());
  if (cpu.arch == "aarch64") relevant.insert("NEON");

  std::set<std::string> compiled;
  const CpuVariant* loaded = nullptr;
  for (const auto& v : known_cpu_variants())
    if (v.name == backend.variant) loaded = &v;
  if (loaded) {
    compiled.insert(loaded->features.begin(), loaded->features.end());
    gap.loaded_score = loaded->score;
  }
  for (const auto& [name, value] : backend.features)
    if (value != "0")
      for (const auto& f : from_ggml_feature(name)) compiled.insert(f);

  for (const auto& [name, on] : cpu.named) {
    if (!on || !relevant.count(name)) continue;
    gap.cpu_features.push_back(name);
    if (!compiled.count(name)) gap.unused_features.push_back(name);
  }
  for (const auto& [name, on] : cpu.named)
    if (compiled.count(name)) gap.compiled_features.push_back(name);

  const std::set<std::string> installed_set(installed.begin(), installed.end());
  // A variant whose kernel faulted here when the engine tested it is not one this CPU can
  // run, whatever CPUID says.
  auto passed_over = [&](const CpuVariant& v) {
    return std::any_of(backend.passed_over.begin(), backend.passed_over.end(),
                       [&](const std::string& p) { return p.rfind(v.name + " ", 0) == 0; });
  };
  for (const auto& v : known_cpu_variants()) {
    if (v.arch != cpu.arch || !same_family(backend.variant, v) || !runs_on(v, cpu) || passed_over(v)) continue;
    if (v.score > gap.best_score) {
      gap.best_score = v.score;
      gap.best_variant = v.name;
    }
    if (installed_set.count(v.name)) {
      const int best_installed_score = [&] {
        for (const auto& w : known_cpu_variants())
          if (w.name == gap.best_installed_variant) return w.score;
        return 0;
      }();
      if (v.score > best_installed_score) gap.best_installed_variant = v.name;
    }
  }
  gap.fallback = loaded && gap.best_score > gap.loaded_score;

  std::string unused;
  for (const auto& f : gap.unused_features) unused += (unused.empty() ? "" : " ") + f;
  if (backend.variant.empty() && backend.library_path.empty()) {
    gap.summary = "no ggml CPU variant loaded: cannot compare";
  } else if (!loaded) {
    gap.summary = fmt::format("loaded variant '{}' is not in edgeprobe's table; CPU features unused by it: {}",
                              backend.variant, unused.empty() ? "none" : unused);
  } else if (gap.fallback) {
    gap.summary = fmt::format("FALLBACK: loaded '{}' (score {}) but this CPU can run '{}' (score {}); unused: {}",
                              backend.variant, gap.loaded_score, gap.best_variant, gap.best_score,
                              unused.empty() ? "none" : unused);
  } else {
    gap.summary = fmt::format("loaded '{}' is the best variant for this CPU{}", backend.variant,
                              unused.empty() ? "" : " (CPU features no variant uses: " + unused + ")");
  }
  return gap;
}

nlohmann::json to_json(const IsaGap& gap) {
  return {{"loaded_variant", gap.loaded_variant},
          {"library_path", gap.library_path},
          {"loaded_score", gap.loaded_score},
          {"cpu_features", gap.cpu_features},
          {"compiled_features", gap.compiled_features},
          {"unused_features", gap.unused_features},
          {"best_variant", gap.best_variant},
          {"best_score", gap.best_score},
          {"best_installed_variant", gap.best_installed_variant},
          {"fallback", gap.fallback},
          {"summary", gap.summary}};
}

}  // namespace edgeprobe::platform
