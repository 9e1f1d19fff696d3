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
  test_rows::expect_v4_rows_moved(*SqliteStore::open(path, Mode::kMustExist));
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
