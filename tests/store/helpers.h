#pragma once
// Small helpers shared by the store tests.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "core/error.h"
#include "store/store.h"

namespace edgeprobe::store::test {

// The kind of Error f throws; kBug when it throws nothing, so a test expecting kBadInput fails.
inline ErrorKind kind_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.kind();
  }
  return ErrorKind::kBug;
}

inline std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A RunFilter with every field given (designated initializers that leave some out warn
// under -Wextra).
inline RunFilter filter(std::string kind, std::string device, bool device_exact) {
  return RunFilter{std::move(kind), std::move(device), device_exact, "", 0};
}

// A provenance in the result schema v1 shape with one model.
inline nlohmann::json provenance() {
  return {{"model", {{"name", "tiny-q4_0.gguf"}, {"sha256", std::string(64, 'a')}, {"quant", "Q4_0"}}},
          {"llama_cpp", {{"commit", "80fb11a"}}}};
}

// A repetition payload that proves itself intact: `check` is derived from the rest.
inline nlohmann::json repetition_result(int64_t rep) {
  const std::string filler(4000, static_cast<char>('a' + rep % 26));
  return {{"decode_tokens_per_s", 20.0 + static_cast<double>(rep)},
          {"filler", filler},
          {"check", static_cast<int64_t>(std::hash<std::string>{}(filler)) ^ rep}};
}
inline bool intact(const nlohmann::json& result, int64_t rep) { return result == repetition_result(rep); }

// A provenance naming one model file and, unless device_id is empty, the device.
inline nlohmann::json provenance_on(const std::string& device_id) {
  nlohmann::json p = {{"models", {{{"path", "/m/tiny.gguf"}, {"sha256", "ab"}}}},
                      {"engine", {{"name", "llama.cpp"}, {"commit", "80fb11a"}}}};
  if (!device_id.empty()) p["device"] = {{"id", device_id}, {"arch", "aarch64"}, {"hostname", "lab-" + device_id}};
  return p;
}

}  // namespace edgeprobe::store::test
