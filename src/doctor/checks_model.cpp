// The software checks: is the model file the one it claims to be (against the baseline
// and its own name), what memory it takes against what its weights should, and whether
// the best kernels for this CPU ran.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <regex>

#include "doctor/checks_internal.h"

namespace edgeprobe::doctor::checks {
namespace {

// The first model of a run; an empty identity when there is none.
result::ModelIdentity models0(const std::optional<result::BenchReport>& report) {
  return report && !report->provenance.models.empty() ? report->provenance.models.front() : result::ModelIdentity{};
}

std::string identity_text(const result::ModelIdentity& m) {
  return fmt::format("{} ({}, {}, {:.2f} bits/weight, sha256 {})",
                     m.path.empty() ? "?" : std::filesystem::path(m.path).filename().string(),
                     mib(static_cast<double>(m.size_bytes)), m.dominant_type.empty() ? "?" : m.dominant_type,
                     m.bits_per_weight, m.sha256.empty() ? "not computed" : m.sha256.substr(0, 16) + "…");
}

bool same_tensor_types(const result::ModelIdentity& a, const result::ModelIdentity& b) {
  return std::equal(a.tensor_types.begin(), a.tensor_types.end(), b.tensor_types.begin(), b.tensor_types.end(),
                    [](const auto& x, const auto& y) {
                      return x.first == y.first && x.second.tensors == y.second.tensors && x.second.bytes == y.second.bytes &&
                             x.second.params == y.second.params;
                    });
}

}  // namespace

// ---- 1. model identity --------------------------------------------------------------
void check_identity(const Evidence& e, std::vector<Finding>& out) {
  if (!e.baseline) return;
  const result::ModelIdentity mine = models0(e.primary.report), base = models0(e.baseline);
  std::vector<std::string> differences;
  const std::string& a = mine.sha256;
  const std::string& b = base.sha256;
  if (!a.empty() && !b.empty() && a != b) differences.push_back("SHA-256 differs");
  if (mine.size_bytes != base.size_bytes) differences.push_back("size differs");
  if (mine.dominant_type != base.dominant_type) differences.push_back("quantisation differs");
  if (mine.n_params != base.n_params) differences.push_back("parameter count differs");
  if (!same_tensor_types(mine, base)) differences.push_back("tensor-type histogram differs");
  if (differences.empty()) {
    if (a.empty() || b.empty()) {
      out.push_back({"identity.unverified", Severity::kInfo, "same size and tensor types as the baseline, but no SHA-256 to prove it",
                     {"this run: " + identity_text(mine), "baseline: " + identity_text(base)}, "results", std::nullopt, "",
                     "run both sides without --no-hash", {}});
    }
  } else {
    std::string what;
    for (const auto& d : differences) what += (what.empty() ? "" : ", ") + d;
    Finding f{"identity.baseline_mismatch", Severity::kCritical,
              "the model file is not the baseline's: every comparison with it is void (" + what + ")",
              {"this run: " + identity_text(mine), "baseline: " + identity_text(base)},
              "results", std::nullopt, "",
              fmt::format("use the baseline's exact file (sha256 {}) on this device, or measure a new baseline with this one",
                          b.empty() ? "unknown" : b),
              {{"differences", differences}, {"this", result::to_json(mine)}, {"baseline", result::to_json(base)}}};
    out.push_back(std::move(f));
  }
  auto engine_commit = [](const std::optional<result::BenchReport>& report) {
    return report ? report->provenance.engine.commit : std::string();
  };
  const std::string my_commit = engine_commit(e.primary.report);
  const std::string base_commit = engine_commit(e.baseline);
  if (!my_commit.empty() && !base_commit.empty() && my_commit != base_commit) {
    out.push_back({"identity.build_differs", Severity::kWarning,
                   fmt::format("llama.cpp {} here against {} in the baseline: kernels may differ", my_commit, base_commit),
                   {}, "results", std::nullopt, "", "compare builds of the same llama.cpp commit", {}});
  }
}

// ---- 2. precision -------------------------------------------------------------------
namespace {

// Bits per weight a quantisation name promises (llama.cpp's nominal figures).
std::optional<double> nominal_bits(const std::string& name) {
  // Quantised names first: "llama-q4_0-from-f16.gguf" promises q4_0.
  static const std::vector<std::pair<std::regex, double>> table = {
      {std::regex("(^|[^a-z0-9])(q2_k\\w*|iq2_\\w+|q2)([^a-z0-9]|$)"), 2.6},
      {std::regex("(^|[^a-z0-9])(q3_k\\w*|iq3_\\w+|q3)([^a-z0-9]|$)"), 3.4},
      {std::regex("(^|[^a-z0-9])(q4_[01k]\\w*|iq4_\\w+|q4|int4|4bit|4-bit|w4a\\d+)([^a-z0-9]|$)"), 4.5},
      {std::regex("(^|[^a-z0-9])(q5_[01k]\\w*|q5)([^a-z0-9]|$)"), 5.5},
      {std::regex("(^|[^a-z0-9])(q6_k|q6)([^a-z0-9]|$)"), 6.6},
      {std::regex("(^|[^a-z0-9])(q8_0|q8|int8|8bit|8-bit|w8a\\d+)([^a-z0-9]|$)"), 8.5},
      {std::regex("(^|[^a-z0-9])(f16|fp16|bf16)([^a-z0-9]|$)"), 16},
      {std::regex("(^|[^a-z0-9])(f32|fp32)([^a-z0-9]|$)"), 32}};
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& [re, bits] : table)
    if (std::regex_search(lower, re)) return bits;
  return std::nullopt;
}

// llama_ftype (general.file_type) -> (name, nominal bits); llama.h's enum.
std::optional<std::pair<std::string, double>> ftype_claim(int64_t ftype) {
  static const std::map<int64_t, std::pair<std::string, double>> table = {
      {0, {"F32", 32}},     {1, {"F16", 16}},       {2, {"Q4_0", 4.5}},    {3, {"Q4_1", 5}},     {7, {"Q8_0", 8.5}},
      {8, {"Q5_0", 5.5}},   {9, {"Q5_1", 6}},       {10, {"Q2_K", 2.6}},   {11, {"Q3_K_S", 3.4}}, {12, {"Q3_K_M", 3.9}},
      {13, {"Q3_K_L", 4.3}}, {14, {"Q4_K_S", 4.6}}, {15, {"Q4_K_M", 4.9}}, {16, {"Q5_K_S", 5.5}}, {17, {"Q5_K_M", 5.7}},
      {18, {"Q6_K", 6.6}},  {32, {"BF16", 16}}};
  auto it = table.find(ftype);
  if (it == table.end()) return std::nullopt;
  return it->second;
}
}  // namespace

