#pragma once
// Internal to src/store: thin RAII wrappers over the SQLite C API that throw edgeprobe
// errors carrying the store's path. Not part of the store seam.
#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "core/error.h"

namespace edgeprobe::store::sqlite {

// Maps a SQLite failure to the user's view of it: a file that is not SQLite or is
// damaged is bad input, a constraint violation (a unit recorded twice) is our bug,
// anything else is the environment (disk full, permissions, locked too long).
[[noreturn]] void fail(sqlite3* db, int rc, const std::string& path, const std::string& what);

// A prepared statement; steps and columns throw through fail() with the store's path.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& path, const char* sql);
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, int64_t value) { return check(sqlite3_bind_int64(stmt_, index, value)); }
  Statement& bind(int index, const std::string& value) {
    return check(sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT));
  }
  Statement& bind_null(int index) { return check(sqlite3_bind_null(stmt_, index)); }
  // NULL for an empty string: "unknown" columns (error, device_id) hold NULL, not "".
  Statement& bind_or_null(int index, const std::string& value) {
    return value.empty() ? bind_null(index) : bind(index, value);
  }

  bool step();  // true while there is a row
  // Ready to bind and step again (a statement reused for many rows).
  Statement& reset() { return check(sqlite3_reset(stmt_)); }
  int64_t integer(int column) const { return sqlite3_column_int64(stmt_, column); }
  std::string text(int column) const;
  bool is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }

 private:
  Statement& check(int rc) {
    if (rc != SQLITE_OK) fail(db_, rc, path_, "bind");
    return *this;
  }
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* stmt_ = nullptr;
};

void exec(sqlite3* db, const std::string& path, const char* sql);
// Ends the open transaction, if one still is: SQLite rolls back by itself after some
// errors (a full disk, an I/O error), and a ROLLBACK then would fail with "no transaction
// is active", hiding the error that caused it. Never throws.
void rollback_if_open(sqlite3* db);
int64_t pragma_integer(sqlite3* db, const std::string& path, const char* sql);

// BEGIN IMMEDIATE takes the write lock up front, so a concurrent writer waits for the
// busy timeout instead of failing half-way; rolled back unless committed.
class Transaction {
 public:
  Transaction(sqlite3* db, const std::string& path) : db_(db), path_(path) { exec(db, path, "BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (!done_) rollback_if_open(db_);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    exec(db_, path_, "COMMIT");
    done_ = true;
  }

 private:
  sqlite3* db_;
  const std::string& path_;
  bool done_ = false;
};

}  // namespace edgeprobe::store::sqlite
