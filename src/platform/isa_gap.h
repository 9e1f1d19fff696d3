#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "engine/backend.h"
#include "platform/cpu_features.h"

namespace edgeprobe::platform {

// One ggml CPU backend variant as ggml/src/CMakeLists.txt builds it (llama.cpp 80fb11a;
// research notes 3.2), with the score its ggml_backend_score() would give on a CPU that
// has every feature (3.3). Feature names are CpuFeatures display names.
struct CpuVariant {
  std::string name;
  std::string arch;  // "x86_64", "aarch64"
  std::vector<std::string> features;
  int score = 0;
};
const std::vector<CpuVariant>& known_cpu_variants();

// The seed's silent fallback made visible: what the CPU can do next to what the loaded
// variant was compiled for.
struct IsaGap {
  std::string loaded_variant;       // "" for a static (non-DL) build
  std::string library_path;
  int loaded_score = 0;             // 0 when the variant is not in the table
  std::vector<std::string> cpu_features;       // inference-relevant features the CPU has
  std::vector<std::string> compiled_features;  // what the loaded variant was built with
  std::vector<std::string> unused_features;    // CPU has, variant lacks: the gap
  std::string best_variant;          // highest-scoring variant this CPU can run
  int best_score = 0;
  std::string best_installed_variant;  // the same, among the installed ones ("" when none given)
  bool fallback = false;             // a better variant exists for this CPU than the loaded one
  std::string summary;               // one line for humans
};

// `installed` (optional): variant names present in the backend dir, to name the best one
// that could actually be loaded here.
IsaGap compare_isa(const CpuFeatures& cpu, const engine::CpuBackendInfo& backend,
                   const std::vector<std::string>& installed = {});

nlohmann::json to_json(const IsaGap& gap);

}  // namespace edgeprobe::platform
