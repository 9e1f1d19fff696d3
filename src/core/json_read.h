#pragma once
// Lenient readers of JSON from outside (result files, stored rows, another build's output):
// what is absent or of another type reads as empty, so a reader shows "unavailable" instead
// of throwing nlohmann's type_error. One family for result/ and report/; readers that must
// refuse a mistyped field (plans, stored turns) check it and say which field instead.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/json_number.h"

namespace edgeprobe::json_read {

// The value at a JSON pointer ("/provenance/engine/kind"), or null when there is none.
inline const nlohmann::json& at(const nlohmann::json& j, const char* pointer) {
  static const nlohmann::json kNull;
  const nlohmann::json::json_pointer p(pointer);
  return j.contains(p) ? j.at(p) : kNull;
}

// A member of any type, or null when it (or the object) is missing, where nlohmann's const
// operator[] is undefined behaviour.
inline const nlohmann::json& field(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// A string field, or `fallback`.
inline std::string text(const nlohmann::json& j, const char* key, const std::string& fallback = "") {
  const nlohmann::json& v = field(j, key);
  return v.is_string() ? v.get<std::string>() : fallback;
}

// A list field, or an empty list.
inline const nlohmann::json& list(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  return j.is_object() && j.contains(key) && j[key].is_array() ? j[key] : kEmpty;
}

// An object field, or an empty object.
inline const nlohmann::json& object(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  return j.is_object() && j.contains(key) && j[key].is_object() ? j[key] : kEmpty;
}

// A number field, or T{} when absent, of another type, or out of T's range (a result file
// from outside may hold -1e300 where a byte count goes).
template <typename T>
T number(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return T{};
  const nlohmann::json& v = j[key];
  if constexpr (std::is_integral_v<T>) {
    return exact_integer<T>(v).value_or(T{});
  } else {
    return v.get<T>();
  }
}

// A number field as a real, or `fallback` when absent, null or another type (nlohmann's
// value() throws on a present null, and the schema writes null for "unknown").
inline double num(const nlohmann::json& j, const char* key, double fallback = 0) {
  const nlohmann::json& v = field(j, key);
  return v.is_number() ? v.get<double>() : fallback;
}

// The strings of a list field, skipping what is not a string; empty when absent.
inline std::vector<std::string> strings(const nlohmann::json& j, const char* key) {
  std::vector<std::string> out;
  for (const auto& s : list(j, key))
    if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

// A number field that may not have been measured: nullopt when absent, null or another
// type. number_or_null writes it back (null, not 0, for what was not measured).
inline std::optional<double> optional_num(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = field(j, key);
  return v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt;
}
inline nlohmann::json number_or_null(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

}  // namespace edgeprobe::json_read
