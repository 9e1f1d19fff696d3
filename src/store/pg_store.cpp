#include "store/pg_store.h"

#include <algorithm>
#include <map>
#include <utility>

#include "core/error.h"
#include "store/pg_conn.h"
#include "store/pg_schema.h"
#include "store/store_rows.h"
#include "store/store_sql.h"

namespace edgeprobe::store {
namespace {

using pg::param;
using pg::param_or_null;
using pg::Result;
using pg::Transaction;
using rows::parse_stored;
using rows::to_text;

nlohmann::json null_if_empty(const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); }

// A shared query (store_sql.h) as PostgreSQL writes it, with `tail` appended.
std::string pg_sql(const char* query, const char* tail = "") {
  return sql::text(sql::kPostgresql, query) + tail;
}

}  // namespace

PgStore::PgStore(std::unique_ptr<pg::Connection> conn) : conn_(std::move(conn)) {}
PgStore::~PgStore() = default;

std::unique_ptr<PgStore> PgStore::open(const std::string& url, Mode mode) {
  auto conn = std::make_unique<pg::Connection>(url, redact_password(url));
  pg::migrate(*conn, mode);
  return std::unique_ptr<PgStore>(new PgStore(std::move(conn)));
}

std::string PgStore::location() const { return conn_->shown(); }

int PgStore::latest_schema_version() { return pg::latest_schema_version(); }
int PgStore::schema_version() const { return pg::schema_version(*conn_); }

RunId PgStore::begin_run(const std::string& kind, const nlohmann::json& provenance, const nlohmann::json& plan) {
  if (!is_valid_run_kind(kind))
    throw_bad_input("{}: run kind '{}' is not a valid name ([a-z][a-z0-9_-]{{0,31}})", location(), kind);
  const rows::DeviceColumns device = rows::device_columns(provenance);
  // One statement: its own committed transaction.
  static const std::string insert = pg_sql(sql::kInsertRun, " RETURNING id");
  return conn_
      ->exec(insert.c_str(),
             {param(kind), param_or_null(device.id), param_or_null(device.json),
              param_or_null(rows::model_label(provenance)), param(to_text(provenance)), param(to_text(plan))})
      .integer(0, 0);
}

RunRecord PgStore::get_run(RunId run) const {
  static const std::string query = pg_sql(sql::kGetRun);
  const Result r = conn_->exec(query.c_str(), {param(run)});
  if (r.rows() == 0) throw_bad_input("{}: no run {}", location(), run);
  RunRecord rec;
  rec.id = r.integer(0, 0);
  rec.created_at = r.text(0, 1);
  rec.finished_at = r.text(0, 2);
  rec.kind = r.text(0, 3);
  rec.status = r.text(0, 4);
  rec.error = r.text(0, 5);
  rec.device_id = r.text(0, 6);
  rec.provenance = parse_stored(r.text(0, 7), location(), "provenance");
  rec.plan = parse_stored(r.text(0, 8), location(), "plan");
  return rec;
}

void PgStore::resume_run(RunId run) {
  const RunRecord r = get_run(run);
  if (r.status == "complete") throw_bad_input("run {} is already complete; nothing to resume", run);
  static const std::string update = pg_sql(sql::kResumeRun);
  conn_->exec(update.c_str(), {param(run)});
}

int64_t PgStore::add_configuration(RunId run, int64_t ordinal, const nlohmann::json& config) {
  Transaction tx(*conn_);
  // Two controllers resuming one run may add the same configuration at once: the loser's
  // insert waits for the winner's commit, does nothing, and reads the winner's row.
  static const std::string insert =
      pg_sql(sql::kInsertConfiguration, " ON CONFLICT (run_id, ordinal) DO NOTHING RETURNING id");
  static const std::string select = pg_sql(sql::kConfiguration);
  const Result inserted = conn_->exec(insert.c_str(), {param(run), param(ordinal), param(to_text(config))});
  if (inserted.rows() == 1) {
    tx.commit();
    return inserted.integer(0, 0);
  }
  const Result existing = conn_->exec(select.c_str(), {param(run), param(ordinal)});
  if (existing.rows() != 1)
    throw Error(ErrorKind::kBug, fmt::format("run {}: configuration {} neither inserted nor found", run, ordinal));
  // Compared as stored, so a config with invalid UTF-8 still matches itself.
  if (parse_stored(existing.text(0, 1), location(), "configuration") != nlohmann::json::parse(to_text(config)))
    throw_bad_input("run {}: configuration {} differs from the stored one; resume needs the same plan", run, ordinal);
  tx.commit();
  return existing.integer(0, 0);
}

