// Schema v4 (a store that holds a lab's years): a v3 file gains the listing indexes and
// the model column on open and reads back as it did; and every query `runs` makes is
// answered from an index, checked with SQLite's EXPLAIN QUERY PLAN.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <vector>

#include "store/sqlite_schema.h"
#include "store/sqlite_store.h"
#include "store/store.h"
#include "store/store_sql.h"
#include "support/run_process.h"
#include "store/sql_text.h"

namespace edgeprobe::store {
namespace {

using edgeprobe::test_support::TempDir;

class Db {
 public:
  explicit Db(const std::string& path) : path_(path) { EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK); }
  ~Db() { sqlite3_close(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;
  sqlite3* handle() { return db_; }
  void exec(const std::string& sql) {
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << "\n" << sql;
    sqlite3_free(err);
  }
  // Column `column` of every row, with text parameters bound in order.
  std::vector<std::string> column(const std::string& sql, const std::vector<std::string>& params = {},
                                  int column = 0) {
    std::vector<std::string> out;
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db_) << "\n" << sql;
    for (size_t i = 0; s && i < params.size(); ++i)
      sqlite3_bind_text(s, static_cast<int>(i + 1), params[i].c_str(), -1, SQLITE_TRANSIENT);
    while (s && sqlite3_step(s) == SQLITE_ROW) {
      const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(s, column));
      out.emplace_back(t ? t : "<null>");
    }
    sqlite3_finalize(s);
    return out;
  }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

nlohmann::json provenance_with(const std::string& device, const std::vector<std::string>& model_paths) {
  nlohmann::json p = {{"device", {{"id", device}, {"arch", "aarch64"}}}, {"models", nlohmann::json::array()}};
  for (const std::string& m : model_paths) p["models"].push_back({{"path", m}, {"sha256", "ab"}});
  return p;
}

// A store exactly at schema v3 (the store's own migrations, stopped there), with rows
// written as v3 wrote them: a run of two models with units and telemetry, a run with
// no models, and one whose provenance does not parse.
void write_v3_file(const std::string& path) {
  Db db(path);
  sqlite::migrate_to(db.handle(), path, 3);
  db.exec("INSERT INTO runs (id, created_at, finished_at, kind, status, error, device_id, device, provenance_json, "
          "plan_json) VALUES "
          "(1, '2025-03-01T10:00:00.000Z', '2025-03-01T10:05:00.000Z', 'bench', 'complete', NULL, 'dev-aa', "
          "'{\"id\":\"dev-aa\"}', " +
          store_test::sql_quoted(provenance_with("dev-aa", {"/m/tiny.gguf", "/m/draft.gguf"})) + ", '{\"repetitions\":2}'), "
          "(2, '2025-03-02T09:00:00.000Z', NULL, 'session', 'partial', NULL, 'dev-bb', '{\"id\":\"dev-bb\"}', " +
          store_test::sql_quoted(provenance_with("dev-bb", {})) + ", '{}'), "
          "(3, '2025-03-03T09:00:00.000Z', NULL, 'bench', 'failed', 'killed', NULL, NULL, 'not json', '{}')");
  db.exec("INSERT INTO configurations (id, run_id, ordinal, config_json, status) VALUES "
          "(1, 1, 0, '{\"test\":\"tg64\"}', 'complete'), (2, 1, 1, '{\"test\":\"pp512\"}', 'complete')");
  db.exec("INSERT INTO repetitions (id, configuration_id, ordinal, recorded_at, result_json) VALUES "
          "(1, 1, 0, '2025-03-01T10:01:00.000Z', '{\"decode_tokens_per_s\":21.5}'), "
          "(2, 1, 1, '2025-03-01T10:02:00.000Z', '{\"decode_tokens_per_s\":21.7}'), "
          "(3, 2, 0, '2025-03-01T10:03:00.000Z', '{\"prefill_tokens_per_s\":180.0}')");
  db.exec("INSERT INTO telemetry_summaries (owner_kind, owner_id, phase, summary_json) VALUES "
          "('repetition', 2, 'decode', '{\"temp_c_max\":51.0}'), ('run', 1, 'test0', '{\"load_ms\":[14.5]}')");
}

// What load_run returned for run 1 of that file before v4: the document is built from
// the rows alone, so it is written out here from them, not taken from the code. Since v5
// the test summary "test0" is configuration 0's test record (and configuration 1 has none).
nlohmann::json v3_document_of_run_1() {
  using nlohmann::json;
  auto rep = [](int64_t ordinal, const char* at, json result, json telemetry) {
    return json{{"ordinal", ordinal}, {"recorded_at", at}, {"result", result}, {"telemetry", telemetry}};
  };
  return {{"schema_version", SqliteStore::latest_schema_version()},
          {"run",
           {{"id", 1},
            {"created_at", "2025-03-01T10:00:00.000Z"},
            {"finished_at", "2025-03-01T10:05:00.000Z"},
            {"kind", "bench"},
            {"status", "complete"},
            {"error", nullptr},
            {"device_id", "dev-aa"},
            {"provenance", provenance_with("dev-aa", {"/m/tiny.gguf", "/m/draft.gguf"})},
            {"plan", {{"repetitions", 2}}}}},
          {"configurations",
           {{{"ordinal", 0},
             {"status", "complete"},
             {"error", nullptr},
             {"config", {{"test", "tg64"}}},
             {"repetitions",
              {rep(0, "2025-03-01T10:01:00.000Z", {{"decode_tokens_per_s", 21.5}}, json::array()),
               rep(1, "2025-03-01T10:02:00.000Z", {{"decode_tokens_per_s", 21.7}},
                   {{{"phase", "decode"}, {"summary", {{"temp_c_max", 51.0}}}}})}},
             {"test", {{"load_ms", {14.5}}}}},
            {{"ordinal", 1},
             {"status", "complete"},
             {"error", nullptr},
             {"config", {{"test", "pp512"}}},
             {"repetitions",
              {rep(0, "2025-03-01T10:03:00.000Z", {{"prefill_tokens_per_s", 180.0}}, json::array())}},
             {"test", nullptr}}}},
          {"turns", json::array()},
          {"telemetry", json::array()}};
}

TEST(ListingIndexes, AV3FileGainsTheIndexesAndTheModelColumnAndReadsBackAsBefore) {
  TempDir dir;
  const std::string path = dir.file("v3.db");
  write_v3_file(path);
  {
    Db db(path);
    ASSERT_EQ(db.column("PRAGMA user_version"), std::vector<std::string>{"3"});
    ASSERT_EQ(db.column("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs' ORDER BY name"),
              std::vector<std::string>{"runs_device_id"});
  }
  auto store = SqliteStore::open(path, Mode::kMustExist);
  EXPECT_EQ(store->schema_version(), SqliteStore::latest_schema_version());
  EXPECT_EQ(store->integrity_check(), "ok");
  EXPECT_EQ(store->load_run(1), v3_document_of_run_1());

  const std::vector<RunSummary> runs = store->list_runs();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].model, "tiny.gguf,draft.gguf");  // as v3 derived it from the provenance
  EXPECT_EQ(runs[0].repetitions, 3);
  EXPECT_EQ(runs[1].model, "");
  EXPECT_EQ(runs[2].model, "");  // the unreadable provenance: no label, and the run still lists
  EXPECT_EQ(runs[2].status, "failed");
  // A new run writes its label as it is recorded.
  const RunId fresh = store->begin_run(RunKind::kBench, provenance_with("dev-aa", {"/x/new.gguf"}), {});
  EXPECT_EQ(store->list_runs(RunFilter{"", "", false, "new.gguf", 0}).at(0).id, fresh);
  store.reset();

