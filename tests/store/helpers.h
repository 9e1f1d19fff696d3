#pragma once
// Small helpers shared by the store tests.
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
  return RunFilter{std::move(kind), std::move(device), device_exact};
}

}  // namespace edgeprobe::store::test
