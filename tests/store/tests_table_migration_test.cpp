// Schema v5 on SQLite: a v4 file's test summaries ("test<i>") and lab job summaries
// ("device:NAME:jobK") move into the tests and lab_jobs tables on open, in the same
// transaction as the rest of the migration. PostgreSQL: pg_store_test.cpp.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

#include "core/error.h"
#include "store/sqlite_schema.h"
#include "store/sqlite_store.h"
#include "store/store.h"
#include "support/run_process.h"

namespace edgeprobe::store {
namespace {

using edgeprobe::test_support::TempDir;

void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << "\n"
                                                                              << sql;
  sqlite3_free(err);
}

// Rows as v4 wrote them: a bench run whose test 0 failed, was resumed and passed (two
// test0 summaries), a test1 and a run-level "qes" summary, and a summary named like a
// test whose configuration the run does not have; a lab run with a device's job recorded
// twice (failed, then complete), a LAVA job of a device whose name holds a colon, and a
// job summary that does not parse.
constexpr const char* kV4Rows = R"sql(
INSERT INTO runs (id, kind, status, provenance_json, plan_json) VALUES
  (1, 'bench', 'complete', '{}', '{}'), (2, 'lab', 'failed', '{}', '{}');
INSERT INTO configurations (id, run_id, ordinal, config_json, status) VALUES
  (1, 1, 0, '{"test":"pp16"}', 'complete'), (2, 1, 1, '{"test":"tg4"}', 'complete');
INSERT INTO telemetry_summaries (owner_kind, owner_id, phase, summary_json) VALUES
  ('run', 1, 'test0', '{"load_ms":[5.0],"error":{"kind":"environment","message":"oom"}}'),
  ('run', 1, 'qes', '{"total":73.7}'),
  ('run', 1, 'test1', '{"load_ms":[7.0],"error":null}'),
  ('run', 1, 'test0', '{"load_ms":[6.0],"error":null}'),
  ('run', 1, 'test5', '{"load_ms":[1.0]}'),
  ('run', 2, 'device:pc:job0', '{"run_id":null,"status":"failed","error":"ssh: closed","committed":0,"exit_code":3,"state":null}'),
  ('run', 2, 'device:pc:job0', '{"run_id":1,"status":"complete","error":"","committed":4,"exit_code":0,"state":null}'),
  ('run', 2, 'device:rack:3:job1', '{"engine":"lava","lava_job":42,"attempt":2,"status":"submitted","run_id":null,"error":"","submitted_at":1700000000.5}'),
  ('run', 2, 'device:pc:job1', 'not json');
)sql";

TEST(TestsTableMigration, AV4FileMovesItsTestAndLabJobSummariesIntoTheirTables) {
  TempDir dir;
  const std::string path = dir.file("v4.db");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite::migrate_to(db, path, 4);
    exec(db, kV4Rows);
    sqlite3_close(db);
  }
  auto store = SqliteStore::open(path, Mode::kMustExist);
  EXPECT_EQ(store->schema_version(), 5);
  EXPECT_EQ(store->integrity_check(), "ok");

  const nlohmann::json bench = store->load_run(1);
  EXPECT_EQ(bench["configurations"][0]["test"], nlohmann::json::parse(R"({"load_ms":[6.0],"error":null})"));
  EXPECT_EQ(bench["configurations"][1]["test"], nlohmann::json::parse(R"({"load_ms":[7.0],"error":null})"));
  // What was not a test's record stays a run summary: the run's own, and the orphan.
  EXPECT_EQ(bench["telemetry"], nlohmann::json::parse(R"([{"phase":"qes","summary":{"total":73.7}},
                                                          {"phase":"test5","summary":{"load_ms":[1.0]}}])"));

  const std::vector<LabJob> jobs = store->lab_jobs(2);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].device, "pc");
  EXPECT_EQ(jobs[0].job, 0);
  EXPECT_EQ(jobs[0].status, "complete");  // the latest word
  EXPECT_EQ(jobs[0].attempt, 1);
  EXPECT_EQ(jobs[0].device_run, 1);
  EXPECT_EQ(jobs[0].detail, nlohmann::json::parse(R"({"committed":4,"exit_code":0,"state":null})"));
  EXPECT_EQ(jobs[1].device, "rack:3");
  EXPECT_EQ(jobs[1].job, 1);
  EXPECT_EQ(jobs[1].status, "submitted");
  EXPECT_EQ(jobs[1].attempt, 2);
  EXPECT_EQ(jobs[1].device_run, 0);
  EXPECT_EQ(jobs[1].detail,
            nlohmann::json::parse(R"({"engine":"lava","lava_job":42,"submitted_at":1700000000.5})"));
  // The unreadable one is left as it was (get_run and load_run name it as damaged).
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT group_concat(phase) FROM telemetry_summaries WHERE owner_id = 2",
                               -1, &s, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), "device:pc:job1");
  sqlite3_finalize(s);
  sqlite3_close(db);
}

// The move is part of the migration's one transaction: when it fails, the file is still
// v4 with every summary where it was.
TEST(TestsTableMigration, AFailedMoveLeavesTheV4FileAsItWas) {
  TempDir dir;
  const std::string path = dir.file("v4.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite::migrate_to(db, path, 4);
  exec(db, kV4Rows);
  exec(db, "CREATE TABLE lab_jobs (x)");  // a name v5 needs: it fails part-way
  sqlite3_close(db);
  EXPECT_THROW(SqliteStore::open(path), Error);
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  auto one = [&](const char* sql) {
    sqlite3_stmt* q = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql, -1, &q, nullptr), SQLITE_OK) << sql;
    std::string out =
        sqlite3_step(q) == SQLITE_ROW ? reinterpret_cast<const char*>(sqlite3_column_text(q, 0)) : "";
    sqlite3_finalize(q);
    return out;
  };
  EXPECT_EQ(one("PRAGMA user_version"), "4");
  EXPECT_EQ(one("SELECT count(*) FROM telemetry_summaries"), "9");
  EXPECT_EQ(one("SELECT count(*) FROM sqlite_master WHERE name = 'tests'"), "0");
  sqlite3_close(db);
}

}  // namespace
}  // namespace edgeprobe::store
