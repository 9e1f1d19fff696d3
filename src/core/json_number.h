#pragma once
// Numbers from outside JSON, read exactly: nlohmann's get<int>() wraps 2^32 + 1 to 1 and
// truncates 2.5 to 2 without a word, so readers of plans and result files go through here.
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>
#include <utility>

namespace edgeprobe {

// The integer `v` holds, as T: nullopt when it is not a number, has a fraction, or lies
// outside T's range. A float with no fraction (1e3, 5.0) is that integer.
template <typename T>
std::optional<T> exact_integer(const nlohmann::json& v) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) return std::nullopt;
    return static_cast<T>(u);
  }
  if (v.is_number_integer()) {
    const auto s = v.get<int64_t>();
    if (!std::in_range<T>(s)) return std::nullopt;
    return static_cast<T>(s);
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // The upper bound is exclusive: max() rounds up to a power of two as a double.
    if (!std::isfinite(d) || d != std::floor(d) || d < static_cast<double>(std::numeric_limits<T>::min()) ||
        d >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::nullopt;
    return static_cast<T>(d);
  }
  return std::nullopt;
}

}  // namespace edgeprobe
