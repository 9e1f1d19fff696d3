#pragma once
// Internal to src/store: the SQLite store's schema and its migrations.
#include <sqlite3.h>

#include <string>

namespace edgeprobe::store::sqlite {

// The PRAGMA user_version a fully migrated file has.
int latest_schema_version();

// Throws Error(kBadInput, "PATH: not an edgeprobe results database ...") for a file that
// is another program's, or one from a newer edgeprobe. An empty file passes: ours to
// initialise.
void check_is_ours(sqlite3* db, const std::string& path);

// Brings the file to latest_schema_version(): every pending migration in one
// transaction, so a file is at its old version or the new one, never half-way.
void migrate(sqlite3* db, const std::string& path);
// The same up to schema v`target` only: for tests and bench/store-scale.sh, which build a
// store of an older version to see what the later migrations do to it.
void migrate_to(sqlite3* db, const std::string& path, int target);

// Every table we read is there (the file may have passed check_is_ours and still have
// lost one to a hand edit).
void check_tables(sqlite3* db, const std::string& path);

}  // namespace edgeprobe::store::sqlite
