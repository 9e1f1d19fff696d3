#pragma once
// Internal to src/store: thin RAII over libpq (PostgreSQL's C client) that throws
// edgeprobe errors naming the store, its password hidden. Not part of the store seam.
#include <libpq-fe.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace edgeprobe::store::pg {

// A query parameter in text form; nullopt is SQL NULL.
using Param = std::optional<std::string>;
inline Param param(int64_t v) { return std::to_string(v); }
inline Param param(const std::string& v) { return v; }
inline Param param(bool v) { return v ? "true" : "false"; }
// NULL for an empty string: "unknown" columns (error, device_id) hold NULL, not "".
inline Param param_or_null(const std::string& v) { return v.empty() ? Param{} : Param{v}; }

class Result {
 public:
  explicit Result(PGresult* r) : r_(r) {}
  ~Result() { PQclear(r_); }
  Result(Result&& other) noexcept : r_(other.r_) { other.r_ = nullptr; }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  Result& operator=(Result&&) = delete;

  int rows() const { return PQntuples(r_); }
  bool is_null(int row, int column) const { return PQgetisnull(r_, row, column) != 0; }
  std::string text(int row, int column) const;  // "" for NULL
  int64_t integer(int row, int column) const;
  int64_t affected_rows() const;  // of an INSERT, UPDATE or DELETE

 private:
  PGresult* r_;
};

class Connection {
 public:
  // Connects to a postgresql:// or postgres:// URL (a libpq connection URI). A URL libpq
  // cannot parse is Error(kBadInput); a server that cannot be reached, or refuses us, is
  // Error(kEnvironment) naming it and what to check. `shown` is the URL for messages.
  Connection(const std::string& url, std::string shown);
  ~Connection() { PQfinish(conn_); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs one statement; failures map to the user's view of them: a constraint violated
  // (a unit recorded twice, a missing parent) is our bug, a table gone is a damaged store
  // (bad input), anything else (connection lost, permissions, disk) the environment.
  Result exec(const char* sql, const std::vector<Param>& params = {}) const;
  const std::string& shown() const { return shown_; }
  void rollback() const noexcept;  // never throws: for destructors

 private:
  PGconn* conn_ = nullptr;
  std::string shown_;
};

// BEGIN ... COMMIT, rolled back unless committed. READ COMMITTED (PostgreSQL's default):
// each statement sees what other writers committed before it, which the idempotent
// inserts rely on.
class Transaction {
 public:
  explicit Transaction(const Connection& conn) : conn_(conn) { conn_.exec("BEGIN"); }
  ~Transaction() {
    if (!done_) conn_.rollback();
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    conn_.exec("COMMIT");
    done_ = true;
  }

 private:
  const Connection& conn_;
  bool done_ = false;
};

// libpq's messages span lines ("...failed: ...\n\tIs the server running...?"); ours are one.
std::string one_line(const std::string& message);

}  // namespace edgeprobe::store::pg
