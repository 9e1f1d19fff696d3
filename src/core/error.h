#pragma once
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace edgeprobe {

// Why something failed decides the exit code: the user can fix bad input (2), the
// environment is missing something (3), anything else is a bug in edgeprobe (1).
enum class ErrorKind { kBug = 1, kBadInput = 2, kEnvironment = 3 };

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, std::string message) : std::runtime_error(std::move(message)), kind_(kind) {}
  ErrorKind kind() const { return kind_; }
  int exit_code() const { return static_cast<int>(kind_); }

 private:
  ErrorKind kind_;
};

template <typename... Args>
[[noreturn]] void throw_bad_input(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(ErrorKind::kBadInput, fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
[[noreturn]] void throw_environment(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(ErrorKind::kEnvironment, fmt::format(format, std::forward<Args>(args)...));
}

const char* error_kind_name(ErrorKind kind);
// The inverse, for error rows read back from JSON; an unknown name is an environment
// problem (exit 3), the commonest failure of a configuration that does not run.
ErrorKind error_kind_from_name(const std::string& name);

}  // namespace edgeprobe
