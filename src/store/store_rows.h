#pragma once
// Internal to src/store: how a unit's JSON becomes a row and back, the same for every
// backend (SQLite, PostgreSQL), so both stores hold and return identical documents.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

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

// list_runs() for both backends, with only the conditions the filter uses, so each
// can be answered from an index (runs_kind, runs_device_id, runs_model) instead of a
// scan of every run. Columns: id, created_at, finished_at, kind, status, device_id,
// model, configurations, repetitions, turns. With filter.last the rows come newest first.
enum class Dialect { kSqlite, kPostgresql };
struct RunListQuery {
  std::string sql;
  std::vector<std::string> params;  // text, for ?1.. / $1.. in order
};
// A part of a device id is matched in two steps: first the ids that contain it
// (matching_devices_sql, one parameter: read from the device index alone, which holds
// no JSON), then list_runs_query with those ids, `device_ids`, as an exact IN list. One
// query with a subquery left PostgreSQL guessing a third of all runs would match, so it
// read every run (7 s on 100,000) for the 500 of one device.
std::string matching_devices_sql(Dialect dialect);
RunListQuery list_runs_query(const RunFilter& filter, Dialect dialect,
                             const std::vector<std::string>& device_ids = {});

}  // namespace edgeprobe::store::rows
