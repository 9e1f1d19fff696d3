// A results file written by the schema-v1 store (edgeprobe before run kinds became data
// and runs knew their device) is brought to the latest schema on open, keeping every row.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "helpers.h"
#include "result/migrate.h"
#include "store/sqlite_store.h"
#include "store/store.h"
#include "support/run_process.h"
#include "store/sql_text.h"

namespace edgeprobe::store {
namespace {

using edgeprobe::test_support::TempDir;
using test::kind_of;
using test::filter;
using test::message_of;

// The v1 schema exactly as the v1 store created it: the fixture must not follow later
// edits to the store's own copy.
constexpr const char* kV1Schema = R"sql(
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
PRAGMA application_id = 1162891859;  -- 0x45505253, "EPRS"
PRAGMA user_version = 1;
PRAGMA journal_mode = WAL;
)sql";

nlohmann::json v1_provenance(const std::string& hostname) {
  return {{"edgeprobe_version", "0.4.0"},
          {"llama_cpp", {{"version", "b6500"}, {"commit", "80fb11a"}}},
          {"cpu", {{"model", "Cortex-A76"}, {"ggml_variant", "armv8.2_2"}, {"ggml_variant_library", "/l.so"},
                   {"ggml_variant_features", {{"DOTPROD", "1"}}}}},
          {"host", {{"hostname", hostname}, {"kernel", "Linux 6.1.0 aarch64"}}},
          {"started_at_utc", "2025-03-01T10:00:00Z"},
          {"command_line", "edgeprobe bench"},
          {"models", {{{"path", "/m/tiny.gguf"}, {"sha256", "ab12"}}}},
          {"isa_gap", {{"missing", nlohmann::json::array()}}}};
}

class RawDb {
 public:
  explicit RawDb(const std::string& path) { EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK); }
  ~RawDb() { sqlite3_close(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;
  void exec(const std::string& sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "") << "\n" << sql;
    sqlite3_free(err);
  }
  // Every row of a query, columns joined by '|', NULL as "<null>".
  std::vector<std::string> rows(const std::string& sql) {
    std::vector<std::string> out;
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db_);
    while (s && sqlite3_step(s) == SQLITE_ROW) {
      std::string row;
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(s, c));
        row += (c ? "|" : "") + std::string(t ? t : "<null>");
      }
      out.push_back(row);
    }
    sqlite3_finalize(s);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

// Two runs with units and telemetry, and one whose provenance names no host or CPU.
void write_v1_file(const std::string& path) {
  RawDb db(path);
  db.exec(kV1Schema);
  db.exec("INSERT INTO runs (id, created_at, finished_at, kind, status, error, provenance_json, plan_json) VALUES "
          "(1, '2025-03-01T10:00:00.000Z', '2025-03-01T10:05:00.000Z', 'bench', 'complete', NULL, " +
          store_test::sql_quoted(v1_provenance("pixel-lab-03")) + ", '{\"repetitions\":2}'), "
          "(2, '2025-03-02T09:00:00.000Z', NULL, 'session', 'failed', 'killed', " +
          store_test::sql_quoted(v1_provenance("rpi5")) + ", '{}'), "
          "(3, '2025-03-03T09:00:00.000Z', NULL, 'bench', 'running', NULL, '{\"models\":[]}', '{}')");
  db.exec("INSERT INTO configurations (id, run_id, ordinal, config_json, status) VALUES "
          "(1, 1, 0, '{\"test\":\"tg64\"}', 'complete'), (2, 1, 1, '{\"test\":\"pp512\"}', 'complete'), "
          "(3, 2, 0, '{\"test\":\"session\"}', 'running')");
  db.exec("INSERT INTO repetitions (id, configuration_id, ordinal, recorded_at, result_json) VALUES "
          "(1, 1, 0, '2025-03-01T10:01:00.000Z', '{\"decode_tokens_per_s\":21.5}'), "
          "(2, 1, 1, '2025-03-01T10:02:00.000Z', '{\"decode_tokens_per_s\":21.7}'), "
          "(3, 2, 0, '2025-03-01T10:03:00.000Z', '{\"prefill_tokens_per_s\":180.0}')");
  db.exec("INSERT INTO turns (id, run_id, configuration_ordinal, round, conversation_id, turn_index, recorded_at, "
          "result_json) VALUES (1, 2, 0, 0, 'c01', 0, '2025-03-02T09:01:00.000Z', '{\"ttft_ms\":300.0}'), "
          "(2, 2, 0, 0, 'c01', 1, '2025-03-02T09:02:00.000Z', '{\"ttft_ms\":310.0}')");
  db.exec("INSERT INTO telemetry_summaries (owner_kind, owner_id, phase, summary_json) VALUES "
          "('repetition', 1, 'decode', '{\"temp_c_max\":51.0}'), ('turn', 2, 'prefill', '{\"freq_khz\":2400000}'), "
          "('run', 1, 'qes', '{\"total\":73.7}')");
}

