#pragma once
// Internal to src/store: the PostgreSQL store's schema and its migrations. The same
// logical schema and the same version numbers as the SQLite store (sqlite_schema.cpp):
// migration i takes version i to i + 1 in both.
#include <string>

#include "store/pg_conn.h"
#include "store/store.h"

namespace edgeprobe::store::pg {

int latest_schema_version();

// The version recorded in the database, 0 when it holds no edgeprobe store yet. Throws
// Error(kBadInput) for a database whose tables are another program's, or one written by a
// newer edgeprobe.
int schema_version(const Connection& conn);

// Brings the database to latest_schema_version() in one transaction under an advisory
// lock, so several controllers opening one new database at once create it exactly once.
// With Mode::kMustExist an empty database is Error(kBadInput), and stays empty.
void migrate(const Connection& conn, Mode mode);
// The same up to schema v`target` only (tests, bench/store-scale.sh: an older store).
void migrate_to(const Connection& conn, Mode mode, int target);

// "ok", or one line per problem: a missing table, telemetry whose unit is gone.
std::string integrity_check(const Connection& conn);

}  // namespace edgeprobe::store::pg