void check_precision(const Evidence& e, std::vector<Finding>& out) {
  const auto& info = e.model;
  const double actual_bits = info.bits_per_weight();
  const std::string file = std::filesystem::path(info.path).filename().string();
  const std::string dominant = info.dominant_type();
  struct Claim {
    std::string source, text;
    double bits;
  };
  std::vector<Claim> claims;
  if (auto bits = nominal_bits(file)) claims.push_back({"file name", file, *bits});
  if (auto bits = nominal_bits(info.name)) claims.push_back({"general.name", info.name, *bits});
  if (auto c = ftype_claim(info.file_type)) claims.push_back({"general.file_type", c->first, c->second});
  for (const auto& c : claims) {
    // Real files carry a few f32/q6_K tensors: 1.6x the nominal figure leaves room for them.
    if (actual_bits <= c.bits * 1.6) continue;
    const double share = info.weight_bytes() ? static_cast<double>(info.type_histogram().at(dominant).bytes) / info.weight_bytes() : 0;
    Finding f{"precision.mismatch", Severity::kCritical,
              fmt::format("the {} says {:.1f} bits per weight but the weights are {} ({:.1f} bits per weight)", c.source,
                          c.bits, dominant, actual_bits),
              {fmt::format("{}: '{}'", c.source, c.text),
               fmt::format("{} of the weight bytes are {}; the file is {} where {:.1f}-bit weights would take {}", pct(share),
                           dominant, mib(static_cast<double>(info.file_bytes)), c.bits,
                           mib(static_cast<double>(info.n_params()) * c.bits / 8))},
              "decode", actual_bits / c.bits,
              "estimated: decode reads every weight once per token, so it scales with bits per weight",
              fmt::format("quantize the model for real (llama-quantize MODEL-f16.gguf OUT.gguf {}), or rename the file to what it holds",
                          c.bits < 5 ? "Q4_0" : c.bits < 9 ? "Q8_0" : "F16"),
              {{"claimed_bits_per_weight", c.bits}, {"claimed_by", c.source}, {"actual_bits_per_weight", actual_bits},
               {"dominant_type", dominant}}};
    out.push_back(std::move(f));
    break;  // one claim is enough to void the run
  }
}

