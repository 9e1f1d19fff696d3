#include "store/sqlite_schema.h"

#include <array>
#include <utility>
#include <vector>

#include "result/migrate.h"
#include "store/sqlite_util.h"
#include "store/store_rows.h"
#include "store/store_sql.h"

namespace edgeprobe::store::sqlite {
namespace {

using rows::device_columns;
using rows::DeviceColumns;
using rows::to_text;

// 'EPRS' (EdgeProbe Results Store) in PRAGMA application_id: tells our files from any
// other SQLite database (https://www.sqlite.org/pragma.html#pragma_application_id).
constexpr int32_t kApplicationId = 0x45505253;

void create_v1(sqlite3* db, const std::string& path) {
  exec(db, path, R"sql(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  finished_at TEXT,
  kind TEXT NOT NULL CHECK (kind IN ('bench', 'session')),
  status TEXT NOT NULL CHECK (status IN ('running', 'complete', 'failed')),
  error TEXT,
  provenance_json TEXT NOT NULL,
  plan_json TEXT NOT NULL
);
CREATE TABLE configurations (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL,
  config_json TEXT NOT NULL,
  status TEXT NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'complete', 'failed')),
  error TEXT,
  UNIQUE (run_id, ordinal)
);
CREATE TABLE repetitions (
  id INTEGER PRIMARY KEY,
  configuration_id INTEGER NOT NULL REFERENCES configurations(id) ON DELETE CASCADE,
  ordinal INTEGER NOT NULL,
  recorded_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  result_json TEXT NOT NULL,
  UNIQUE (configuration_id, ordinal)
);
CREATE TABLE turns (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  configuration_ordinal INTEGER NOT NULL,
  round INTEGER NOT NULL,
  conversation_id TEXT NOT NULL,
  turn_index INTEGER NOT NULL,
  recorded_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  result_json TEXT NOT NULL,
  UNIQUE (run_id, configuration_ordinal, round, conversation_id, turn_index)
);
CREATE TABLE telemetry_summaries (
  id INTEGER PRIMARY KEY,
  owner_kind TEXT NOT NULL CHECK (owner_kind IN ('run', 'configuration', 'repetition', 'turn')),
  owner_id INTEGER NOT NULL,
  phase TEXT NOT NULL,
  summary_json TEXT NOT NULL
);
CREATE INDEX telemetry_summaries_owner ON telemetry_summaries (owner_kind, owner_id);
)sql");
}

// v2: run kinds are checked by the code, not a CHECK (doctor, lab, ... come without a
// schema change); runs know their device; stored provenance is result schema v2.
void open_kinds_and_devices(sqlite3* db, const std::string& path) {
  // SQLite cannot drop a CHECK in place: rebuild the table (sqlite.org/lang_altertable.html,
  // "making other kinds of table schema changes"). migrate() has foreign keys off, so the
  // DROP does not cascade into configurations and turns.
  exec(db, path, R"sql(
CREATE TABLE runs_v2 (
  id INTEGER PRIMARY KEY,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  finished_at TEXT,
  kind TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'complete', 'failed')),
  error TEXT,
  device_id TEXT,
  device TEXT,
  provenance_json TEXT NOT NULL,
  plan_json TEXT NOT NULL
);
INSERT INTO runs_v2 (id, created_at, finished_at, kind, status, error, provenance_json, plan_json)
  SELECT id, created_at, finished_at, kind, status, error, provenance_json, plan_json FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v2 RENAME TO runs;
CREATE INDEX runs_device_id ON runs (device_id);
)sql");

  std::vector<std::pair<int64_t, std::string>> provenances;
  {
    Statement s(db, path, "SELECT id, provenance_json FROM runs");
    while (s.step()) provenances.emplace_back(s.integer(0), s.text(1));
  }
  for (const auto& [id, text] : provenances) {
    // A provenance that does not parse stays as it is: get_run reports it as damaged
    // when someone reads that run, instead of this migration locking out every run.
    const nlohmann::json old = nlohmann::json::parse(text, nullptr, false);
    if (old.is_discarded()) continue;
    const nlohmann::json upgraded = result::upgrade_provenance(old);
    const DeviceColumns device = device_columns(upgraded);
    Statement u(db, path, "UPDATE runs SET provenance_json = ?1, device_id = ?2, device = ?3 WHERE id = ?4");
    u.bind(1, to_text(upgraded)).bind_or_null(2, device.id).bind_or_null(3, device.json).bind(4, id).step();
  }
}

