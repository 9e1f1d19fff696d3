#include "store/sqlite_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <thread>
#include <utility>

#include "core/error.h"
#include "store/sqlite_schema.h"
#include "store/sqlite_util.h"
#include "store/store_rows.h"
#include "store/store_sql.h"

namespace edgeprobe::store {
namespace {

using rows::model_label;
using rows::parse_stored;
using rows::to_text;
using sqlite::exec;
using sqlite::fail;
using sqlite::pragma_integer;
using sqlite::Statement;
using sqlite::Transaction;

// Switching a file to WAL takes an exclusive lock that SQLite's busy handler does not wait
// for, so when several processes open one new store at once (parallel tests, a lab's
// controllers) all but one get SQLITE_BUSY: retry for as long as a writer would wait.
void enable_wal(sqlite3* db, const std::string& path) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(SqliteStore::kBusyTimeoutMs);
  for (;;) {
    sqlite3_stmt* st = nullptr;
    int rc = sqlite3_prepare_v2(db, "PRAGMA journal_mode = WAL", -1, &st, nullptr);
    std::string mode;
    if (rc == SQLITE_OK) rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) mode = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW) {
      if (mode != "wal") throw_environment("{}: cannot use write-ahead logging (journal mode {})", path, mode);
      return;
    }
    if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || std::chrono::steady_clock::now() > deadline)
      throw_environment("{}: results database: cannot switch to write-ahead logging: {}", path, sqlite3_errstr(rc));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

std::unique_ptr<SqliteStore> SqliteStore::open(const std::string& path, Mode mode) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (mode == Mode::kMustExist) {
    if (!fs::exists(path, ec)) throw_bad_input("{}: no results database there (nothing recorded yet?)", path);
  } else if (const fs::path parent = fs::path(path).parent_path(); !parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) throw_environment("{}: cannot create directory {}: {}", path, parent.string(), ec.message());
  }
  const fs::file_status status = fs::status(path, ec);
  if (fs::is_directory(status)) throw_bad_input("{}: is a directory, not a results database", path);
  // Refused before anything opens it: open(2) of a FIFO waits for a writer that never
  // comes, and a device or socket is no database either.
  if (fs::exists(status) && !fs::is_regular_file(status))
    throw_bad_input("{}: is a {}, not a results database; give --db a SQLite file (or a PostgreSQL URL)", path,
                    fs::is_fifo(status) ? "named pipe" : fs::is_socket(status) ? "socket" : "device");

  try {
    return open_read_write(path);
  } catch (const Error& e) {
    // A store that exists but cannot be written here (a read-only mount, a full disk:
    // SQLite cannot even make its shared-memory file) is still read, so `runs` and
    // `export` work where the data is readable; a writer then fails at its first write,
    // naming the cause. Damaged or foreign files (kBadInput) are not retried.
    if (mode != Mode::kMustExist || e.kind() != ErrorKind::kEnvironment) throw;
    try {
      return open_read_only(path);
    } catch (const Error&) {
      throw e;  // the first cause is the one to fix
    }
  }
}

std::unique_ptr<SqliteStore> SqliteStore::open_read_write(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  std::unique_ptr<SqliteStore> store(new SqliteStore(raw, path));  // closes raw on any throw below
  if (rc != SQLITE_OK) fail(raw, rc, path, "open");
  // A results file may come from someone else: refuse to run SQL functions with side
  // effects from its triggers or views, and forbid writes that corrupt the file
  // (https://www.sqlite.org/security.html, "defense against dark arts").
  sqlite3_db_config(raw, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);
  sqlite::check_is_ours(raw, path);
  // WAL: a killed writer leaves committed transactions in the -wal file, which the next
  // open replays; readers (`edgeprobe runs` during a run) do not block the writer.
  enable_wal(raw, path);
  // FULL fsyncs the WAL at every commit. NORMAL would already survive kill -9 (the OS
  // keeps the written pages), but not a power cut, and a phone that shuts down from heat
  // mid-run is exactly the case this store exists for; one fsync per turn or repetition
  // costs nothing next to seconds of inference.
  exec(raw, path, "PRAGMA synchronous = FULL");
  exec(raw, path, "PRAGMA foreign_keys = ON");
  sqlite::migrate(raw, path);
  sqlite::check_tables(raw, path);
  return store;
}

