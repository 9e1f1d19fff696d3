#include "core/error.h"

namespace edgeprobe {

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kBadInput: return "bad_input";
    case ErrorKind::kEnvironment: return "environment";
    case ErrorKind::kBug: return "bug";
  }
  return "bug";
}

ErrorKind error_kind_from_name(const std::string& name) {
  if (name == "bad_input") return ErrorKind::kBadInput;
  if (name == "bug") return ErrorKind::kBug;
  return ErrorKind::kEnvironment;
}

}  // namespace edgeprobe