  Db db(path);
  EXPECT_EQ(db.column("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs' ORDER BY name"),
            (std::vector<std::string>{"runs_device_id", "runs_kind", "runs_model"}));
  EXPECT_EQ(db.column("SELECT coalesce(model, '<null>') FROM runs ORDER BY id"),
            (std::vector<std::string>{"tiny.gguf,draft.gguf", "<null>", "<null>", "new.gguf"}));
}

// The plan's problems for one listing query: a full scan of a table (SQLite's "SCAN t"
// without an index), or sorting every match to find the newest (a temporary B-tree for
// ORDER BY) where an index gives them in order. An unfiltered "newest N" walks the
// primary key backwards and stops after N: the one scan of runs that is allowed.
std::vector<std::string> plan_problems(Db& db, const RunFilter& filter) {
  const bool unfiltered = filter.kind.empty() && filter.device.empty() && filter.model.empty();
  const bool any_device = !filter.device.empty() && !filter.device_exact;  // ids matched in a set
  std::vector<std::string> steps;
  if (any_device)
    steps = db.column("EXPLAIN QUERY PLAN " + sql::matching_devices_sql(sql::kSqlite), {filter.device}, 3);
  const sql::RunListQuery query =
      sql::list_runs_query(filter, sql::kSqlite,
                           any_device ? db.column(sql::matching_devices_sql(sql::kSqlite), {filter.device})
                                      : std::vector<std::string>{});
  for (const std::string& step : db.column("EXPLAIN QUERY PLAN " + query.sql, query.params, 3)) steps.push_back(step);
  std::vector<std::string> problems;
  for (const std::string& step : steps) {
    const bool table_scan = step.starts_with("SCAN ") && step.find("INDEX") == std::string::npos;
    if (table_scan && !(unfiltered && filter.last > 0 && step == "SCAN r")) problems.push_back(step);
    if (filter.last > 0 && !any_device && step.find("TEMP B-TREE FOR ORDER BY") != std::string::npos)
      problems.push_back(step);
  }
  return problems;
}

std::vector<RunFilter> listing_queries() {
  return {
      {"", "", false, "", 50},                       // runs: the latest 50
      {"", "dev-aa", true, "", 50},                  // by device id
      {"", "aa", false, "", 50},                     // by a part of it
      {"", "", false, "tiny.gguf", 50},              // by model
      {"bench", "", false, "", 50},                  // by kind
      {"bench", "dev-aa", true, "tiny.gguf", 50},    // all at once
      {"", "dev-aa", true, "", 0},                   // every run of a device, oldest first
  };
}

TEST(ListingIndexes, EveryRunsQueryIsAnsweredFromAnIndex) {
  TempDir dir;
  const std::string path = dir.file("v4.db");
  write_v3_file(path);
  SqliteStore::open(path, Mode::kMustExist);  // migrates
  Db db(path);
  for (const RunFilter& f : listing_queries())
    EXPECT_EQ(plan_problems(db, f), std::vector<std::string>{})
        << "kind=" << f.kind << " device=" << f.device << " model=" << f.model << " last=" << f.last;
}

// The check above can fail: without the model index, listing by model scans every run.
TEST(ListingIndexes, ThePlanCheckSeesAScanWhereAnIndexIsMissing) {
  TempDir dir;
  const std::string path = dir.file("v4.db");
  write_v3_file(path);
  SqliteStore::open(path, Mode::kMustExist);
  Db db(path);
  db.exec("DROP INDEX runs_model");
  EXPECT_FALSE(plan_problems(db, RunFilter{"", "", false, "tiny.gguf", 50}).empty());
  db.exec("DROP INDEX runs_kind");
  EXPECT_FALSE(plan_problems(db, RunFilter{"bench", "", false, "", 50}).empty());
}

}  // namespace
}  // namespace edgeprobe::store