// The seed's "7 GB where 3.5 GB was due": memory against what the weights should take.
// llama.cpp logs every buffer it allocates (with --llama-log, which doctor's children
// use), so the footprint can be checked part by part:
//  - weights copied at load (repacked or read into memory) beyond the file itself: an
//    expansion such as 4-bit weights held as f16;
//  - peak RSS beyond all declared buffers, with room for the runtime (code, libraries, the
//    sampler): memory llama.cpp does not account for.
// Without the log, only a peak above 2.5x the file is called out (mapped pages and
// repacked copies both count in RSS).
void check_memory(const Evidence& e, std::vector<Finding>& out) {
  constexpr double kMiB = 1024.0 * 1024.0;
  constexpr double kRuntimeAllowance = 128 * kMiB;  // binary, libllama, ggml backends, threads' stacks
  int64_t peak = -1;
  if (e.primary.report)
    for (const auto& r : e.primary.report->results) peak = std::max(peak, result::summarize(r).peak_rss_bytes);
  const double file = static_cast<double>(e.model.file_bytes);
  const DeclaredMemory declared = declared_memory(primary_extra(e, "llama_log"));
  if (declared.total() <= 0) {
    if (peak > 0 && static_cast<double>(peak) > 2.5 * file + 300 * kMiB)
      out.push_back(
          {"precision.memory_excess",
           Severity::kWarning,
           fmt::format("peak RSS {} is {:.1f}x the {} the weights take", mib(static_cast<double>(peak)),
                       peak / file, mib(file)),
           {"weights may have been expanded at load time (dequantised or copied); llama.cpp's buffer lines "
            "were not logged"},
           "memory",
           std::nullopt,
           "",
           "rerun doctor (its runs keep llama.cpp's log) or edgeprobe bench --llama-log to see the buffers",
           {{"peak_rss_bytes", peak}, {"weight_bytes", file}}});
    return;
  }
  const nlohmann::json data = {{"peak_rss_bytes", peak},
                               {"file_bytes", file},
                               {"declared_bytes", declared.bytes},
                               {"declared_total_bytes", declared.total()}};
  const double copies = declared.model_copies();
  if (copies > 1.5 * file) {
    out.push_back(
        {"precision.weights_expanded",
         Severity::kWarning,
         fmt::format("llama.cpp holds {} of weights in memory for a {} file", mib(copies), mib(file)),
         {"llama.cpp's buffers: " + declared.text(),
          "weights are copied at load beyond the file's size: expanded to a wider type, or loaded more than "
          "once"},
         "memory",
         copies / file,
         "estimated: decode reads the weights as they are held",
         "use a CPU variant with kernels for the file's type, or a file quantised to the type the kernels "
         "want",
         data});
  }
  // A GPU driver lives in the process too: lavapipe's LLVM alone takes ~140 MiB; a phone's
  // or NVIDIA's driver maps its own.
  constexpr double kGpuDriverAllowance = 256 * kMiB;
  bool gpu_driver = false;
  if (e.primary.report)
    for (const auto& b : e.primary.report->provenance.engine.gpu_backends) gpu_driver = gpu_driver || !b.devices.empty();
  const double runtime = kRuntimeAllowance + (gpu_driver ? kGpuDriverAllowance : 0);
  const double allowed = 1.25 * declared.total() + runtime;
  if (peak > 0 && static_cast<double>(peak) > allowed) {
    out.push_back(
        {"precision.memory_excess",
         Severity::kWarning,
         fmt::format("peak RSS {} is {} above the {} llama.cpp allocated", mib(static_cast<double>(peak)),
                     mib(static_cast<double>(peak) - declared.total()), mib(declared.total())),
         {"llama.cpp's buffers: " + declared.text(),
          fmt::format("allowed for the runtime besides them: 25 % + {}{}", mib(runtime), gpu_driver ? " (a GPU driver included)" : "")},
         "memory",
         std::nullopt,
         "",
         "memory outside llama.cpp's buffers: profile the run (heaptrack, valgrind --tool=massif) to find "
         "who holds it",
         data});
  } else if (peak > 0) {
    out.push_back({"memory.footprint",
                   Severity::kInfo,
                   fmt::format("peak RSS {} for a {} file: llama.cpp's buffers account for {}",
                               mib(static_cast<double>(peak)), mib(file), mib(declared.total())),
                   {"llama.cpp's buffers: " + declared.text()},
                   "memory",
                   std::nullopt,
                   "",
                   "",
                   data});
  }
}

