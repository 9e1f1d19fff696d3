// Schema v5 on SQLite: a v4 file's test summaries ("test<i>", and a session
// configuration's analysis "config<i>") and lab job summaries ("device:NAME:jobK") move
// into the tests and lab_jobs tables on open, in the same transaction as the rest of the
// migration. PostgreSQL: pg_store_test.cpp.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>

#include "core/error.h"
#include "store/sqlite_schema.h"
#include "store/sqlite_store.h"
#include "store/store.h"
#include "support/run_process.h"
#include "v4_rows.h"

namespace edgeprobe::store {
namespace {

using edgeprobe::test_support::TempDir;

void exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << "\n"
                                                                              << sql;
  sqlite3_free(err);
}

using test_rows::kV4Rows;

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
  const nlohmann::json session = store->load_run(3);
  EXPECT_EQ(session["configurations"][0]["test"], nlohmann::json::parse(R"({"qes":{"score":0.8}})"));
  EXPECT_EQ(session["telemetry"], nlohmann::json::array());

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
  EXPECT_EQ(one("SELECT count(*) FROM telemetry_summaries"), "11");
  EXPECT_EQ(one("SELECT count(*) FROM sqlite_master WHERE name = 'tests'"), "0");
  sqlite3_close(db);
}

}  // namespace
}  // namespace edgeprobe::store