void PgStore::finish_configuration(RunId run, int64_t ordinal, Status status, const std::string& error) {
  static const std::string update = pg_sql(sql::kFinishConfiguration);
  const Result r = conn_->exec(update.c_str(), {param(std::string(to_string(status))), param_or_null(error),
                                                param(run), param(ordinal)});
  if (r.affected_rows() != 1) throw Error(ErrorKind::kBug, fmt::format("run {} has no configuration {}", run, ordinal));
}

int64_t PgStore::record_repetition(RunId run, int64_t configuration_ordinal, int64_t repetition,
                                   const nlohmann::json& result) {
  Transaction tx(*conn_);
  static const std::string select = pg_sql(sql::kConfiguration);
  static const std::string insert = pg_sql(sql::kInsertRepetition, " RETURNING id");
  const Result config = conn_->exec(select.c_str(), {param(run), param(configuration_ordinal)});
  if (config.rows() != 1)
    throw Error(ErrorKind::kBug, fmt::format("run {} has no configuration {}", run, configuration_ordinal));
  const int64_t id =
      conn_->exec(insert.c_str(), {param(config.integer(0, 0)), param(repetition), param(to_text(result))})
          .integer(0, 0);
  tx.commit();
  return id;
}

int64_t PgStore::record_turn(RunId run, const TurnKey& key, const nlohmann::json& result) {
  static const std::string insert = pg_sql(sql::kInsertTurn, " RETURNING id");
  // One statement: its own committed transaction.
  return conn_
      ->exec(insert.c_str(), {param(run), param(key.configuration_ordinal), param(key.round),
                              param(key.conversation_id), param(key.turn_index), param(to_text(result))})
      .integer(0, 0);
}

void PgStore::record_run_summary(RunId run, const std::string& phase, const nlohmann::json& summary) {
  Transaction tx(*conn_);
  get_run(run);  // throws for an unknown run
  static const std::string insert = pg_sql(sql::kInsertTelemetry);
  conn_->exec(insert.c_str(), {param(std::string("run")), param(run), param(phase), param(to_text(summary))});
  tx.commit();
}

void PgStore::record_test(RunId run, int64_t configuration_ordinal, const nlohmann::json& test) {
  static const std::string query = pg_sql(sql::kRecordTest);
  const Result r =
      conn_->exec(query.c_str(), {param(run), param(configuration_ordinal), param(to_text(test))});
  if (r.affected_rows() != 1)
    throw Error(ErrorKind::kBug, fmt::format("run {} has no configuration {}", run, configuration_ordinal));
}

void PgStore::record_lab_job(RunId lab_run, const LabJob& job) {
  static const std::string query = pg_sql(sql::kRecordLabJob);
  Transaction tx(*conn_);
  get_run(lab_run);  // throws for an unknown run
  conn_->exec(query.c_str(),
              {param(lab_run), param(job.device), param(job.job), param(job.status), param(job.attempt),
               param_or_null(job.error), job.device_run ? param(job.device_run) : pg::Param{},
               param(to_text(job.detail))});
  tx.commit();
}

