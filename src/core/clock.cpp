#include "core/clock.h"

#include <chrono>

namespace edgeprobe {

int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace edgeprobe
