#include "store/store_sql.h"

#include <fmt/format.h>

#include <cctype>

namespace edgeprobe::store::sql {

std::string text(const Dialect& dialect, std::string_view query) {
  std::string out;
  out.reserve(query.size());
  bool quoted = false;
  for (size_t i = 0; i < query.size(); ++i) {
    const char c = query[i];
    if (c == '\'') quoted = !quoted;
    const bool placeholder =
        !quoted && c == '?' && i + 1 < query.size() && std::isdigit(static_cast<unsigned char>(query[i + 1]));
    out += placeholder ? dialect.placeholder : c;
  }
  return out;
}

std::string create_v5_tables(const Dialect& d) {
  // tests: a configuration's one test document (load times, test telemetry, roofline,
  // serving table, its error), keyed by the configuration, so a test recorded again
  // replaces its record. lab_jobs: a lab run's latest word on each device's job.
  return fmt::format(R"sql(
CREATE TABLE tests (
  configuration_id {int} PRIMARY KEY REFERENCES configurations(id) ON DELETE CASCADE,
  recorded_at TEXT NOT NULL DEFAULT ({now}),
  result_json TEXT NOT NULL
);
CREATE TABLE lab_jobs (
  run_id {int} NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  device TEXT NOT NULL,
  job {int} NOT NULL,
  status TEXT NOT NULL,
  attempt {int} NOT NULL DEFAULT 1,
  error TEXT,
  device_run_id {int},
  recorded_at TEXT NOT NULL DEFAULT ({now}),
  detail_json TEXT NOT NULL,
  PRIMARY KEY (run_id, device, job)
);
)sql",
                     fmt::arg("int", d.integer), fmt::arg("now", d.utc_now));
}

// A summary superseded by a later one of the same phase goes too: a resumed test wrote
// its record again, and only the last was ever read.
const char* const kMoveTestSummaries = R"sql(
INSERT INTO tests (configuration_id, result_json)
SELECT c.id, t.summary_json FROM telemetry_summaries t
  JOIN configurations c ON c.run_id = t.owner_id
   AND t.phase IN ('test' || CAST(c.ordinal AS TEXT), 'config' || CAST(c.ordinal AS TEXT))
WHERE t.owner_kind = 'run' AND t.id = (SELECT max(l.id) FROM telemetry_summaries l
  WHERE l.owner_kind = 'run' AND l.owner_id = t.owner_id AND l.phase = t.phase)
)sql";

const char* const kDeleteMovedTestSummaries = R"sql(
DELETE FROM telemetry_summaries WHERE owner_kind = 'run' AND EXISTS (SELECT 1 FROM configurations c
  WHERE c.run_id = telemetry_summaries.owner_id
    AND telemetry_summaries.phase IN ('test' || CAST(c.ordinal AS TEXT), 'config' || CAST(c.ordinal AS TEXT)))
)sql";

const char* const kLabJobSummaries = R"sql(
SELECT t.id, t.owner_id, t.phase, t.summary_json FROM telemetry_summaries t JOIN runs r ON r.id = t.owner_id
WHERE t.owner_kind = 'run' AND r.kind = 'lab' AND t.phase LIKE 'device:%' ORDER BY t.id
)sql";

const char* const kDeleteSummary = "DELETE FROM telemetry_summaries WHERE id = ?1";

std::optional<LabJob> lab_job_from_summary(const std::string& phase, const nlohmann::json& summary) {
  // device:NAME:jobK, where NAME may itself hold a colon.
  const size_t at = phase.rfind(":job");
  if (!phase.starts_with("device:") || at == std::string::npos || at <= 7 || at + 4 == phase.size() ||
      !summary.is_object())
    return std::nullopt;
  LabJob job;
  job.device = phase.substr(7, at - 7);
  for (size_t i = at + 4; i < phase.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(phase[i])) || i - at > 12) return std::nullopt;
    job.job = job.job * 10 + (phase[i] - '0');
  }
  job.detail = summary;
  auto take = [&](const char* key) {
    nlohmann::json v = summary.contains(key) ? summary[key] : nlohmann::json();
    job.detail.erase(key);
    return v;
  };
  const nlohmann::json status = take("status"), error = take("error"), run = take("run_id"),
                       attempt = take("attempt");
  job.status = status.is_string() ? status.get<std::string>() : "";
  job.error = error.is_string() ? error.get<std::string>() : "";
  job.device_run = run.is_number_integer() ? run.get<RunId>() : 0;
  if (attempt.is_number_integer()) job.attempt = attempt.get<int64_t>();
  return job;
}