std::vector<LabJob> PgStore::lab_jobs(RunId lab_run) const {
  static const std::string query = pg_sql(sql::kLabJobs);
  get_run(lab_run);
  const Result r = conn_->exec(query.c_str(), {param(lab_run)});
  std::vector<LabJob> out;
  for (int i = 0; i < r.rows(); ++i)
    out.push_back({r.text(i, 0), r.integer(i, 1), r.text(i, 2), r.integer(i, 3), r.text(i, 4),
                   r.is_null(i, 5) ? 0 : r.integer(i, 5), parse_stored(r.text(i, 6), location(), "lab job")});
  return out;
}

void PgStore::finish_run(RunId run, Status status, const std::string& error) {
  static const std::string update = sql::text(sql::kPostgresql, sql::finish_run(sql::kPostgresql));
  const Result r =
      conn_->exec(update.c_str(), {param(std::string(to_string(status))), param_or_null(error), param(run)});
  if (r.affected_rows() != 1) throw_bad_input("{}: no run {}", location(), run);
}

std::vector<RunSummary> PgStore::list_runs(const RunFilter& filter) const {
  std::vector<std::string> devices;
  if (!filter.device.empty() && !filter.device_exact) {
    const Result d = conn_->exec(sql::matching_devices_sql(sql::kPostgresql).c_str(), {param(filter.device)});
    for (int i = 0; i < d.rows(); ++i) devices.push_back(d.text(i, 0));
  }
  const sql::RunListQuery query = sql::list_runs_query(filter, sql::kPostgresql, devices);
  std::vector<pg::Param> params(query.params.begin(), query.params.end());
  const Result r = conn_->exec(query.sql.c_str(), params);
  std::vector<RunSummary> runs;
  for (int i = 0; i < r.rows(); ++i) {
    RunSummary s;
    s.id = r.integer(i, 0);
    s.created_at = r.text(i, 1);
    s.finished_at = r.text(i, 2);
    s.kind = r.text(i, 3);
    s.status = r.text(i, 4);
    s.device_id = r.text(i, 5);
    s.model = r.text(i, 6);
    s.configurations = r.integer(i, 7);
    s.repetitions = r.integer(i, 8);
    s.turns = r.integer(i, 9);
    runs.push_back(std::move(s));
  }
  if (filter.last > 0) std::reverse(runs.begin(), runs.end());  // the query takes the newest first
  return runs;
}

