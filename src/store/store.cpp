#include "store/store.h"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "core/error.h"
#include "store/sqlite_store.h"

#ifdef EDGEPROBE_WITH_POSTGRESQL
#include "store/pg_store.h"
#endif

namespace edgeprobe::store {
namespace {

constexpr const char* kSupported =
    "a SQLite file (a path, sqlite:PATH or sqlite:///ABS/PATH) or a PostgreSQL URL (postgresql://USER@HOST/DB)";

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

const char* to_string(Status status) {
  switch (status) {
    case Status::kRunning: return "running";
    case Status::kComplete: return "complete";
    case Status::kPartial: return "partial";
    case Status::kFailed: return "failed";
  }
  return "failed";
}

Status finished_status(size_t units, size_t failed_units, bool interrupted) {
  if (interrupted || (failed_units > 0 && failed_units >= units)) return Status::kFailed;
  return failed_units > 0 ? Status::kPartial : Status::kComplete;
}

bool is_valid_run_kind(std::string_view kind) {
  if (kind.empty() || kind.size() > 32 || kind[0] < 'a' || kind[0] > 'z') return false;
  for (char c : kind)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) return false;
  return true;
}

std::string default_db_path() {
  std::filesystem::path base;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg && *xdg) {
    base = xdg;
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    base = std::filesystem::path(home) / ".local" / "share";
  } else {
    throw_environment("no results database path: neither XDG_DATA_HOME nor HOME is set (use --db PATH)");
  }
  return (base / "edgeprobe" / "results.db").string();
}

std::string redact_password(const std::string& location) {
  // scheme://user:password@host... -> scheme://user:***@host...
  static const std::regex kUserInfo(R"(^([A-Za-z][A-Za-z0-9+.-]*://[^/?#@:]*):[^/?#@]*@)");
  // ...?password=secret&... -> ...?password=***&... (libpq takes it as a parameter too)
  static const std::regex kParameter(R"(([?&]password=)[^&#]*)", std::regex::icase);
  if (location.find("://") == std::string::npos) return location;
  const std::string shown =
      std::regex_replace(location, kUserInfo, "$1:***@", std::regex_constants::format_first_only);
  return std::regex_replace(shown, kParameter, "$1***");
}

std::unique_ptr<Store> open_store(const std::string& location, Mode mode) {
  static const std::regex kScheme(R"(^([A-Za-z][A-Za-z0-9+.-]*)://)");
  std::smatch m;
  if (!std::regex_search(location, m, kScheme)) {
    if (lower(location.substr(0, 7)) == "sqlite:") {
      const std::string path = location.substr(7);
      if (path.empty()) throw_bad_input("'{}': no path after 'sqlite:'; use {}", location, kSupported);
      return SqliteStore::open(path, mode);
    }
    if (location.empty()) throw_bad_input("empty results store location; use {}", kSupported);
    return SqliteStore::open(location, mode);
  }
  const std::string scheme = lower(m[1].str());
  const std::string shown = redact_password(location);
  if (scheme == "sqlite") {
    // sqlite:///ABS/PATH: an empty host, then the absolute path.
    const std::string rest = location.substr(m.length(0));
    if (!rest.starts_with("/"))
      throw_bad_input("'{}': a sqlite URL has no host; use sqlite:///ABS/PATH, sqlite:PATH or a plain path", shown);
    return SqliteStore::open(rest, mode);
  }
  if (scheme == "postgresql" || scheme == "postgres") {
#ifdef EDGEPROBE_WITH_POSTGRESQL
    return PgStore::open(location, mode);
#else
    throw_environment("'{}': this edgeprobe was built without the PostgreSQL results store (no libpq); use a "
                      "SQLite path, or a native build",
                      shown);
#endif
  }
  throw_bad_input("'{}': unknown results store scheme '{}'; use {}", shown, scheme, kSupported);
}

}  // namespace edgeprobe::store
