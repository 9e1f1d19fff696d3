#pragma once
// Internal to src/store: the SQL both backends run, written once. Queries are written in
// SQLite's spelling with numbered placeholders (?1, ?2, ...); text() gives a backend's
// own. What else differs between SQLite and PostgreSQL (column types, the clock) is data
// in a Dialect, not a second copy of the query.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "store/store.h"

namespace edgeprobe::store::sql {

struct Dialect {
  const char* name;
  char placeholder;      // '?' (?1) or '$' ($1)
  const char* integer;   // a 64-bit integer column
  const char* utc_now;   // the time as 2026-11-30T22:18:21.123Z, as every timestamp is stored
  const char* contains;  // fmt pattern: {0} holds {1} as a substring
};

inline constexpr Dialect kSqlite{"SQLite", '?', "INTEGER", "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')",
                                 "instr({0}, {1}) > 0"};
inline constexpr Dialect kPostgresql{
    "PostgreSQL", '$', "BIGINT",
    R"(to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))",
    "strpos({0}, {1}) > 0"};

// `query` with each ?N placeholder as `dialect` writes it; text in quotes is left alone.
std::string text(const Dialect& dialect, std::string_view query);

// ---- schema v5: tests and lab jobs get tables of their own --------------------------------

// The two tables, for a migration to run as one script.
std::string create_v5_tables(const Dialect& dialect);
// Moves each run's test summaries (phase "test<ordinal>" of a configuration it has, or a
// session configuration's analysis "config<ordinal>"; the last one written, as readers
// took it) into `tests`, then deletes every one moved or superseded. No parameters.
extern const char* const kMoveTestSummaries;
extern const char* const kDeleteMovedTestSummaries;
// Lab runs' job summaries ("device:NAME:jobK"): id, owner_id, phase, summary_json, oldest
// first, so an upsert of each in order leaves the latest.
extern const char* const kLabJobSummaries;
extern const char* const kDeleteSummary;  // ?1: id

// The LabJob a v4 job summary recorded, or nullopt when the phase or summary is not one.
std::optional<LabJob> lab_job_from_summary(const std::string& phase, const nlohmann::json& summary);

// ---- the typed rows -----------------------------------------------------------------------

// ?1 run, ?2 configuration ordinal, ?3 the test's JSON: inserts or replaces; changes no
// row when the run has no such configuration.
extern const char* const kRecordTest;
// ?1 run, ?2 device, ?3 job, ?4 status, ?5 attempt, ?6 error (NULL: none), ?7 device run
// (NULL: none), ?8 detail JSON: inserts or replaces.
extern const char* const kRecordLabJob;
// ?1 run: device, job, status, attempt, error, device_run_id, detail_json.
extern const char* const kLabJobs;
// ?1 run: each configuration with its test: id, ordinal, status, error, config_json,
// test result_json (NULL: none).
extern const char* const kConfigurationsWithTests;

// ---- runs and their units ----------------------------------------------------------------
// Each backend takes a new row's id its own way (sqlite3_last_insert_rowid, RETURNING id).

// ?1 kind, ?2 device_id, ?3 device, ?4 model, ?5 provenance, ?6 plan.
extern const char* const kInsertRun;
// ?1 run: id, created_at, finished_at, kind, status, error, device_id, provenance_json, plan_json.
extern const char* const kGetRun;
extern const char* const kResumeRun;  // ?1 run
// ?1 status, ?2 error, ?3 run; sets finished_at to the dialect's clock.
std::string finish_run(const Dialect& dialect);
// ?1 run, ?2 ordinal: id, config_json.
extern const char* const kConfiguration;
extern const char* const kInsertConfiguration;  // ?1 run, ?2 ordinal, ?3 config
// ?1 status, ?2 error, ?3 run, ?4 ordinal.
extern const char* const kFinishConfiguration;
// ?1 owner kind, ?2 owner id, ?3 phase, ?4 summary.
extern const char* const kInsertTelemetry;
extern const char* const kInsertRepetition;  // ?1 configuration id, ?2 ordinal, ?3 result
// ?1 run, ?2 configuration ordinal, ?3 round, ?4 conversation, ?5 turn index, ?6 result.
extern const char* const kInsertTurn;
// ?1 run: id, configuration_ordinal, round, conversation_id, turn_index, recorded_at,
// result_json, in the order load_run lists them.
extern const char* const kTurnsOfRun;

// completed_units, ?1 run: (configuration ordinal, repetition ordinal, result_json);
// (configuration ordinal, round, conversation_id, turn_index, result_json); the ordinals of
// complete configurations.
extern const char* const kCompletedRepetitions;
extern const char* const kCompletedTurns;
extern const char* const kCompleteConfigurations;

// list_runs() for both backends, with only the conditions the filter uses, so each
// can be answered from an index (runs_kind, runs_device_id, runs_model) instead of a
// scan of every run. Columns: id, created_at, finished_at, kind, status, device_id,
// model, configurations, repetitions, turns. With filter.last the rows come newest first.
struct RunListQuery {
  std::string sql;
  std::vector<std::string> params;  // text, for the placeholders in order
};
// A part of a device id is matched in two steps: first the ids that contain it
// (matching_devices_sql, one parameter: read from the device index alone, which holds
// no JSON), then list_runs_query with those ids, `device_ids`, as an exact IN list. One
// query with a subquery left PostgreSQL guessing a third of all runs would match, so it
// read every run (7 s on 100,000) for the 500 of one device.
std::string matching_devices_sql(const Dialect& dialect);
RunListQuery list_runs_query(const RunFilter& filter, const Dialect& dialect,
                             const std::vector<std::string>& device_ids = {});

}  // namespace edgeprobe::store::sql
