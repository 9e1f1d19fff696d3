#include "engine/backend.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <ggml-backend.h>
#include <ggml.h>
#include <llama.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>

#include "core/error.h"
#include "engine/weight_buffer.h"
#include "edgeprobe_version.h"

namespace edgeprobe::engine {
namespace {

constexpr const char* kPrefix = "libggml-cpu-";
constexpr const char* kSuffix = ".so";

std::mutex g_mutex;
std::optional<CpuBackendInfo> g_loaded;
std::string g_loaded_request;

std::mutex g_log_mutex;
std::vector<LogLine> g_log;
bool g_log_echo = false;
std::string g_partial;  // ggml logs a line in pieces (GGML_LOG_LEVEL_CONT)
int g_partial_level = 0;

static_assert(static_cast<int>(LogLevel::kDebug) == GGML_LOG_LEVEL_DEBUG &&
              static_cast<int>(LogLevel::kInfo) == GGML_LOG_LEVEL_INFO &&
              static_cast<int>(LogLevel::kWarning) == GGML_LOG_LEVEL_WARN &&
              static_cast<int>(LogLevel::kError) == GGML_LOG_LEVEL_ERROR,
              "LogLevel keeps ggml's numbers");

LogLevel to_log_level(int ggml_level) {
  switch (ggml_level) {
    case GGML_LOG_LEVEL_INFO: return LogLevel::kInfo;
    case GGML_LOG_LEVEL_WARN: return LogLevel::kWarning;
    case GGML_LOG_LEVEL_ERROR: return LogLevel::kError;
    default: return LogLevel::kDebug;  // NONE and DEBUG; CONT never reaches here
  }
}

void log_callback(ggml_log_level level, const char* text, void* /*user_data*/) {
  std::lock_guard lock(g_log_mutex);
  if (g_log_echo) std::fputs(text, stderr);
  if (level != GGML_LOG_LEVEL_CONT) g_partial_level = level;
  g_partial += text;
  size_t newline;
  while ((newline = g_partial.find('\n')) != std::string::npos) {
    g_log.push_back({to_log_level(g_partial_level), g_partial.substr(0, newline)});
    g_partial.erase(0, newline + 1);
  }
  // Keep memory bounded on very chatty runs; doctor only needs the load-time lines.
  if (g_log.size() > 20000) g_log.erase(g_log.begin() + 10000, g_log.begin() + 15000);
}

// The score a variant reports for this CPU (0 = unsupported), read the way ggml itself
// does: each variant exports ggml_backend_score(), compiled without arch flags.
int variant_score(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) return 0;
  using ScoreFn = int (*)();
  auto fn = reinterpret_cast<ScoreFn>(dlsym(handle, "ggml_backend_score"));
  const int score = fn ? fn() : 0;
  dlclose(handle);
  return score;
}

// Runs one quantized matrix multiply on a variant in a child process, with the weight in
// the buffer llama.cpp would give it (AMX, repack), and says how the child ended: "" when
// it worked. ggml scores a variant from CPUID alone, and a CPU can list instructions that
// still fault: in a Firecracker guest with AMX, CPUID, XCR0 and the kernel all offer the
// tiles, and ggml's sapphirerapids variant dies with SIGILL on its first tileloadd (as
// llama-bench does there). Only running the variant's own kernel shows it.
std::string variant_fault(const std::string& path) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return "";  // cannot test: trust the score, as ggml does
  if (pid == 0) {
    alarm(30);
    ggml_backend_reg_t reg = ggml_backend_load(path.c_str());
    if (!reg || ggml_backend_reg_dev_count(reg) == 0) _exit(3);
    ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, 0);
    ggml_backend_t backend = ggml_backend_dev_init(dev, nullptr);
    ggml_init_params params{ggml_tensor_overhead() * 8 + ggml_graph_overhead(), nullptr, true};
    ggml_context* ctx_w = ggml_init(params);
    ggml_context* ctx = ggml_init(params);
    if (!backend || !ctx || !ctx_w) _exit(3);
    // A prompt-sized product: AMX and repacked kernels run for batches, not single tokens.
    ggml_tensor* w = ggml_new_tensor_2d(ctx_w, GGML_TYPE_Q4_0, 512, 64);
    ggml_tensor* x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 512, 32);
    ggml_tensor* y = ggml_mul_mat(ctx, w, x);
    ggml_backend_buffer_t wb = ggml_backend_alloc_ctx_tensors_from_buft(ctx_w, weight_buffer_type(dev, y, w));
    ggml_backend_buffer_t xb = ggml_backend_alloc_ctx_tensors(ctx, backend);
    if (!wb || !xb) _exit(3);
    std::vector<uint8_t> zeros(ggml_nbytes(w), 0);
    ggml_backend_tensor_set(w, zeros.data(), 0, zeros.size());
    std::vector<float> ones(512 * 32, 1.0f);
    ggml_backend_tensor_set(x, ones.data(), 0, ones.size() * sizeof(float));
    ggml_cgraph* graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, y);
    _exit(ggml_backend_graph_compute(backend, graph) == GGML_STATUS_SUCCESS ? 0 : 4);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return "";
  if (WIFSIGNALED(status)) return fmt::format("its matrix multiply dies with {} on this machine", strsignal(WTERMSIG(status)));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 4) return "its matrix multiply fails on this machine";
  return "";  // worked, or could not be set up (then the load below says why)
}