// ---- 3. kernel path -----------------------------------------------------------------
namespace {

bool has(const std::vector<std::string>& names, const char* name) { return std::find(names.begin(), names.end(), name) != names.end(); }

// "DOTPROD and I8MM": the Arm integer features the loaded variant leaves unused.
std::string arm_gap_names(const std::vector<std::string>& missing) {
  if (has(missing, "DOTPROD") && has(missing, "I8MM")) return "DOTPROD and I8MM";
  return has(missing, "DOTPROD") ? "DOTPROD" : "I8MM";
}

// What those features do in ggml's Arm kernels (ggml-cpu/arch/arm/quants.c at the pinned
// llama.cpp): the quantised dot products use SDOT (vdotq_s32) with DOTPROD, else a
// widening multiply and pairwise adds; with I8MM the q4_0/q8_0 dot products take two rows
// at once with SMMLA.
std::string arm_gap_cost(const std::vector<std::string>& missing) {
  std::string out = "on Arm the quantised (int4/int8) matmuls are integer dot products: ";
  if (has(missing, "DOTPROD")) out += "without DOTPROD each SDOT becomes widening multiplies and pairwise adds";
  if (has(missing, "I8MM")) out += std::string(has(missing, "DOTPROD") ? "; " : "") + "without I8MM the two-row SMMLA kernels are not used";
  return out;
}

// The -march that brings the missing features into a build (GCC and clang accept each
// extension on armv8.2-a).
std::string arm_march(const std::vector<std::string>& missing) {
  static constexpr std::pair<const char*, const char*> kExtensions[] = {{"FP16", "+fp16"}, {"DOTPROD", "+dotprod"}, {"I8MM", "+i8mm"}};
  std::string march = "armv8.2-a";
  for (const auto& [feature, extension] : kExtensions)
    if (has(missing, feature)) march += extension;
  return march;
}

}  // namespace

