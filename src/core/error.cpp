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

}  // namespace edgeprobe