std::string variant_path(const std::string& dir, const std::string& variant) {
  return (std::filesystem::path(dir) / (std::string(kPrefix) + variant + kSuffix)).string();
}

}  // namespace

bool CpuBackendInfo::has_feature(const std::string& name) const {
  for (const auto& [key, value] : features)
    if (key == name) return value != "0";
  return false;
}

namespace {

bool has_cpu_variants(const std::filesystem::path& dir) {
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(kPrefix) && name.ends_with(kSuffix)) return true;
  }
  return false;
}

}  // namespace

std::string default_backend_dir() {
  if (const char* env = std::getenv("EDGEPROBE_GGML_BACKEND_DIR"); env && *env) return env;
  std::error_code ec;
  if (std::filesystem::is_directory(kGgmlBackendDir, ec)) return kGgmlBackendDir;
  // A relocated install (the dist bundle): the variants sit in lib/ beside bin/. When the
  // bundle's own loader starts the binary, /proc/self/exe is that loader, already in lib/.
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const auto& dir : {exe.parent_path().parent_path() / "lib", exe.parent_path()})
      if (has_cpu_variants(dir)) return dir.string();
  }
  return kGgmlBackendDir;  // absent: load_cpu_backend names it in its error
}

std::vector<std::string> registered_backends() {
  std::vector<std::string> names;
  for (size_t i = 0; i < ggml_backend_reg_count(); ++i) names.push_back(ggml_backend_reg_name(ggml_backend_reg_get(i)));
  return names;
}

std::vector<std::string> installed_cpu_variants(const std::string& dir_in) {
  const std::string dir = dir_in.empty() ? default_backend_dir() : dir_in;
  std::vector<std::string> variants;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(kPrefix) && name.ends_with(kSuffix))
      variants.push_back(name.substr(std::strlen(kPrefix), name.size() - std::strlen(kPrefix) - std::strlen(kSuffix)));
  }
  std::sort(variants.begin(), variants.end());
  return variants;
}