nlohmann::json PgStore::load_run(RunId run) const {
  // A handful of queries for the whole run, not one per unit: the server may be across
  // a network, where a round trip per repetition would add up.
  Transaction tx(*conn_);
  conn_->exec("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");  // one snapshot: a run being written reads whole
  const RunRecord r = get_run(run);
  std::map<std::pair<std::string, int64_t>, nlohmann::json> telemetry;  // (owner kind, id) -> summaries
  const Result t = conn_->exec(
      "SELECT owner_kind, owner_id, phase, summary_json FROM telemetry_summaries WHERE "
      "(owner_kind = 'run' AND owner_id = $1) "
      "OR (owner_kind = 'repetition' AND owner_id IN (SELECT p.id FROM repetitions p "
      "    JOIN configurations c ON p.configuration_id = c.id WHERE c.run_id = $1)) "
      "OR (owner_kind = 'turn' AND owner_id IN (SELECT id FROM turns WHERE run_id = $1)) "
      "ORDER BY id",
      {param(run)});
  for (int i = 0; i < t.rows(); ++i) {
    nlohmann::json& list = telemetry[{t.text(i, 0), t.integer(i, 1)}];
    if (list.is_null()) list = nlohmann::json::array();
    list.push_back({{"phase", t.text(i, 2)}, {"summary", parse_stored(t.text(i, 3), location(), "telemetry")}});
  }
  auto telemetry_of = [&](const char* kind, int64_t id) {
    const auto it = telemetry.find({kind, id});
    return it == telemetry.end() ? nlohmann::json::array() : it->second;
  };

  nlohmann::json doc;
  doc["schema_version"] = latest_schema_version();
  doc["run"] = {{"id", r.id},
                {"created_at", r.created_at},
                {"finished_at", null_if_empty(r.finished_at)},
                {"kind", r.kind},
                {"status", r.status},
                {"error", null_if_empty(r.error)},
                {"device_id", null_if_empty(r.device_id)},
                {"provenance", r.provenance},
                {"plan", r.plan}};
  doc["configurations"] = nlohmann::json::array();
  static const std::string configurations = pg_sql(sql::kConfigurationsWithTests);
  const Result c = conn_->exec(configurations.c_str(), {param(run)});
  std::map<int64_t, size_t> index_of;  // configuration ordinal -> position in doc
  for (int i = 0; i < c.rows(); ++i) {
    index_of[c.integer(i, 1)] = doc["configurations"].size();
    doc["configurations"].push_back(
        {{"ordinal", c.integer(i, 1)},
         {"status", c.text(i, 2)},
         {"error", c.is_null(i, 3) ? nlohmann::json(nullptr) : nlohmann::json(c.text(i, 3))},
         {"config", parse_stored(c.text(i, 4), location(), "configuration")},
         {"repetitions", nlohmann::json::array()},
         {"test",
          c.is_null(i, 5) ? nlohmann::json(nullptr) : parse_stored(c.text(i, 5), location(), "test")}});
  }
  const Result p = conn_->exec(
      "SELECT c.ordinal, p.id, p.ordinal, p.recorded_at, p.result_json FROM repetitions p "
      "JOIN configurations c ON p.configuration_id = c.id WHERE c.run_id = $1 ORDER BY c.ordinal, p.ordinal",
      {param(run)});
  for (int i = 0; i < p.rows(); ++i)
    doc["configurations"][index_of.at(p.integer(i, 0))]["repetitions"].push_back(
        {{"ordinal", p.integer(i, 2)},
         {"recorded_at", p.text(i, 3)},
         {"result", parse_stored(p.text(i, 4), location(), "repetition")},
         {"telemetry", telemetry_of("repetition", p.integer(i, 1))}});
  doc["turns"] = nlohmann::json::array();
  static const std::string turns = pg_sql(sql::kTurnsOfRun);
  const Result u = conn_->exec(turns.c_str(), {param(run)});
  for (int i = 0; i < u.rows(); ++i)
    doc["turns"].push_back({{"configuration_ordinal", u.integer(i, 1)},
                            {"round", u.integer(i, 2)},
                            {"conversation_id", u.text(i, 3)},
                            {"turn_index", u.integer(i, 4)},
                            {"recorded_at", u.text(i, 5)},
                            {"result", parse_stored(u.text(i, 6), location(), "turn")},
                            {"telemetry", telemetry_of("turn", u.integer(i, 0))}});
  doc["telemetry"] = telemetry_of("run", run);
  tx.commit();
  return doc;
}

CompletedUnits PgStore::completed_units(RunId run) const {
  get_run(run);
  CompletedUnits done;
  static const std::string repetitions = pg_sql(sql::kCompletedRepetitions);
  static const std::string turns = pg_sql(sql::kCompletedTurns);
  static const std::string configurations = pg_sql(sql::kCompleteConfigurations);
  const Result p = conn_->exec(repetitions.c_str(), {param(run)});
  for (int i = 0; i < p.rows(); ++i)
    done.repetitions[{p.integer(i, 0), p.integer(i, 1)}] = parse_stored(p.text(i, 2), location(), "repetition");
  const Result t = conn_->exec(turns.c_str(), {param(run)});
  for (int i = 0; i < t.rows(); ++i)
    done.turns[{t.integer(i, 0), t.integer(i, 1), t.text(i, 2), t.integer(i, 3)}] =
        parse_stored(t.text(i, 4), location(), "turn");
  const Result c = conn_->exec(configurations.c_str(), {param(run)});
  for (int i = 0; i < c.rows(); ++i) done.complete_configurations.insert(c.integer(i, 0));
  return done;
}

std::string PgStore::integrity_check() const { return pg::integrity_check(*conn_); }

}  // namespace edgeprobe::store
