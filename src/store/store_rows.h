#pragma once
// Internal to src/store: how a unit's JSON becomes a row and back, the same for every
// backend (SQLite, PostgreSQL), so both stores hold and return identical documents.
#include <nlohmann/json.hpp>
#include <string>

#include "store/store.h"

namespace edgeprobe::store::rows {

// Results carry strings from the outside world (paths, hostnames, model names, generated
// text) that need not be valid UTF-8; dump() would throw and lose the whole unit, so
// invalid bytes become U+FFFD instead.
std::string to_text(const nlohmann::json& j);

// Parses a stored JSON column; unreadable text means a damaged store (Error(kBadInput)).
nlohmann::json parse_stored(const std::string& text, const std::string& location, const char* what);

// The runs.device_id and runs.device columns of a run with this provenance: its
// "device" object and that object's "id"; empty when the provenance has none.
struct DeviceColumns {
  std::string id;
  std::string json;
};
DeviceColumns device_columns(const nlohmann::json& provenance);

// "tiny.gguf" or "a.gguf,b.gguf" for `runs`: the model file names in a provenance.
std::string model_label(const nlohmann::json& provenance);

}  // namespace edgeprobe::store::rows
