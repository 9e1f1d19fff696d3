#pragma once
// A throwaway PostgreSQL server for tests: a real postmaster on a private Unix socket,
// never a mock.
#include <string>

namespace edgeprobe::test_support {

// Starts a server of its own: a data directory copied from a cluster made once per build
// tree with initdb (trust authentication, UTF-8), then `pg_ctl start` listening only on a
// socket in a fresh temporary directory (listen_addresses=''), so it touches no port
// and no other server. The destructor stops it (immediate shutdown) and removes the
// directory. As root it runs the server as Debian's `postgres` user (initdb and the
// postmaster refuse root).
class PgServer {
 public:
  PgServer();
  ~PgServer();
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  // Non-empty when no PostgreSQL server binaries are installed: the test skips with it.
  const std::string& skip_reason() const { return skip_reason_; }
  // Non-empty when binaries are there but the server did not start: the test fails.
  const std::string& error() const { return error_; }

  // A new empty database, and the URL that opens it:
  // postgresql://postgres@/NAME?host=SOCKET_DIR.
  std::string create_database(const std::string& name);
  std::string url(const std::string& database) const;
  // Runs SQL with psql on `database` (superuser); returns its unaligned output. Throws
  // std::runtime_error with psql's message on failure.
  std::string psql(const std::string& database, const std::string& sql) const;
  const std::string& socket_dir() const { return dir_; }
  // Stops the server (immediate) now; start() brings it back on the same directory.
  void stop();
  void start();

 private:
  std::string as_server_user(const std::string& command) const;
  std::string bindir_, dir_, skip_reason_, error_;
  bool running_ = false;
};

}  // namespace edgeprobe::test_support
