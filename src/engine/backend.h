#pragma once
#include <string>
#include <utility>
#include <vector>

namespace edgeprobe::engine {

// The ggml CPU backend module that actually loaded. llama.cpp's own cpu_info does not
// say which variant it is (research notes 3.4), so we load it ourselves and keep the path.
struct CpuBackendInfo {
  std::string variant;       // "haswell", "sse42", "x64", ... ("" for a static build)
  std::string library_path;  // the .so that was loaded
  // What the variant was compiled with, from ggml_backend_get_features ("AVX2" -> "1").
  std::vector<std::pair<std::string, std::string>> features;
  // Better-scored variants not loaded because they need a feature that does not execute
  // here, each with why: "sapphirerapids (needs AMX_TILE: ...)".
  std::vector<std::string> passed_over;
  bool has_feature(const std::string& name) const;
};

// Loads the ggml CPU backend once per process: the best variant for this CPU when
// `variant` is empty, else exactly libggml-cpu-<variant>.so from `dir` (default: where the
// build installed them). A second call with a different request throws: ggml cannot
// unload a backend safely. Throws Error(kBadInput) for an unknown or unsupported variant.
const CpuBackendInfo& load_cpu_backend(const std::string& variant = "", const std::string& dir = "");

// The variants present in the backend dir, best-scored first is not implied: sorted by name.
std::vector<std::string> installed_cpu_variants(const std::string& dir = "");
std::string default_backend_dir();

// The ggml backends registered in this process, by name ("CPU"): what a result ran on.
std::vector<std::string> registered_backends();

// A GPU (or other accelerator) device a loaded ggml backend offers.
struct GpuDeviceInfo {
  std::string name;         // "Vulkan0", "CUDA0": what -dev takes
  std::string description;  // "NVIDIA H200", "llvmpipe (LLVM 15.0.6, 256 bits)"
  std::string type;         // "gpu", "igpu", "accel"
  uint64_t memory_total = 0, memory_free = 0;  // bytes; 0 when the backend does not say
};

// A GPU backend library installed beside the CPU variants (libggml-vulkan.so, ...) and
// what became of it here. ggml loads backends silently: a library that fails to load, or
// loads and finds no device, leaves no trace in a release build. edgeprobe loads them
// itself and keeps why, which is what doctor's gpu.* findings name.
struct GpuBackendInfo {
  std::string name;          // "vulkan", "cuda": the library's tag
  std::string library_path;
  std::string error;         // why it did not load; "" when it did
  std::vector<GpuDeviceInfo> devices;  // loaded with none: every device was skipped
};

// Loads every GPU backend library in `dir` (default: default_backend_dir()) once per
// process, after the CPU backend. EDGEPROBE_NO_GPU=1 loads none (a CPU-only run that does
// not even start a GPU driver).
const std::vector<GpuBackendInfo>& load_gpu_backends(const std::string& dir = "");

// llama.cpp / ggml log lines, captured with llama_log_set instead of printed, so that
// `doctor` can scan them (fallback, repack, unsupported) and stdout stays clean. The
// levels keep ggml_log_level's numbers: stored results hold them ("level": 3 = warning).
enum class LogLevel { kDebug = 1, kInfo = 2, kWarning = 3, kError = 4 };
struct LogLine {
  LogLevel level;
  std::string text;
};
void start_log_capture(bool echo_to_stderr);
// The lines captured so far at `min` and above, oldest first.
std::vector<LogLine> captured_log(LogLevel min = LogLevel::kDebug);

}  // namespace edgeprobe::engine