void check_kernel(const Evidence& e, std::vector<Finding>& out) {
  const json& gap = primary_extra(e, "isa_gap").is_object() ? primary_extra(e, "isa_gap") : json::object();
  const auto& o = e.options;
  if (gap.value("fallback", false)) {
    const std::string loaded = gap.value("loaded_variant", "?"), best = gap.value("best_variant", "?");
    std::vector<std::string> missing;
    const auto compiled = gap.value("compiled_features", std::vector<std::string>{});
    for (const auto& f : gap.value("cpu_features", std::vector<std::string>{}))
      if (std::find(compiled.begin(), compiled.end(), f) == compiled.end()) missing.push_back(f);
    std::string missing_text;
    for (const auto& m : missing) missing_text += (missing_text.empty() ? "" : " ") + m;
    const bool arm = std::find(missing.begin(), missing.end(), "DOTPROD") != missing.end() ||
                     std::find(missing.begin(), missing.end(), "I8MM") != missing.end();
    Finding f{"kernel.isa_fallback", Severity::kWarning,
              fmt::format("the ggml CPU variant '{}' runs where this CPU can run '{}'{}: the kernels fall back", loaded, best,
                          arm ? " (" + arm_gap_names(missing) + " present, not used)" : ""),
              {fmt::format("this CPU has, and '{}' was not built for: {}", loaded, missing_text.empty() ? "(none listed)" : missing_text)},
              "prefill+decode", std::nullopt, "", "", {{"isa_gap", gap}}};
    if (arm) f.evidence.push_back(arm_gap_cost(missing));
    apply_measured(f, e.variant_pairs, e);  // interleaved pairs against the best variant
    f.fix = !o.config.cpu_variant.empty()
                ? fmt::format("drop --cpu-variant {} (edgeprobe loads the best variant, '{}'); in llama.cpp keep libggml-cpu-{}.so beside libggml.so", o.config.cpu_variant, best, best)
            : arm ? fmt::format("install libggml-cpu-{}.so beside libggml.so (build llama.cpp with GGML_BACKEND_DL=ON GGML_CPU_ALL_VARIANTS=ON), "
                                "or build for this CPU: GGML_NATIVE=ON on the device, or GGML_CPU_ARM_ARCH={} when cross-building (Android NDK)",
                                best, arm_march(missing))
                  : fmt::format("install libggml-cpu-{}.so beside libggml.so (build llama.cpp with GGML_BACKEND_DL=ON GGML_CPU_ALL_VARIANTS=ON, or GGML_NATIVE=ON on this device)", best);
    out.push_back(std::move(f));
  }
  // llama.cpp's own words: fallbacks and unsupported operations it logged.
  static const std::regex alarming("fall(ing)? ?back|not supported|unsupported|cannot use|failed", std::regex::icase);
  std::vector<std::string> lines;
  std::string repack;
  static const json kNoLines = json::array();
  const json& log = primary_extra(e, "llama_log").is_array() ? primary_extra(e, "llama_log") : kNoLines;
  for (const auto& l : log) {
    const std::string line = text(l, "text");
    if (line.find("CPU_REPACK model buffer size") != std::string::npos) repack = line.substr(line.find("CPU_REPACK"));
    if ((num(l, "level") >= 3 || std::regex_search(line, alarming)) && lines.size() < 8) lines.push_back(line);
  }
  if (!lines.empty()) {
    out.push_back({"kernel.log_messages", Severity::kWarning, fmt::format("llama.cpp logged {} warning or fallback line(s)", lines.size()),
                   lines, "prefill+decode", std::nullopt, "", "read the lines above; rerun with 'edgeprobe bench -v' for the whole log",
                   {{"lines", lines}}});
  }
  const auto unused = gap.value("unused_features", std::vector<std::string>{});
  if (!gap.value("fallback", false) && !text(gap, "loaded_variant").empty()) {
    std::vector<std::string> ev = {text(gap, "summary")};
    if (!repack.empty()) ev.push_back("weights repacked for this variant's kernels: " + repack);
    out.push_back({"kernel.variant", Severity::kInfo, fmt::format("the best ggml CPU variant for this CPU ran ('{}')", text(gap, "loaded_variant")),
                   ev, "prefill+decode", std::nullopt, "",
                   unused.empty() ? "" : "features no prebuilt variant uses need a native build (GGML_NATIVE=ON)", {{"isa_gap", gap}}});
  }
}

}  // namespace edgeprobe::doctor::checks
