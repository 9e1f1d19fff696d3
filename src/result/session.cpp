#include "result/session.h"

#include <fmt/format.h>

#include "core/error.h"

namespace edgeprobe::result {

using nlohmann::json;

json to_json(const SessionReport& r) {
  json configs = json::array();
  for (const auto& c : r.configs)
    configs.push_back({{"ordinal", c.ordinal},
                       {"config", c.config},
                       {"error", c.error ? json{{"kind", c.error->kind}, {"message", c.error->message}} : json(nullptr)},
                       {"analysis", c.analysis},
                       {"turns", c.turns}});
  return {{"schema_version", r.schema_version},
          {"kind", "session"},
          {"run_id", r.run_id},
          {"provenance", to_json(r.provenance)},
          {"telemetry_unavailable", r.telemetry_unavailable},
          {"configs", configs}};
}

SessionReport session_report_from_json(const json& j) {
  SessionReport r;
  r.schema_version = j.value("schema_version", kSchemaVersion);
  r.run_id = j.value("run_id", int64_t{0});
  r.provenance = provenance_from_json(j.value("provenance", json::object()));
  if (j.contains("telemetry_unavailable") && j["telemetry_unavailable"].is_array())
    for (const auto& u : j["telemetry_unavailable"])
      if (u.is_string()) r.telemetry_unavailable.push_back(u.get<std::string>());
  for (const auto& c : j.value("configs", json::array())) {
    SessionConfigResult cr;
    cr.ordinal = c.value("ordinal", 0);
    cr.config = c.value("config", json::object());
    cr.analysis = c.value("analysis", json(nullptr));
    for (const auto& t : c.value("turns", json::array())) cr.turns.push_back(t);
    if (c.contains("error") && c["error"].is_object())
      cr.error = ErrorInfo{c["error"].value("kind", "environment"), c["error"].value("message", "")};
    r.configs.push_back(std::move(cr));
  }
  return r;
}

std::vector<std::string> session_errors(const SessionReport& report, int* exit_code) {
  std::vector<std::string> errors;
  int code = 0;
  for (const auto& c : report.configs) {
    if (c.error) {
      errors.push_back(fmt::format("config {}: {}", c.ordinal, c.error->message));
      if (code == 0) code = static_cast<int>(error_kind_from_name(c.error->kind));
    }
    for (const auto& t : c.turns) {
      const json& e = t.contains("error") ? t["error"] : json();
      if (!e.is_object()) continue;
      const std::string kind = e.value("kind", "environment");
      errors.push_back(fmt::format("config {} round {} {} turn {}: {}", c.ordinal, t.value("round", 0),
                                   t.value("conversation_id", std::string("?")), t.value("turn_index", 0),
                                   e.value("message", std::string("failed"))));
      if (code == 0) code = static_cast<int>(error_kind_from_name(kind));
    }
  }
  if (exit_code) *exit_code = code;
  return errors;
}

}  // namespace edgeprobe::result
