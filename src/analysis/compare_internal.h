#pragma once
// Shared by the compare_*.cpp files, not part of the analysis API.
#include <nlohmann/json.hpp>

#include <string>

namespace edgeprobe::analysis::detail {

// A JSON value as text: strings as they are, anything else as JSON.
inline std::string value_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace edgeprobe::analysis::detail
