#include "store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "helpers.h"
#include "store/sqlite_store.h"
#include "store/store_sql.h"
#include "support/run_process.h"

namespace edgeprobe::store {
namespace {

namespace fs = std::filesystem;

using edgeprobe::test_support::TempDir;  // shared with every other test

using test::kind_of;
using test::message_of;
using test::provenance;
using test::repetition_result;

TEST(Store, FreshFileGetsTheLatestSchemaAndWal) {
  TempDir dir;
  const std::string path = dir.file("sub/dir/results.db");  // parent directories are created
  auto store = open_store(path);
  EXPECT_EQ(store->schema_version(), SqliteStore::latest_schema_version());
  EXPECT_GE(SqliteStore::latest_schema_version(), 1);
  EXPECT_EQ(store->integrity_check(), "ok");
  EXPECT_TRUE(fs::exists(path));
  EXPECT_TRUE(fs::exists(path + "-wal"));
  // Reopening is idempotent: no migration runs twice.
  auto again = open_store(path);
  EXPECT_EQ(again->schema_version(), SqliteStore::latest_schema_version());
}

TEST(Store, FileThatIsNotSqliteIsRejectedClearly) {
  TempDir dir;
  const std::string path = dir.file("notes.db");
  std::ofstream(path) << "these are my notes, not a database; there are enough of them to fill a header\n";
  EXPECT_EQ(kind_of([&] { open_store(path); }), ErrorKind::kBadInput);
  const std::string msg = message_of([&] { open_store(path); });
  EXPECT_NE(msg.find("not an edgeprobe results database"), std::string::npos) << msg;
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
}

TEST(Store, OtherProgramsSqliteFileIsRejectedAndLeftUntouched) {
  TempDir dir;
  const std::string path = dir.file("other.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('x');", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const auto size_before = fs::file_size(path);
  const std::string msg = message_of([&] { open_store(path); });
  EXPECT_NE(msg.find("not an edgeprobe results database"), std::string::npos) << msg;
  EXPECT_EQ(fs::file_size(path), size_before);
}

TEST(Store, DatabaseFromANewerEdgeprobeIsRejected) {
  TempDir dir;
  const std::string path = dir.file("newer.db");
  { open_store(path); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  const std::string msg = message_of([&] { open_store(path); });
  EXPECT_NE(msg.find("newer edgeprobe"), std::string::npos) << msg;
}

TEST(Store, DamagedPagesAreReportedAsBadInputNotACrash) {
  TempDir dir;
  const std::string path = dir.file("damaged.db");
  {
    auto store = open_store(path);
    const RunId run = store->begin_run(RunKind::kBench, provenance(), {});
    store->add_configuration(run, 0, {{"test", "tg64"}});
    for (int64_t rep = 0; rep < 20; ++rep) store->record_repetition(run, 0, rep, repetition_result(rep));
  }  // last close checkpoints the WAL into the main file
  ASSERT_FALSE(fs::exists(path + "-wal"));
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);  // page 2 onwards: table b-trees, not the header
    const std::string garbage(3 * 4096, '\xA5');
    f.write(garbage.data(), static_cast<std::streamsize>(garbage.size()));
  }
  auto open_and_read = [&] {
    auto store = open_store(path);
    store->load_run(1);
    store->list_runs();
  };
  EXPECT_EQ(kind_of(open_and_read), ErrorKind::kBadInput);
  const std::string msg = message_of(open_and_read);
  EXPECT_NE(msg.find("not an edgeprobe results database, or a damaged one"), std::string::npos) << msg;
}

TEST(Store, DefaultPathFollowsXdgDataHome) {
  const char* old_xdg = std::getenv("XDG_DATA_HOME");
  const std::string saved = old_xdg ? old_xdg : "";
  setenv("XDG_DATA_HOME", "/tmp/xdg-test", 1);
  EXPECT_EQ(default_db_path(), "/tmp/xdg-test/edgeprobe/results.db");
  unsetenv("XDG_DATA_HOME");
  const char* home = std::getenv("HOME");
  if (home) {
    EXPECT_EQ(default_db_path(), std::string(home) + "/.local/share/edgeprobe/results.db");
  }
  if (old_xdg) setenv("XDG_DATA_HOME", saved.c_str(), 1);
}

// The SQL both backends run is written once with SQLite's ?N placeholders; PostgreSQL's
// text has $N in their place, and a question mark inside quotes is left as it is.
TEST(StoreSql, OneQueryTextServesBothDialects) {
  const char* query = "SELECT a FROM t WHERE b = ?1 AND c IN (?2, ?12) AND d <> '?3' AND e = ?";
  EXPECT_EQ(sql::text(sql::kSqlite, query), query);
  EXPECT_EQ(sql::text(sql::kPostgresql, query),
            "SELECT a FROM t WHERE b = $1 AND c IN ($2, $12) AND d <> '?3' AND e = ?");
  EXPECT_EQ(sql::matching_devices_sql(sql::kPostgresql),
            "SELECT DISTINCT device_id FROM runs WHERE strpos(device_id, $1) > 0");
  EXPECT_EQ(sql::finish_run(sql::kSqlite),
            "UPDATE runs SET status = ?1, error = ?2, finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
            "WHERE id = ?3");
  const sql::RunListQuery listed =
      sql::list_runs_query(RunFilter{"bench", "dev-a", true, "m.gguf", 0}, sql::kPostgresql);
  EXPECT_NE(listed.sql.find("r.kind = $1 AND r.device_id = $2 AND r.model = $3"), std::string::npos)
      << listed.sql;
  EXPECT_EQ(listed.params, (std::vector<std::string>{"bench", "dev-a", "m.gguf"}));
}

}  // namespace
}  // namespace edgeprobe::store
