#include "support/pg_server.h"

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <vector>

#include "support/run_process.h"

namespace edgeprobe::test_support {
namespace {

namespace fs = std::filesystem;

constexpr const char* kServerUser = "postgres";  // made by Debian's postgresql-common

// Debian keeps the server binaries out of PATH, in /usr/lib/postgresql/VERSION/bin; take
// the newest there, else an initdb on PATH.
std::string find_bindir() {
  std::vector<fs::path> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    const std::string version = e.path().filename().string();
    const bool numeric = !version.empty() && version.find_first_not_of("0123456789") == std::string::npos;
    if (numeric && fs::exists(e.path() / "bin" / "initdb") && fs::exists(e.path() / "bin" / "pg_ctl"))
      found.push_back(e.path() / "bin");
  }
  if (!found.empty()) {
    std::sort(found.begin(), found.end(), [](const fs::path& a, const fs::path& b) {
      return std::stoi(a.parent_path().filename().string()) < std::stoi(b.parent_path().filename().string());
    });
    return found.back().string();
  }
  const ProcessResult which = run_process({"/bin/sh", "-c", "command -v initdb"}, 10);
  if (which.exit_code == 0 && !which.out.empty()) return fs::path(which.out.substr(0, which.out.find('\n'))).parent_path();
  return "";
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

ProcessResult sh(const std::string& command, int timeout_s = 60) { return run_process({"/bin/sh", "-c", command}, timeout_s); }

// Servers whose test process died before its destructor ran (killed at a ctest timeout,
// a crash): stopped and removed by the next test, so none outlives a test run for long.
// A directory without an owner file yet is another test starting up: left alone.
void stop_orphans(const std::string& bindir, const std::function<std::string(const std::string&)>& as_server_user) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::temp_directory_path(), ec)) {
    if (!e.path().filename().string().starts_with("edgeprobe-pg-")) continue;
    std::string owner;
    try {
      owner = read_file((e.path() / "owner.pid").string());
    } catch (...) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::atoi(owner.c_str()));
    if (pid <= 0 || kill(pid, 0) == 0 || errno != ESRCH) continue;
    sh(as_server_user(bindir + "/pg_ctl -D " + quote((e.path() / "data").string()) + " -m immediate -w -t 30 stop"),
       60);
    fs::remove_all(e.path(), ec);
  }
}

}  // namespace

std::string PgServer::as_server_user(const std::string& command) const {
  if (geteuid() != 0) return command;
  return "runuser -u " + std::string(kServerUser) + " -- " + command;
}

PgServer::PgServer() {
  bindir_ = find_bindir();
  if (bindir_.empty()) {
    skip_reason_ = "no PostgreSQL server binaries (initdb, pg_ctl): install Debian's postgresql package";
    return;
  }
  const passwd* user = geteuid() == 0 ? getpwnam(kServerUser) : nullptr;
  if (geteuid() == 0 && !user) {
    error_ = "running as root, and there is no 'postgres' user to run the server as (postgresql-common makes one)";
    return;
  }
  // The template cluster, made once per build tree: initdb takes seconds, a copy a fraction.
  const std::string version = fs::path(bindir_).parent_path().filename().string();
  const std::string tmpl = std::string(EDGEPROBE_BUILD_DIR) + "/test-pg-template-" + version;
  std::error_code ec;
  if (!fs::exists(tmpl + "/data/PG_VERSION")) {
    // Made under another name and renamed, so a test killed midway leaves no half cluster,
    // and two tests making it at once both end up with a whole one.
    const std::string partial = tmpl + ".partial-" + std::to_string(getpid());
    fs::create_directories(partial, ec);
    if (user && chown(partial.c_str(), user->pw_uid, user->pw_gid) != 0) error_ = "cannot chown " + partial;
    const ProcessResult init = sh(as_server_user(bindir_ + "/initdb -D " + quote(partial + "/data") +
                                                 " -A trust -U postgres -E UTF8 --locale=C --no-sync --wal-segsize=1"),
                                  180);
    if (init.exit_code != 0 && error_.empty()) error_ = "initdb failed: " + init.out + init.err;
    if (error_.empty()) fs::rename(partial, tmpl, ec);  // fails harmlessly if another test won
    fs::remove_all(partial, ec);
    if (!error_.empty()) return;
  }

  stop_orphans(bindir_, [this](const std::string& command) { return as_server_user(command); });
  std::string dir = (fs::temp_directory_path() / "edgeprobe-pg-XXXXXX").string();
  if (!mkdtemp(dir.data())) {
    error_ = "mkdtemp failed";
    return;
  }
  dir_ = dir;
  write_file(dir_ + "/owner.pid", std::to_string(getpid()));
  const ProcessResult copy = sh("cp -a " + quote(tmpl + "/data") + " " + quote(dir_ + "/data"));
  if (copy.exit_code != 0) {
    error_ = "cannot copy the template cluster: " + copy.err;
    return;
  }
  if (user && chown(dir_.c_str(), user->pw_uid, user->pw_gid) != 0) {
    error_ = "cannot chown " + dir_;
    return;
  }
  start();
}

void PgServer::start() {
  // fsync=off: the tests check what our transactions commit and what readers see, not
  // that the disk keeps PostgreSQL's promises, and an fsync per unit is seconds on a busy CI.
  const std::string options = "-c listen_addresses='' -k " + dir_ + " -c fsync=off -c max_connections=40";
  const ProcessResult r = sh(as_server_user(bindir_ + "/pg_ctl -D " + quote(dir_ + "/data") + " -l " +
                                            quote(dir_ + "/server.log") + " -w -t 60 -o " + quote(options) + " start"),
                             90);
  if (r.exit_code != 0) {
    std::string log;
    try {
      log = read_file(dir_ + "/server.log");
    } catch (...) {
    }
    error_ = "pg_ctl start failed: " + r.out + r.err + log;
    return;
  }
  running_ = true;
}

void PgServer::stop() {
  if (!running_) return;
  sh(as_server_user(bindir_ + "/pg_ctl -D " + quote(dir_ + "/data") + " -m immediate -w -t 60 stop"), 90);
  running_ = false;
}

PgServer::~PgServer() {
  stop();
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
}

std::string PgServer::url(const std::string& database) const {
  return "postgresql://postgres@/" + database + "?host=" + dir_;
}

std::string PgServer::psql(const std::string& database, const std::string& sql) const {
  const ProcessResult r = run_process(
      {bindir_ + "/psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url(database), "-c", sql}, 60);
  if (r.exit_code != 0) throw std::runtime_error("psql: " + r.err);
  return r.out;
}

std::string PgServer::create_database(const std::string& name) {
  // FILE_COPY: a small database copies faster than PostgreSQL 15's default WAL_LOG writes it.
  psql("postgres", "CREATE DATABASE \"" + name + "\" STRATEGY FILE_COPY");
  return url(name);
}

}  // namespace edgeprobe::test_support