const char* const kRecordTest = R"sql(
INSERT INTO tests (configuration_id, result_json)
SELECT id, ?3 FROM configurations WHERE run_id = ?1 AND ordinal = ?2
ON CONFLICT (configuration_id) DO UPDATE SET result_json = excluded.result_json, recorded_at = excluded.recorded_at
)sql";

const char* const kRecordLabJob = R"sql(
INSERT INTO lab_jobs (run_id, device, job, status, attempt, error, device_run_id, detail_json)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
ON CONFLICT (run_id, device, job) DO UPDATE SET status = excluded.status, attempt = excluded.attempt,
  error = excluded.error, device_run_id = excluded.device_run_id, recorded_at = excluded.recorded_at,
  detail_json = excluded.detail_json
)sql";

const char* const kLabJobs =
    "SELECT device, job, status, attempt, error, device_run_id, detail_json FROM lab_jobs WHERE run_id = ?1 "
    "ORDER BY device, job";

const char* const kConfigurationsWithTests =
    "SELECT c.id, c.ordinal, c.status, c.error, c.config_json, t.result_json FROM configurations c "
    "LEFT JOIN tests t ON t.configuration_id = c.id WHERE c.run_id = ?1 ORDER BY c.ordinal";

const char* const kInsertRun =
    "INSERT INTO runs (kind, status, device_id, device, model, provenance_json, plan_json) "
    "VALUES (?1, 'running', ?2, ?3, ?4, ?5, ?6)";

const char* const kGetRun =
    "SELECT id, created_at, finished_at, kind, status, error, device_id, provenance_json, plan_json "
    "FROM runs WHERE id = ?1";

const char* const kResumeRun =
    "UPDATE runs SET status = 'running', finished_at = NULL, error = NULL WHERE id = ?1";

std::string finish_run(const Dialect& d) {
  return fmt::format("UPDATE runs SET status = ?1, error = ?2, finished_at = {} WHERE id = ?3", d.utc_now);
}

const char* const kConfiguration =
    "SELECT id, config_json FROM configurations WHERE run_id = ?1 AND ordinal = ?2";

const char* const kInsertConfiguration =
    "INSERT INTO configurations (run_id, ordinal, config_json) VALUES (?1, ?2, ?3)";

const char* const kFinishConfiguration =
    "UPDATE configurations SET status = ?1, error = ?2 WHERE run_id = ?3 AND ordinal = ?4";

const char* const kInsertTelemetry =
    "INSERT INTO telemetry_summaries (owner_kind, owner_id, phase, summary_json) VALUES (?1, ?2, ?3, ?4)";

const char* const kInsertRepetition =
    "INSERT INTO repetitions (configuration_id, ordinal, result_json) VALUES (?1, ?2, ?3)";

const char* const kInsertTurn =
    "INSERT INTO turns (run_id, configuration_ordinal, round, conversation_id, turn_index, result_json) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6)";

const char* const kTurnsOfRun =
    "SELECT id, configuration_ordinal, round, conversation_id, turn_index, recorded_at, result_json "
    "FROM turns WHERE run_id = ?1 ORDER BY configuration_ordinal, round, id";

const char* const kCompletedRepetitions =
    "SELECT c.ordinal, p.ordinal, p.result_json FROM repetitions p JOIN configurations c ON p.configuration_id = c.id "
    "WHERE c.run_id = ?1";

const char* const kCompletedTurns =
    "SELECT configuration_ordinal, round, conversation_id, turn_index, result_json FROM turns WHERE run_id = ?1";

const char* const kCompleteConfigurations =
    "SELECT ordinal FROM configurations WHERE run_id = ?1 AND status = 'complete'";

std::string matching_devices_sql(const Dialect& dialect) {
  return text(dialect, "SELECT DISTINCT device_id FROM runs WHERE " +
                           fmt::format(fmt::runtime(dialect.contains), "device_id", "?1"));
}

RunListQuery list_runs_query(const RunFilter& filter, const Dialect& dialect,
                             const std::vector<std::string>& device_ids) {
  RunListQuery q;
  auto placeholder = [&](std::string value) {
    q.params.push_back(std::move(value));
    return fmt::format("{}{}", dialect.placeholder, q.params.size());
  };
  std::string where;
  if (!filter.kind.empty()) where += " AND r.kind = " + placeholder(filter.kind);
  if (!filter.device.empty() && filter.device_exact)
    where += " AND r.device_id = " + placeholder(filter.device);
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

}  // namespace edgeprobe::store::sql
