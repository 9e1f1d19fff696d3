#include "store/sqlite_util.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

namespace edgeprobe::store::sqlite {

namespace {

// "full" or "read-only" when the filesystem holding `path` is, else "".
std::string filesystem_state(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0) return "";
  if (st.f_flag & ST_RDONLY) return "read-only";
  if (st.f_bavail == 0) return "full";
  if (::access(dir.c_str(), W_OK) != 0) return "read-only";  // not ours to write (permissions)
  return "";
}

}  // namespace

void fail(sqlite3* db, int rc, const std::string& path, const std::string& what) {
  const std::string detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  const int primary = rc & 0xff;
  // The cause a user can act on, named first: SQLite says "disk I/O error" when the
  // shared-memory file of a full filesystem cannot grow, and "unable to open database
  // file" when a read-only mount has no room for it; the OS error, or the filesystem
  // itself, tells which.
  const int os_errno = db ? sqlite3_system_errno(db) : 0;
  const bool io = primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN;
  const std::string fs = io ? filesystem_state(path) : "";
  if (primary == SQLITE_FULL || os_errno == ENOSPC || os_errno == EDQUOT || fs == "full")
    throw_environment("{}: results database: disk full ({}: {}): free some space or give another --db; runs stored "
                      "so far are kept",
                      path, what, detail);
  if (primary == SQLITE_READONLY || os_errno == EROFS || fs == "read-only")
    throw_environment("{}: results database is read-only here ({}: {}): give a writable --db, or --no-store", path,
                      what, detail);
  if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT || primary == SQLITE_FORMAT)
    throw_bad_input("{}: not an edgeprobe results database, or a damaged one ({}: {})", path, what, detail);
  if (primary == SQLITE_CONSTRAINT) throw Error(ErrorKind::kBug, fmt::format("{}: {}: {}", path, what, detail));
  throw_environment("{}: results database: {}: {}", path, what, detail);
}

Statement::Statement(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path) {
  const int rc = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  if (rc != SQLITE_OK) fail(db, rc, path, "prepare");
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  fail(db_, rc, path_, "step");
}

std::string Statement::text(int column) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, column))) : std::string();
}

void rollback_if_open(sqlite3* db) {
  if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
}

void exec(sqlite3* db, const std::string& path, const char* sql) {
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &message);
  if (rc != SQLITE_OK) {
    const std::string detail = message ? message : sqlite3_errstr(rc);
    sqlite3_free(message);
    fail(db, rc, path, detail);
  }
}

int64_t pragma_integer(sqlite3* db, const std::string& path, const char* sql) {
  Statement s(db, path, sql);
  return s.step() ? s.integer(0) : 0;
}

}  // namespace edgeprobe::store::sqlite