// v3: a run whose some tests or turns failed is 'partial' (runs.status). The CHECK is
// rebuilt as in v2; the rows, the device index and every child keep their ids.
void allow_partial_runs(sqlite3* db, const std::string& path) {
  exec(db, path, R"sql(
CREATE TABLE runs_v3 (
  id INTEGER PRIMARY KEY,
  created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  finished_at TEXT,
  kind TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('running', 'complete', 'partial', 'failed')),
  error TEXT,
  device_id TEXT,
  device TEXT,
  provenance_json TEXT NOT NULL,
  plan_json TEXT NOT NULL
);
INSERT INTO runs_v3 (id, created_at, finished_at, kind, status, error, device_id, device, provenance_json, plan_json)
  SELECT id, created_at, finished_at, kind, status, error, device_id, device, provenance_json, plan_json FROM runs;
DROP TABLE runs;
ALTER TABLE runs_v3 RENAME TO runs;
CREATE INDEX runs_device_id ON runs (device_id);
)sql");
}

// v4: a lab's years in one store (bench/store-scale.sh: 100,000 runs, 10 million
// repetitions). `runs` lists by kind, device and model, newest first: each gets an index
// (SQLite appends the rowid, so each is ordered by id within its key), and the model
// label becomes a column, so listing reads neither the provenance JSON nor every run.
// Every child table is already reached through its UNIQUE index (run_id, ...).
void index_runs_for_listing(sqlite3* db, const std::string& path) {
  exec(db, path, R"sql(
ALTER TABLE runs ADD COLUMN model TEXT;
CREATE INDEX runs_kind ON runs (kind);
)sql");
  std::vector<std::pair<int64_t, std::string>> labels;
  {
    Statement s(db, path, "SELECT id, provenance_json FROM runs");
    while (s.step()) {
      // Unreadable provenance: no label, as list_runs showed before; get_run reports it.
      const nlohmann::json provenance = nlohmann::json::parse(s.text(1), nullptr, false);
      if (!provenance.is_discarded()) labels.emplace_back(s.integer(0), rows::model_label(provenance));
    }
  }
  Statement u(db, path, "UPDATE runs SET model = ?1 WHERE id = ?2");
  for (const auto& [id, label] : labels) u.bind_or_null(1, label).bind(2, id).step(), u.reset();
  // After the backfill: one sort instead of an index update per row.
  exec(db, path, "CREATE INDEX runs_model ON runs (model)");
}

// v5: a test's own record and a lab run's word on each device's job get tables of their
// own (store_sql.cpp), instead of run summaries named "test<i>" and "device:NAME:jobK"
// that readers found again by comparing names. The summaries move into them.
void tests_and_lab_jobs(sqlite3* db, const std::string& path) {
  exec(db, path, sql::create_v5_tables(sql::kSqlite).c_str());
  exec(db, path, sql::kMoveTestSummaries);
  exec(db, path, sql::kDeleteMovedTestSummaries);
  std::vector<std::pair<int64_t, LabJob>> moves;  // summary id, run; read whole before writing
  std::vector<RunId> runs;
  {
    Statement s(db, path, sql::kLabJobSummaries);
    while (s.step()) {
      // A summary that is not a job record (unreadable, another shape) stays where it is.
      const nlohmann::json summary = nlohmann::json::parse(s.text(3), nullptr, false);
      if (auto job = sql::lab_job_from_summary(s.text(2), summary)) {
        moves.emplace_back(s.integer(0), std::move(*job));
        runs.push_back(s.integer(1));
      }
    }
  }
  Statement upsert(db, path, sql::kRecordLabJob);
  Statement remove(db, path, sql::kDeleteSummary);
  for (size_t i = 0; i < moves.size(); ++i) {
    const LabJob& j = moves[i].second;
    upsert.bind(1, runs[i]).bind(2, j.device).bind(3, j.job).bind(4, j.status).bind(5, j.attempt);
    upsert.bind_or_null(6, j.error).bind(8, to_text(j.detail));
    if (j.device_run)
      upsert.bind(7, j.device_run);
    else
      upsert.bind_null(7);
    upsert.step(), upsert.reset();
    remove.bind(1, moves[i].first).step(), remove.reset();
  }
}

