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

std::string matching_devices_sql(Dialect dialect) {
  return dialect == Dialect::kSqlite ? "SELECT DISTINCT device_id FROM runs WHERE instr(device_id, ?1) > 0"
                                     : "SELECT DISTINCT device_id FROM runs WHERE strpos(device_id, $1) > 0";
}

RunListQuery list_runs_query(const RunFilter& filter, Dialect dialect, const std::vector<std::string>& device_ids) {
  RunListQuery q;
  auto placeholder = [&](std::string value) {
    q.params.push_back(std::move(value));
    return fmt::format("{}{}", dialect == Dialect::kSqlite ? '?' : '$', q.params.size());
  };
  std::string where;
  if (!filter.kind.empty()) where += " AND r.kind = " + placeholder(filter.kind);
  if (!filter.device.empty() && filter.device_exact) where += " AND r.device_id = " + placeholder(filter.device);
  if (!filter.device.empty() && !filter.device_exact) {
    std::string list;
    for (const std::string& id : device_ids) list += (list.empty() ? "" : ", ") + placeholder(id);
    where += list.empty() ? " AND 0 = 1" : " AND r.device_id IN (" + list + ")";  // no device matched
  }
  if (!filter.model.empty()) where += " AND r.model = " + placeholder(filter.model);
  q.sql =
      "SELECT r.id, r.created_at, r.finished_at, r.kind, r.status, r.device_id, r.model, "
      "(SELECT count(*) FROM configurations c WHERE c.run_id = r.id), "
      "(SELECT count(*) FROM repetitions p JOIN configurations c ON p.configuration_id = c.id "
      " WHERE c.run_id = r.id), "
      "(SELECT count(*) FROM turns t WHERE t.run_id = r.id) "
      "FROM runs r WHERE 1 = 1" +
      where;
  if (filter.last > 0)
    q.sql += " ORDER BY r.id DESC LIMIT " + std::to_string(filter.last);  // a number: no quoting to get wrong
  else
    q.sql += " ORDER BY r.id";
  return q;
}

}  // namespace edgeprobe::store::rows