// The rows migration must carry over unchanged, in a form that compares as text.
std::vector<std::string> unit_rows(RawDb& db) {
  std::vector<std::string> all;
  for (const char* sql : {"SELECT * FROM configurations ORDER BY id", "SELECT * FROM repetitions ORDER BY id",
                          "SELECT * FROM turns ORDER BY id", "SELECT * FROM telemetry_summaries ORDER BY id",
                          "SELECT id, created_at, finished_at, kind, status, error, plan_json FROM runs ORDER BY id"})
    for (const std::string& row : db.rows(sql)) all.push_back(row);
  return all;
}

TEST(SchemaMigration, AV1FileOpensAtTheLatestVersionWithEveryRowAndUpgradedProvenance) {
  TempDir dir;
  const std::string path = dir.file("v1.db");
  write_v1_file(path);
  std::vector<std::string> before;
  {
    RawDb db(path);
    before = unit_rows(db);
  }
  ASSERT_EQ(before.size(), 3u + 3u + 2u + 3u + 3u);

  auto store = SqliteStore::open(path, Mode::kMustExist);
  EXPECT_EQ(store->schema_version(), SqliteStore::latest_schema_version());
  EXPECT_EQ(store->schema_version(), 5);
  EXPECT_EQ(store->integrity_check(), "ok");

  const RunRecord bench = store->get_run(1);
  EXPECT_EQ(bench.provenance, result::upgrade_provenance(v1_provenance("pixel-lab-03")));
  EXPECT_EQ(bench.provenance["engine"]["commit"], "80fb11a");
  EXPECT_EQ(bench.provenance["device"]["arch"], "aarch64");
  EXPECT_FALSE(bench.provenance.contains("llama_cpp"));
  EXPECT_EQ(bench.provenance["isa_gap"], v1_provenance("x")["isa_gap"]);  // extras kept
  EXPECT_EQ(bench.device_id, result::device_id_from("pixel-lab-03", "Cortex-A76"));
  EXPECT_EQ(store->get_run(2).device_id, result::device_id_from("rpi5", "Cortex-A76"));
  EXPECT_EQ(store->get_run(3).device_id, "");  // nothing to identify the device by
  EXPECT_EQ(store->get_run(2).error, "killed");

  // Units, telemetry and the resume bookkeeping read back as before.
  const nlohmann::json doc = store->load_run(1);
  ASSERT_EQ(doc["configurations"].size(), 2u);
  ASSERT_EQ(doc["configurations"][0]["repetitions"].size(), 2u);
  ASSERT_EQ(doc["telemetry"].size(), 1u);
  EXPECT_EQ(doc["configurations"][0]["repetitions"][1]["result"]["decode_tokens_per_s"], 21.7);
  EXPECT_EQ(doc["configurations"][0]["repetitions"][0]["telemetry"][0]["summary"]["temp_c_max"], 51.0);
  EXPECT_EQ(doc["telemetry"][0]["summary"]["total"], 73.7);
  const CompletedUnits done = store->completed_units(2);
  EXPECT_TRUE(done.has(TurnKey{0, 0, "c01", 1}));
  EXPECT_EQ(store->list_runs(filter("", bench.device_id, true)).size(), 1u);
  const std::vector<RunSummary> listed = store->list_runs();
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_EQ(listed[0].repetitions, 3);
  EXPECT_EQ(listed[1].turns, 2);
  EXPECT_EQ(listed[0].model, "tiny.gguf");

  // The kind CHECK is gone, and the rebuilt runs table still anchors its children.
  const RunId doctor = store->begin_run(RunKind::kDoctor, {}, {});
  EXPECT_EQ(store->get_run(doctor).kind, "doctor");
  store->add_configuration(2, 1, {{"test", "session"}});
  store.reset();

  RawDb db(path);
  EXPECT_EQ(unit_rows(db).size(), before.size() + 2);  // + the doctor run and configuration
  std::vector<std::string> after = unit_rows(db);
  const auto added = std::find(after.begin(), after.end(), "4|2|1|{\"test\":\"session\"}|running|<null>");
  ASSERT_NE(added, after.end());
  after.erase(added);
  after.pop_back();  // the doctor run, last by id
  EXPECT_EQ(after, before);
  EXPECT_TRUE(db.rows("PRAGMA foreign_key_check").empty());
  EXPECT_EQ(db.rows("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs' ORDER BY name"),
            (std::vector<std::string>{"runs_device_id", "runs_kind", "runs_model"}));
  EXPECT_EQ(db.rows("SELECT count(*) FROM sqlite_master WHERE name LIKE 'runs_v%' AND type = 'table'"),
            std::vector<std::string>{"0"});
  // ON DELETE CASCADE still points at the rebuilt table.
  db.exec("PRAGMA foreign_keys = ON; DELETE FROM runs WHERE id = 1");
  EXPECT_EQ(db.rows("SELECT count(*) FROM configurations WHERE run_id = 1"), std::vector<std::string>{"0"});
}

