#include "store/store_rows.h"

#include <fmt/format.h>

#include <filesystem>

#include "core/bounded_input.h"
#include "core/error.h"
#include "result/migrate.h"

namespace edgeprobe::store::rows {

std::string to_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json parse_stored(const std::string& text, const std::string& location, const char* what) {
  // Bounded like a result file: a row written by another program (or a relay's run) can
  // nest deep enough to overflow the stack of whatever copies it next.
  try {
    return parse_json_bounded(text, fmt::format("stored {}", what), "value", result::kMaxResultDepth);
  } catch (const Error& e) {
    throw_bad_input("{}: not an edgeprobe results database, or a damaged one ({})", location, e.what());
  }
}

DeviceColumns device_columns(const nlohmann::json& provenance) {
  if (!provenance.is_object()) return {};
  const auto device = provenance.find("device");
  if (device == provenance.end() || !device->is_object()) return {};
  const auto id = device->find("id");
  return {id != device->end() && id->is_string() ? id->get<std::string>() : "", to_text(*device)};
}

// result/result.h writes provenance.models[] with the file path; a single "model" object
// is accepted too.
std::string model_label(const nlohmann::json& provenance) {
  if (!provenance.is_object()) return "";
  auto label_of = [](const nlohmann::json& m) -> std::string {
    if (!m.is_object()) return "";
    if (m.contains("path") && m["path"].is_string() && !m["path"].get<std::string>().empty())
      return std::filesystem::path(m["path"].get<std::string>()).filename().string();
    if (m.contains("name") && m["name"].is_string()) return m["name"].get<std::string>();
    return "";
  };
  std::string out;
  if (provenance.contains("models") && provenance["models"].is_array()) {
    for (const nlohmann::json& m : provenance["models"]) {
      const std::string l = label_of(m);
      if (!l.empty()) out += (out.empty() ? "" : ",") + l;
    }
  } else if (provenance.contains("model")) {
    out = label_of(provenance["model"]);
  }
  return out;
}

}  // namespace edgeprobe::store::rows