std::unique_ptr<SqliteStore> SqliteStore::open_read_only(const std::string& path) {
  namespace fs = std::filesystem;
  // Without a -wal file holding commits, the main file is the whole store and can be read
  // as immutable: no -shm, no locks, nothing written. With one, SQLite must read it
  // through the -shm index, which then has to exist already.
  std::error_code ec;
  const auto wal_bytes = fs::file_size(path + "-wal", ec);
  const bool wal_pending = !ec && wal_bytes > 0;
  std::string uri = "file:";
  for (unsigned char c : fs::absolute(path).string()) {
    if (std::isalnum(c) || std::strchr("/-_.~", c)) uri += static_cast<char>(c);
    else uri += fmt::format("%{:02X}", c);
  }
  uri += wal_pending ? "?mode=ro" : "?immutable=1";
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(uri.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  std::unique_ptr<SqliteStore> store(new SqliteStore(raw, path));
  if (rc != SQLITE_OK) fail(raw, rc, path, "open read-only");
  sqlite3_db_config(raw, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);
  sqlite::check_is_ours(raw, path);
  if (const int64_t v = pragma_integer(raw, path, "PRAGMA user_version"); v != latest_schema_version())
    throw_environment("{}: results database (schema v{}) needs migrating to v{}, which needs it writable here", path, v,
                      latest_schema_version());
  sqlite::check_tables(raw, path);
  return store;
}

SqliteStore::~SqliteStore() { sqlite3_close(db_); }

int SqliteStore::schema_version() const { return static_cast<int>(pragma_integer(db_, path_, "PRAGMA user_version")); }
int SqliteStore::latest_schema_version() { return sqlite::latest_schema_version(); }

int SqliteStore::busy_timeout_ms() const {
  return static_cast<int>(pragma_integer(db_, path_, "PRAGMA busy_timeout"));
}

RunId SqliteStore::begin_run(const std::string& kind, const nlohmann::json& provenance, const nlohmann::json& plan) {
  if (!is_valid_run_kind(kind))
    throw_bad_input("{}: run kind '{}' is not a valid name ([a-z][a-z0-9_-]{{0,31}})", path_, kind);
  const rows::DeviceColumns device = rows::device_columns(provenance);
  Transaction tx(db_, path_);
  Statement s(db_, path_, sql::kInsertRun);
  s.bind(1, kind).bind_or_null(2, device.id).bind_or_null(3, device.json).bind_or_null(4, model_label(provenance));
  s.bind(5, to_text(provenance)).bind(6, to_text(plan)).step();
  const RunId id = sqlite3_last_insert_rowid(db_);
  tx.commit();
  return id;
}

RunRecord SqliteStore::get_run(RunId run) const {
  Statement s(db_, path_, sql::kGetRun);
  s.bind(1, run);
  if (!s.step()) throw_bad_input("{}: no run {}", path_, run);
  RunRecord r;
  r.id = s.integer(0);
  r.created_at = s.text(1);
  r.finished_at = s.text(2);
  r.kind = s.text(3);
  r.status = s.text(4);
  r.error = s.text(5);
  r.device_id = s.text(6);
  r.provenance = parse_stored(s.text(7), path_, "provenance");
  r.plan = parse_stored(s.text(8), path_, "plan");
  return r;
}

void SqliteStore::resume_run(RunId run) {
  const RunRecord r = get_run(run);
  if (r.status == "complete") throw_bad_input("run {} is already complete; nothing to resume", run);
  Statement s(db_, path_, sql::kResumeRun);
  s.bind(1, run).step();
}

int64_t SqliteStore::configuration_id(RunId run, int64_t ordinal) const {
  Statement s(db_, path_, sql::kConfiguration);
  s.bind(1, run).bind(2, ordinal);
  if (!s.step()) throw Error(ErrorKind::kBug, fmt::format("run {} has no configuration {}", run, ordinal));
  return s.integer(0);
}

int64_t SqliteStore::add_configuration(RunId run, int64_t ordinal, const nlohmann::json& config) {
  Transaction tx(db_, path_);
  {
    Statement existing(db_, path_, sql::kConfiguration);
    existing.bind(1, run).bind(2, ordinal);
    if (existing.step()) {
      // Compared as stored, so a config with invalid UTF-8 still matches itself.
      if (parse_stored(existing.text(1), path_, "configuration") != nlohmann::json::parse(to_text(config)))
        throw_bad_input("run {}: configuration {} differs from the stored one; resume needs the same plan", run,
                        ordinal);
      return existing.integer(0);
    }
  }
  Statement s(db_, path_, sql::kInsertConfiguration);
  s.bind(1, run).bind(2, ordinal).bind(3, to_text(config)).step();
  const int64_t id = sqlite3_last_insert_rowid(db_);
  tx.commit();
  return id;
}

void SqliteStore::finish_configuration(RunId run, int64_t ordinal, Status status, const std::string& error) {
  Statement s(db_, path_, sql::kFinishConfiguration);
  s.bind(1, std::string(to_string(status)));
  s.bind_or_null(2, error);
  s.bind(3, run).bind(4, ordinal).step();
  if (sqlite3_changes(db_) != 1)
    throw Error(ErrorKind::kBug, fmt::format("run {} has no configuration {}", run, ordinal));
}

int64_t SqliteStore::record_repetition(RunId run, int64_t configuration_ordinal, int64_t repetition,
                                       const nlohmann::json& result) {
  Transaction tx(db_, path_);
  const int64_t config_id = configuration_id(run, configuration_ordinal);
  Statement s(db_, path_, sql::kInsertRepetition);
  s.bind(1, config_id).bind(2, repetition).bind(3, to_text(result)).step();
  const int64_t id = sqlite3_last_insert_rowid(db_);
  tx.commit();
  return id;
}

int64_t SqliteStore::record_turn(RunId run, const TurnKey& key, const nlohmann::json& result) {
  Transaction tx(db_, path_);
  Statement s(db_, path_, sql::kInsertTurn);
  s.bind(1, run)
      .bind(2, key.configuration_ordinal)
      .bind(3, key.round)
      .bind(4, key.conversation_id)
      .bind(5, key.turn_index)
      .bind(6, to_text(result))
      .step();
  const int64_t id = sqlite3_last_insert_rowid(db_);
  tx.commit();
  return id;
}

void SqliteStore::record_run_summary(RunId run, const std::string& phase, const nlohmann::json& summary) {
  Transaction tx(db_, path_);
  get_run(run);  // throws for an unknown run
  Statement s(db_, path_, sql::kInsertTelemetry);
  s.bind(1, std::string("run")).bind(2, run).bind(3, phase).bind(4, to_text(summary)).step();
  tx.commit();
}

void SqliteStore::record_test(RunId run, int64_t configuration_ordinal, const nlohmann::json& test) {
  Statement s(db_, path_, sql::kRecordTest);
  s.bind(1, run).bind(2, configuration_ordinal).bind(3, to_text(test)).step();
  if (sqlite3_changes(db_) != 1)
    throw Error(ErrorKind::kBug, fmt::format("run {} has no configuration {}", run, configuration_ordinal));
}

void SqliteStore::record_lab_job(RunId lab_run, const LabJob& job) {
  Transaction tx(db_, path_);
  get_run(lab_run);  // throws for an unknown run
  Statement s(db_, path_, sql::kRecordLabJob);
  s.bind(1, lab_run).bind(2, job.device).bind(3, job.job).bind(4, job.status).bind(5, job.attempt);
  s.bind_or_null(6, job.error).bind(8, to_text(job.detail));
  if (job.device_run)
    s.bind(7, job.device_run);
  else
    s.bind_null(7);
  s.step();
  tx.commit();
}

std::vector<LabJob> SqliteStore::lab_jobs(RunId lab_run) const {
  get_run(lab_run);
  Statement s(db_, path_, sql::kLabJobs);
  s.bind(1, lab_run);
  std::vector<LabJob> out;
  while (s.step())
    out.push_back({s.text(0), s.integer(1), s.text(2), s.integer(3), s.text(4), s.integer(5),
                   parse_stored(s.text(6), path_, "lab job")});
  return out;
}

void SqliteStore::finish_run(RunId run, Status status, const std::string& error) {
  static const std::string finish = sql::finish_run(sql::kSqlite);
  Statement s(db_, path_, finish.c_str());
  s.bind(1, std::string(to_string(status)));
  s.bind_or_null(2, error);
  s.bind(3, run).step();
  if (sqlite3_changes(db_) != 1) throw_bad_input("{}: no run {}", path_, run);
}

std::vector<RunSummary> SqliteStore::list_runs(const RunFilter& filter) const {
  std::vector<std::string> devices;
  if (!filter.device.empty() && !filter.device_exact) {
    Statement d(db_, path_, sql::matching_devices_sql(sql::kSqlite).c_str());
    d.bind(1, filter.device);
    while (d.step()) devices.push_back(d.text(0));
  }
  const sql::RunListQuery query = sql::list_runs_query(filter, sql::kSqlite, devices);
  Statement s(db_, path_, query.sql.c_str());
  for (size_t i = 0; i < query.params.size(); ++i) s.bind(static_cast<int>(i + 1), query.params[i]);
  std::vector<RunSummary> runs;
  while (s.step()) {
    RunSummary r;
    r.id = s.integer(0);
    r.created_at = s.text(1);
    r.finished_at = s.text(2);
    r.kind = s.text(3);
    r.status = s.text(4);
    r.device_id = s.text(5);
    r.model = s.text(6);
    r.configurations = s.integer(7);
    r.repetitions = s.integer(8);
    r.turns = s.integer(9);
    runs.push_back(std::move(r));
  }
  if (filter.last > 0) std::reverse(runs.begin(), runs.end());  // the query takes the newest first
  return runs;
}

nlohmann::json SqliteStore::load_run(RunId run) const {
  const RunRecord r = get_run(run);
  auto telemetry_of = [&](const char* kind, int64_t id) {
    nlohmann::json out = nlohmann::json::array();
    Statement s(db_, path_,
                "SELECT phase, summary_json FROM telemetry_summaries WHERE owner_kind = ?1 AND owner_id = ?2 "
                "ORDER BY id");
    s.bind(1, std::string(kind)).bind(2, id);
    while (s.step()) out.push_back({{"phase", s.text(0)}, {"summary", parse_stored(s.text(1), path_, "telemetry")}});
    return out;
  };
  nlohmann::json doc;
  doc["schema_version"] = latest_schema_version();
  doc["run"] = {{"id", r.id},
                {"created_at", r.created_at},
                {"finished_at", r.finished_at.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.finished_at)},
                {"kind", r.kind},
                {"status", r.status},
                {"error", r.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.error)},
                {"device_id", r.device_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.device_id)},
                {"provenance", r.provenance},
                {"plan", r.plan}};
  doc["configurations"] = nlohmann::json::array();
  Statement c(db_, path_, sql::kConfigurationsWithTests);
  c.bind(1, run);
  while (c.step()) {
    nlohmann::json cj{
        {"ordinal", c.integer(1)},
        {"status", c.text(2)},
        {"error", c.is_null(3) ? nlohmann::json(nullptr) : nlohmann::json(c.text(3))},
        {"config", parse_stored(c.text(4), path_, "configuration")},
        {"repetitions", nlohmann::json::array()},
        {"test", c.is_null(5) ? nlohmann::json(nullptr) : parse_stored(c.text(5), path_, "test")}};
    Statement p(db_, path_,
                "SELECT id, ordinal, recorded_at, result_json FROM repetitions WHERE configuration_id = ?1 "
                "ORDER BY ordinal");
    p.bind(1, c.integer(0));
    while (p.step())
      cj["repetitions"].push_back({{"ordinal", p.integer(1)},
                                   {"recorded_at", p.text(2)},
                                   {"result", parse_stored(p.text(3), path_, "repetition")},
                                   {"telemetry", telemetry_of("repetition", p.integer(0))}});
    doc["configurations"].push_back(std::move(cj));
  }
  doc["turns"] = nlohmann::json::array();
  Statement t(db_, path_, sql::kTurnsOfRun);
  t.bind(1, run);
  while (t.step())
    doc["turns"].push_back({{"configuration_ordinal", t.integer(1)},
                            {"round", t.integer(2)},
                            {"conversation_id", t.text(3)},
                            {"turn_index", t.integer(4)},
                            {"recorded_at", t.text(5)},
                            {"result", parse_stored(t.text(6), path_, "turn")},
                            {"telemetry", telemetry_of("turn", t.integer(0))}});
  doc["telemetry"] = telemetry_of("run", run);
  return doc;
}

CompletedUnits SqliteStore::completed_units(RunId run) const {
  get_run(run);
  CompletedUnits done;
  Statement p(db_, path_, sql::kCompletedRepetitions);
  p.bind(1, run);
  while (p.step()) done.repetitions[{p.integer(0), p.integer(1)}] = parse_stored(p.text(2), path_, "repetition");
  Statement t(db_, path_, sql::kCompletedTurns);
  t.bind(1, run);
  while (t.step())
    done.turns[{t.integer(0), t.integer(1), t.text(2), t.integer(3)}] = parse_stored(t.text(4), path_, "turn");
  Statement c(db_, path_, sql::kCompleteConfigurations);
  c.bind(1, run);
  while (c.step()) done.complete_configurations.insert(c.integer(0));
  return done;
}

std::string SqliteStore::integrity_check() const {
  Statement s(db_, path_, "PRAGMA integrity_check");
  std::string out;
  while (s.step()) out += (out.empty() ? "" : "\n") + s.text(0);
  return out;
}

}  // namespace edgeprobe::store
