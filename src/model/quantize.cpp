#include "model/quantize.h"

#include <fmt/format.h>
#include <llama.h>
#include <unistd.h>

#include <filesystem>

#include "core/error.h"
#include "model/synth.h"

namespace edgeprobe::model {
namespace {

// The quantizer's log is a line per tensor: kept, not printed; its last error line names
// why a quantization failed.
struct QuietLog {
  std::string last_error;
  static void callback(ggml_log_level level, const char* text, void* user) {
    if (level == GGML_LOG_LEVEL_ERROR && text) static_cast<QuietLog*>(user)->last_error = text;
  }
};

}  // namespace

std::string quantized_copy(const std::string& source, const std::string& source_sha256,
                           const std::string& quant, int n_threads) {
  const int ftype = quant_ftype(quant);
  namespace fs = std::filesystem;
  fs::create_directories(default_model_cache_dir());
  const std::string out =
      fmt::format("{}/quant-{}-{}.gguf", default_model_cache_dir(), source_sha256.substr(0, 16), quant);
  if (fs::exists(out)) return out;
  // Written aside and renamed: a process killed mid-way, or two quantizing at once, never
  // leave a partial file under the cached name.
  const std::string tmp = fmt::format("{}.{}.partial", out, static_cast<long>(getpid()));
  llama_model_quantize_params qp = llama_model_quantize_default_params();
  qp.ftype = static_cast<llama_ftype>(ftype);
  qp.nthread = n_threads;
  QuietLog log;
  ggml_log_callback previous = nullptr;
  void* previous_user = nullptr;
  llama_log_get(&previous, &previous_user);
  llama_log_set(&QuietLog::callback, &log);
  const uint32_t rc = llama_model_quantize(source.c_str(), tmp.c_str(), &qp);
  llama_log_set(previous, previous_user);
  if (rc != 0) {
    std::error_code ec;
    fs::remove(tmp, ec);
    while (!log.last_error.empty() && log.last_error.back() == '\n') log.last_error.pop_back();
    throw_environment("llama.cpp failed to quantize '{}' to {}: {}", source, quant,
                      log.last_error.empty() ? "it logged no reason" : log.last_error);
  }
  fs::rename(tmp, out);
  return out;
}

}  // namespace edgeprobe::model