// Ordered: migration i takes user_version i to i + 1. Never edit a shipped one; append a
// new one instead, so every older file can be brought forward.
using Migration = void (*)(sqlite3*, const std::string&);
constexpr std::array<Migration, 5> kMigrations{create_v1, open_kinds_and_devices, allow_partial_runs,
                                               index_runs_for_listing, tests_and_lab_jobs};

constexpr std::array<const char*, 7> kTables{
    "runs", "configurations", "repetitions", "turns", "telemetry_summaries", "tests", "lab_jobs"};

}  // namespace

int latest_schema_version() { return static_cast<int>(kMigrations.size()); }

void check_is_ours(sqlite3* db, const std::string& path) {
  // One read transaction: the three figures from one snapshot, so a file another process
  // is initialising right now reads as empty or as done, never as half of each.
  exec(db, path, "BEGIN");
  int64_t app_id = 0, version = 0, objects = 0;
  try {
    app_id = pragma_integer(db, path, "PRAGMA application_id");
    version = pragma_integer(db, path, "PRAGMA user_version");
    objects = pragma_integer(db, path, "SELECT count(*) FROM sqlite_master");
  } catch (...) {
    rollback_if_open(db);
    throw;
  }
  exec(db, path, "COMMIT");
  if (app_id == 0 && version == 0 && objects == 0) return;  // empty: ours to initialise
  if (app_id != kApplicationId)
    throw_bad_input("{}: not an edgeprobe results database (SQLite application_id {:#x}, {} schema objects)",
                    path, app_id, objects);
  if (version > latest_schema_version())
    throw_bad_input(
        "{}: not an edgeprobe results database this version can read (schema v{}, written by a newer "
        "edgeprobe; this one knows up to v{})",
        path, version, latest_schema_version());
}

void migrate(sqlite3* db, const std::string& path) { migrate_to(db, path, latest_schema_version()); }

void migrate_to(sqlite3* db, const std::string& path, int target) {
  if (target < 1 || target > latest_schema_version())
    throw Error(ErrorKind::kBug, fmt::format("no SQLite store schema v{} to migrate to", target));
  if (pragma_integer(db, path, "PRAGMA user_version") >= target) return;
  // The pragma is a no-op inside a transaction, so it is switched around it.
  exec(db, path, "PRAGMA foreign_keys = OFF");
  {
    Transaction tx(db, path);
    // Read inside the write transaction: two processes opening an old file at once must
    // not both apply the same migration.
    const int64_t version = pragma_integer(db, path, "PRAGMA user_version");
    if (version < target) {
      for (int64_t v = version; v < target; ++v) kMigrations[static_cast<size_t>(v)](db, path);
      // A rebuilt table must leave every child row with its parent.
      if (Statement fk(db, path, "PRAGMA foreign_key_check"); fk.step())
        throw_bad_input("{}: not an edgeprobe results database, or a damaged one (table {} row {} lost its parent "
                        "while migrating from schema v{})",
                        path, fk.text(0), fk.integer(1), version);
      exec(db, path, fmt::format("PRAGMA application_id = {}", kApplicationId).c_str());
      exec(db, path, fmt::format("PRAGMA user_version = {}", target).c_str());
      tx.commit();
    }
  }
  exec(db, path, "PRAGMA foreign_keys = ON");
}

void check_tables(sqlite3* db, const std::string& path) {
  for (const char* table : kTables) {
    Statement s(db, path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1");
    s.bind(1, std::string(table));
    if (!s.step() || s.integer(0) != 1)
      throw_bad_input("{}: not an edgeprobe results database (table '{}' missing)", path, table);
  }
}

}  // namespace edgeprobe::store::sqlite