const CpuBackendInfo& load_cpu_backend(const std::string& variant, const std::string& dir_in) {
  std::lock_guard lock(g_mutex);
  const std::string dir = dir_in.empty() ? default_backend_dir() : dir_in;
  const std::string request = variant + "@" + dir;
  if (g_loaded) {
    if (request == g_loaded_request || variant.empty() || variant == g_loaded->variant) return *g_loaded;
    throw_bad_input("the ggml CPU variant '{}' is already loaded in this process; cannot switch to '{}' "
                    "(run a separate process)", g_loaded->variant, variant);
  }
  const auto variants = installed_cpu_variants(dir);
  if (variants.empty()) {
    throw_environment("no ggml CPU backend (libggml-cpu-*.so) found in '{}'; run scripts/setup.sh or set "
                      "EDGEPROBE_GGML_BACKEND_DIR", dir);
  }
  // Variants by score, best first; the best that scores is tested before it is trusted,
  // and while it faults the next one is (an AMX or SVE variant a hypervisor will not run).
  // A forced lower variant tests the better ones too, so that doctor's "best variant"
  // is one that runs here.
  std::vector<std::pair<int, std::string>> ranked;
  for (const auto& v : variants)
    if (const int score = variant_score(variant_path(dir, v)); score > 0) ranked.emplace_back(score, v);
  std::sort(ranked.rbegin(), ranked.rend());
  std::vector<std::string> passed_over;
  std::string best_working;
  for (const auto& [score, v] : ranked) {
    if (!variant.empty() && v == variant) break;  // the forced one is tested below
    if (const std::string fault = variant_fault(variant_path(dir, v)); !fault.empty()) {
      passed_over.push_back(fmt::format("{} ({})", v, fault));
      continue;
    }
    best_working = v;
    break;
  }
  std::string chosen = variant.empty() ? best_working : variant;
  if (variant.empty()) {
    if (chosen.empty()) throw_environment("no ggml CPU variant in '{}' supports this CPU", dir);
  } else if (std::find(variants.begin(), variants.end(), chosen) == variants.end()) {
    std::string known;
    for (const auto& v : variants) known += (known.empty() ? "" : ", ") + v;
    throw_bad_input("unknown CPU variant '{}'; installed variants: {}", chosen, known);
  } else if (variant_score(variant_path(dir, chosen)) == 0) {
    throw_bad_input("CPU variant '{}' needs instructions this CPU lacks; choose a lower one", chosen);
  } else if (best_working.empty()) {
    if (const std::string fault = variant_fault(variant_path(dir, chosen)); !fault.empty())
      throw_environment("CPU variant '{}': {} (instructions the CPU lists but will not run here); choose a lower one", chosen, fault);
  }

  const std::string path = variant_path(dir, chosen);
  ggml_backend_reg_t reg = ggml_backend_load(path.c_str());
  if (!reg) throw_environment("ggml could not load '{}'", path);

  CpuBackendInfo info;
  info.variant = chosen;
  info.library_path = path;
  info.passed_over = std::move(passed_over);
  if (auto get_features = reinterpret_cast<ggml_backend_get_features_t>(
          ggml_backend_reg_get_proc_address(reg, "ggml_backend_get_features"))) {
    for (auto* f = get_features(reg); f && f->name; ++f) info.features.emplace_back(f->name, f->value);
  }
  llama_backend_init();
  g_loaded = std::move(info);
  g_loaded_request = request;
  return *g_loaded;
}

void start_log_capture(bool echo_to_stderr) {
  {
    std::lock_guard lock(g_log_mutex);
    g_log_echo = echo_to_stderr;
  }
  llama_log_set(log_callback, nullptr);
}

std::vector<LogLine> captured_log(LogLevel min) {
  std::lock_guard lock(g_log_mutex);
  std::vector<LogLine> lines;
  for (const auto& line : g_log)
    if (line.level >= min) lines.push_back(line);
  return lines;
}

ggml_backend_buffer_type_t weight_buffer_type(ggml_backend_dev_t dev, ggml_tensor* op, ggml_tensor* weight) {
  ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
  auto get_extra = reinterpret_cast<ggml_backend_dev_get_extra_bufts_t>(
      ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts"));
  if (get_extra) {
    for (ggml_backend_buffer_type_t* it = get_extra(dev); it && *it; ++it) {
      ggml_backend_buffer_t dummy = ggml_backend_buft_alloc_buffer(*it, 0);
      weight->buffer = dummy;
      const bool ok = ggml_backend_dev_supports_op(dev, op);
      weight->buffer = nullptr;
      if (dummy) ggml_backend_buffer_free(dummy);
      if (ok) return *it;
    }
  }
  return ggml_backend_dev_buffer_type(dev);
}

}  // namespace edgeprobe::engine