// v3: a migrated file takes the 'partial' status its old CHECK refused, and still refuses
// a status nobody writes.
TEST(SchemaMigration, AMigratedFileStoresPartialRuns) {
  TempDir dir;
  const std::string path = dir.file("v1.db");
  write_v1_file(path);
  {
    auto store = SqliteStore::open(path, Mode::kMustExist);
    store->finish_run(3, Status::kPartial, "1 of 2 tests failed");
    EXPECT_EQ(store->get_run(3).status, "partial");
    EXPECT_EQ(store->get_run(3).error, "1 of 2 tests failed");
    EXPECT_EQ(store->get_run(1).status, "complete");  // the old statuses are kept as they were
    EXPECT_EQ(store->get_run(2).status, "failed");
  }
  RawDb db(path);
  EXPECT_EQ(db.rows("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs' ORDER BY name"),
            (std::vector<std::string>{"runs_device_id", "runs_kind", "runs_model"}));
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  EXPECT_NE(sqlite3_exec(raw, "UPDATE runs SET status = 'half' WHERE id = 1", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
}

TEST(SchemaMigration, AFailedMigrationLeavesTheV1FileAsItWas) {
  TempDir dir;
  const std::string path = dir.file("v1.db");
  write_v1_file(path);
  std::vector<std::string> before;
  {
    RawDb db(path);
    db.exec("CREATE TABLE runs_v2 (x)");  // a name the migration needs: it fails part-way
    before = unit_rows(db);
  }
  EXPECT_NE(kind_of([&] { SqliteStore::open(path); }), ErrorKind::kBug);  // an Error, not a crash
  const std::string msg = message_of([&] { SqliteStore::open(path); });
  EXPECT_NE(msg.find("runs_v2 already exists"), std::string::npos) << msg;  // failed in the migration itself
  RawDb db(path);
  EXPECT_EQ(db.rows("PRAGMA user_version"), std::vector<std::string>{"1"});
  EXPECT_EQ(unit_rows(db), before);
  EXPECT_EQ(db.rows("SELECT provenance_json FROM runs WHERE id = 1"),
            std::vector<std::string>{v1_provenance("pixel-lab-03").dump()});
}

TEST(SchemaMigration, AnUnreadableProvenanceDoesNotLockOutTheOtherRuns) {
  TempDir dir;
  const std::string path = dir.file("v1.db");
  write_v1_file(path);
  { RawDb(path).exec("UPDATE runs SET provenance_json = '{broken' WHERE id = 2"); }
  auto store = open_store(path);
  EXPECT_EQ(store->get_run(1).device_id, result::device_id_from("pixel-lab-03", "Cortex-A76"));
  const std::string msg = message_of([&] { store->get_run(2); });
  EXPECT_NE(msg.find("damaged"), std::string::npos) << msg;
}

}  // namespace
}  // namespace edgeprobe::store
