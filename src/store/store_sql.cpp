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
  JOIN configurations c ON c.run_id = t.owner_id AND t.phase = 'test' || CAST(c.ordinal AS TEXT)
WHERE t.owner_kind = 'run' AND t.id = (SELECT max(l.id) FROM telemetry_summaries l
  WHERE l.owner_kind = 'run' AND l.owner_id = t.owner_id AND l.phase = t.phase)
)sql";

const char* const kDeleteMovedTestSummaries = R"sql(
DELETE FROM telemetry_summaries WHERE owner_kind = 'run' AND EXISTS (SELECT 1 FROM configurations c
  WHERE c.run_id = telemetry_summaries.owner_id AND telemetry_summaries.phase = 'test' || CAST(c.ordinal AS TEXT))
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
  const nlohmann::json status = take("status"), error = take("error"), run = take("run_id"), attempt = take("attempt");
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

}  // namespace edgeprobe::store::sql
