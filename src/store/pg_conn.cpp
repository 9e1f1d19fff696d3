#include "store/pg_conn.h"

#include <charconv>
#include <regex>

#include "core/error.h"

namespace edgeprobe::store::pg {
namespace {

// libpq prints NOTICEs ("relation already exists, skipping") on stderr by default; a
// results store has nothing to tell the user that way.
void ignore_notice(void*, const char*) {}

// libpq quotes the URL in some parse errors ("... in URI: \"postgresql://u:pw@[::1\""):
// every message passes through here so a password in it never reaches the terminal.
std::string scrub(std::string message, const std::string& url, const std::string& shown) {
  for (size_t at = message.find(url); !url.empty() && at != std::string::npos; at = message.find(url, at + shown.size()))
    message.replace(at, url.size(), shown);
  static const std::regex kSecrets(R"(^[A-Za-z][A-Za-z0-9+.-]*://[^/?#@:]*:([^/?#@]+)@|[?&]password=([^&#]+))",
                                   std::regex::icase);
  for (auto it = std::sregex_iterator(url.begin(), url.end(), kSecrets); it != std::sregex_iterator(); ++it)
    for (size_t group : {1u, 2u}) {
      const std::string secret = (*it)[group].str();
      if (secret.size() < 3) continue;  // too short to find without hitting ordinary text
      for (size_t at = message.find(secret); at != std::string::npos; at = message.find(secret, at + 3))
        message.replace(at, secret.size(), "***");
    }
  return message;
}

// Ports are checked here, not at connect time, so "host:abc" is bad input (exit 2)
// rather than a server that cannot be reached (exit 3).
void check_url(const std::string& url, const std::string& shown) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (!options) {
    const std::string why = error ? scrub(one_line(error), url, shown) : "libpq cannot parse it";
    PQfreemem(error);
    throw_bad_input("'{}': not a PostgreSQL URL ({}); use postgresql://USER@HOST:PORT/DATABASE or "
                    "postgresql:///DATABASE?host=/SOCKET/DIR",
                    shown, why);
  }
  std::string bad_port;
  static const std::regex kPorts(R"([0-9]{1,5}(,[0-9]{1,5})*)");
  for (const PQconninfoOption* o = options; o->keyword; ++o)
    if (std::string(o->keyword) == "port" && o->val && *o->val && !std::regex_match(o->val, kPorts)) bad_port = o->val;
  PQconninfoFree(options);
  if (!bad_port.empty()) throw_bad_input("'{}': port '{}' is not a number", shown, bad_port);
}

}  // namespace

std::string one_line(const std::string& message) {
  std::string out;
  bool space = false;
  for (char c : message) {
    if (c == '\n' || c == '\t' || c == '\r' || c == ' ') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::string Result::text(int row, int column) const {
  if (is_null(row, column)) return "";
  return std::string(PQgetvalue(r_, row, column), static_cast<size_t>(PQgetlength(r_, row, column)));
}

int64_t Result::integer(int row, int column) const {
  const char* s = PQgetvalue(r_, row, column);
  const char* end = s + PQgetlength(r_, row, column);
  int64_t v = 0;
  if (std::from_chars(s, end, v).ec != std::errc())
    throw Error(ErrorKind::kBug, fmt::format("results store: '{}' is not an integer", std::string(s, end)));
  return v;
}

int64_t Result::affected_rows() const {
  const char* n = PQcmdTuples(r_);
  return n && *n ? std::stoll(n) : 0;
}

Connection::Connection(const std::string& url, std::string shown) : shown_(std::move(shown)) {
  check_url(url, shown_);
  // The URL's own settings win over these defaults (libpq applies keywords in order); the
  // client encoding does not: rows are UTF-8 (store_rows.h makes them so).
  const char* keys[] = {"connect_timeout", "fallback_application_name", "dbname", "client_encoding", nullptr};
  const char* values[] = {"10", "edgeprobe", url.c_str(), "UTF8", nullptr};
  conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (!conn_) throw_environment("{}: cannot connect to the PostgreSQL results store: out of memory", shown_);
  if (PQstatus(conn_) != CONNECTION_OK) {
    const char* host = PQhost(conn_);
    const char* port = PQport(conn_);
    const std::string server = fmt::format("{}{}{}", host && *host ? host : "the default socket",
                                           port && *port ? " port " : "", port ? port : "");
    const std::string why = scrub(one_line(PQerrorMessage(conn_)), url, shown_);
    PQfinish(conn_);
    conn_ = nullptr;
    throw_environment(
        "{}: cannot connect to the PostgreSQL results store on {}: {}; check that the server runs and that the "
        "URL's user, database, host and port are right (a password goes in ~/.pgpass or PGPASSWORD)",
        shown_, server, why);
  }
  PQsetNoticeProcessor(conn_, ignore_notice, nullptr);
}

Result Connection::exec(const char* sql, const std::vector<Param>& params) const {
  // A controller holds its store for hours; after a server restart the next statement
  // reconnects instead of failing every unit that follows. Only a statement that failed
  // leaves the connection bad, and that failure already ended its transaction (the
  // exception unwound it), so this never resumes half a transaction.
  if (PQstatus(conn_) == CONNECTION_BAD) PQreset(conn_);
  PGresult* raw = nullptr;
  if (params.empty()) {
    raw = PQexec(conn_, sql);  // may hold several statements (the schema's DDL)
  } else {
    std::vector<const char*> values;
    for (const Param& p : params) values.push_back(p ? p->c_str() : nullptr);
    raw = PQexecParams(conn_, sql, static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0);
  }
  Result result(raw);
  const ExecStatusType status = raw ? PQresultStatus(raw) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return result;

  const char* state = raw ? PQresultErrorField(raw, PG_DIAG_SQLSTATE) : nullptr;
  const char* primary = raw ? PQresultErrorField(raw, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  const std::string sqlstate = state ? state : "";
  const std::string why = one_line(primary ? primary : PQerrorMessage(conn_));
  if (PQstatus(conn_) == CONNECTION_BAD)
    throw_environment("{}: lost the connection to the PostgreSQL results store: {}", shown_, why);
  if (sqlstate.starts_with("23")) throw Error(ErrorKind::kBug, fmt::format("{}: {}", shown_, why));
  if (sqlstate == "42P01" || sqlstate == "42703")  // undefined table or column
    throw_bad_input("{}: not an edgeprobe results database, or a damaged one ({})", shown_, why);
  throw_environment("{}: results store: {}{}", shown_, why, sqlstate.empty() ? "" : " (SQLSTATE " + sqlstate + ")");
}

void Connection::rollback() const noexcept {
  // A failed ROLLBACK (connection gone) leaves nothing to undo: the server drops an
  // unfinished transaction with its connection.
  PQclear(PQexec(conn_, "ROLLBACK"));
}

}  // namespace edgeprobe::store::pg
