#pragma once
// SQL text for rows a test writes straight into a store (an older schema's, a bulk fill).
#include <nlohmann/json.hpp>

#include <string>

namespace edgeprobe::store_test {

// A JSON value as an SQL string literal: its text in single quotes, quotes doubled.
inline std::string sql_quoted(const nlohmann::json& j) {
  std::string out = "'";
  for (const char c : j.dump()) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

}  // namespace edgeprobe::store_test
