#pragma once
#include <nlohmann/json.hpp>

#include <compare>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

struct sqlite3;

namespace edgeprobe::store {

// The SQLite results store. Every repetition and turn is its own committed transaction,
// so a run killed with SIGKILL (or a phone that shuts down hot) loses at most the unit
// in flight, and a runner with the same plan can resume from completed_units().
// Schema: see migrations in store.cpp; version in PRAGMA user_version.

using RunId = int64_t;

enum class RunKind { kBench, kSession };
enum class Status { kRunning, kComplete, kFailed };
const char* to_string(RunKind kind);
const char* to_string(Status status);

// ${XDG_DATA_HOME:-$HOME/.local/share}/edgeprobe/results.db (XDG Base Directory spec).
// Throws Error(kEnvironment) when neither variable is set.
std::string default_db_path();

struct RepetitionKey {
  int64_t configuration_ordinal = 0;
  int64_t repetition = 0;
  auto operator<=>(const RepetitionKey&) const = default;
};

struct TurnKey {
  int64_t configuration_ordinal = 0;
  int64_t round = 0;
  std::string conversation_id;
  int64_t turn_index = 0;
  auto operator<=>(const TurnKey&) const = default;
};

// What a run already holds, so a resumed runner skips it.
struct CompletedUnits {
  std::set<RepetitionKey> repetitions;
  std::set<TurnKey> turns;
  std::set<int64_t> complete_configurations;  // ordinals whose status is 'complete'
  bool has(const RepetitionKey& k) const { return repetitions.contains(k); }
  bool has(const TurnKey& k) const { return turns.contains(k); }
};

// A telemetry summary stored with the unit it describes, in the same transaction.
struct TelemetrySummary {
  std::string phase;  // "prefill", "decode", "idle", "whole", ...
  nlohmann::json summary;
};

struct RunRecord {
  RunId id = 0;
  std::string created_at;   // UTC, ISO 8601
  std::string finished_at;  // empty while running
  std::string kind;         // "bench" | "session"
  std::string status;       // "running" | "complete" | "failed"
  std::string error;
  nlohmann::json provenance;
  nlohmann::json plan;
};

struct RunSummary {
  RunId id = 0;
  std::string created_at, finished_at, kind, status;
  std::string model;  // from provenance, best effort; empty if unknown
  int64_t configurations = 0, repetitions = 0, turns = 0;
};

class Store {
 public:
  enum class Mode {
    kCreate,     // create the file (and its directory) if absent; the default for runs
    kMustExist,  // for runs/export/compare: a missing file is bad input, not a new store
  };

  // Opens (creating or migrating as needed) and checks that the file is ours. A file
  // that is not SQLite, a SQLite file of another program, a damaged one or one from a
  // newer edgeprobe gives Error(kBadInput, "PATH: not an edgeprobe results database ...").
  static Store open(const std::string& path, Mode mode = Mode::kCreate);

  Store(Store&& other) noexcept;
  Store& operator=(Store&& other) noexcept;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  ~Store();

  const std::string& path() const { return path_; }
  int schema_version() const;
  static int latest_schema_version();

  RunId begin_run(RunKind kind, const nlohmann::json& provenance, const nlohmann::json& plan);
  RunRecord get_run(RunId run) const;  // throws Error(kBadInput) for an unknown id
  // Marks a stopped run as running again; throws if it is already complete.
  void resume_run(RunId run);

  // Idempotent for resume: adding the same ordinal with the same config returns the
  // existing row; a different config under that ordinal is an error (the plan changed).
  int64_t add_configuration(RunId run, int64_t ordinal, const nlohmann::json& config);
  void finish_configuration(RunId run, int64_t ordinal, Status status, const std::string& error = "");

  // Each is one committed transaction with its telemetry summaries. Recording a unit
  // twice is a bug in the caller and throws Error(kBug).
  int64_t record_repetition(RunId run, int64_t configuration_ordinal, int64_t repetition,
                            const nlohmann::json& result, const std::vector<TelemetrySummary>& telemetry = {});
  int64_t record_turn(RunId run, const TurnKey& key, const nlohmann::json& result,
                      const std::vector<TelemetrySummary>& telemetry = {});
  // Run-level summaries (whole-run telemetry, QES, stability), also committed at once.
  void record_run_summary(RunId run, const std::string& phase, const nlohmann::json& summary);

  void finish_run(RunId run, Status status, const std::string& error = "");

  std::vector<RunSummary> list_runs() const;
  // {"run": {...}, "configurations": [{"ordinal", "status", "config", "repetitions":
  //  [{"ordinal", "result", "telemetry": [...]}]}], "turns": [{..., "result", "telemetry"}],
  //  "telemetry": [run-level summaries]}
  nlohmann::json load_run(RunId run) const;
  CompletedUnits completed_units(RunId run) const;

  // "ok" or SQLite's list of problems (PRAGMA integrity_check).
  std::string integrity_check() const;

 private:
  Store(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  int64_t configuration_id(RunId run, int64_t ordinal) const;
  void insert_telemetry(const char* owner_kind, int64_t owner_id, const std::vector<TelemetrySummary>& telemetry);

  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace edgeprobe::store
