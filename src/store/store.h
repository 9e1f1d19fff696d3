#pragma once
#include <nlohmann/json.hpp>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace edgeprobe::store {

// The results store seam: runners record each unit as it completes, `runs`, `export` and
// `compare` read runs back. Every repetition, turn and run summary is its own committed
// transaction, so a run killed with SIGKILL (or a phone that shuts down hot) loses at
// most the unit in flight, and a runner with the same plan can resume from
// completed_units(). open_store() picks the implementation from the location.

using RunId = int64_t;

// partial: the run finished and some of its units (tests, turns) failed; failed: all of
// them did, or it was interrupted (then --resume continues it). Configurations are
// complete or failed. Stores before schema v3 knew no partial.
enum class Status { kRunning, kComplete, kPartial, kFailed };
const char* to_string(Status status);

// A finished run's status from its units: failed when interrupted or when every unit that
// ran failed (units == 0 with a failure: nothing ran), partial when some did, complete
// when none did.
Status finished_status(size_t units, size_t failed_units, bool interrupted);

// Run kinds are data, not a closed list: any name matching [a-z][a-z0-9_-]{0,31} is
// stored. These are the ones edgeprobe writes today.
struct RunKind {
  static constexpr const char* kBench = "bench";
  static constexpr const char* kSession = "session";
  static constexpr const char* kDoctor = "doctor";
};
bool is_valid_run_kind(std::string_view kind);

enum class Mode {
  kCreate,     // create the store if absent; the default for runs
  kMustExist,  // for runs/export/compare: a missing store is bad input, not a new one
};

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

// What a run already holds, each unit with the result it stored, so a resumed runner skips
// it and rebuilds its history from it without walking load_run's document.
struct CompletedUnits {
  std::map<RepetitionKey, nlohmann::json> repetitions;
  std::map<TurnKey, nlohmann::json> turns;
  std::set<int64_t> complete_configurations;  // ordinals whose status is 'complete'
  bool has(const RepetitionKey& k) const { return repetitions.contains(k); }
  bool has(const TurnKey& k) const { return turns.contains(k); }
};

// What became of one device's job in a lab run (`lab run` over a transport, or a LAVA
// job): one row per lab run, device and job, the latest word replacing the one before.
struct LabJob {
  std::string device;    // the inventory's name
  int64_t job = 0;       // the plan's index in the lab run
  std::string status;    // the engine's word: complete | failed (lab run); submitted ... ok (LAVA)
  int64_t attempt = 1;   // 1, then 2, ... as the job is submitted again
  std::string error;     // empty when none
  RunId device_run = 0;  // the device's own run with the results; 0: none yet
  nlohmann::json detail = nlohmann::json::object();  // the engine's other facts (units, exit code,
                                                     // device state; LAVA's job id, health)
};

struct RunRecord {
  RunId id = 0;
  std::string created_at;   // UTC, ISO 8601
  std::string finished_at;  // empty while running
  std::string kind;         // "bench", "session", "doctor", ...
  std::string status;       // "running" | "complete" | "partial" | "failed"
  std::string error;
  std::string device_id;  // provenance.device.id; empty if the run did not say
  nlohmann::json provenance;
  nlohmann::json plan;
};

struct RunSummary {
  RunId id = 0;
  std::string created_at, finished_at, kind, status;
  std::string device_id;  // empty if unknown
  std::string model;      // from provenance, best effort; empty if unknown
  int64_t configurations = 0, repetitions = 0, turns = 0;
};

// Empty fields match everything.
struct RunFilter {
  std::string kind;
  std::string device;         // matched against device_id
  bool device_exact = false;  // false: `device` may be any part of the id ("3fa2")
  std::string model;          // the whole model label as `runs` shows it ("tiny.gguf")
  size_t last = 0;            // > 0: only the newest `last` matching runs (still oldest first)
};

class Store {
 public:
  using Mode = store::Mode;

  virtual ~Store() = default;

  // Where the runs are, for messages: a file path, or a URL without its password.
  virtual std::string location() const = 0;
  virtual int schema_version() const = 0;

  // `kind` must satisfy is_valid_run_kind(), else Error(kBadInput). provenance.device.id,
  // when present, is kept apart so runs can be listed by device.
  virtual RunId begin_run(const std::string& kind, const nlohmann::json& provenance, const nlohmann::json& plan) = 0;
  virtual RunRecord get_run(RunId run) const = 0;  // throws Error(kBadInput) for an unknown id
  // Marks a stopped run as running again; throws if it is already complete.
  virtual void resume_run(RunId run) = 0;

  // Idempotent for resume: adding the same ordinal with the same config returns the
  // existing row; a different config under that ordinal is an error (the plan changed).
  virtual int64_t add_configuration(RunId run, int64_t ordinal, const nlohmann::json& config) = 0;
  virtual void finish_configuration(RunId run, int64_t ordinal, Status status, const std::string& error = "") = 0;

  // Each is one committed transaction; a unit's telemetry is part of its result. Recording
  // a unit twice is a bug in the caller and throws Error(kBug). (load_run still gives each
  // unit its "telemetry": the separate summaries stores before v5 could hold.)
  virtual int64_t record_repetition(RunId run, int64_t configuration_ordinal, int64_t repetition,
                                    const nlohmann::json& result) = 0;
  virtual int64_t record_turn(RunId run, const TurnKey& key, const nlohmann::json& result) = 0;
  // A finished configuration's own data beyond its units: a bench test's load times, test
  // telemetry, roofline, serving table and error; a session configuration's analysis of
  // all its turns. One per configuration, committed at once; recording it again (a resumed
  // test) replaces it. The configuration must exist.
  virtual void record_test(RunId run, int64_t configuration_ordinal, const nlohmann::json& test) = 0;
  // Run-level summaries (whole-run telemetry, QES, stability, a doctor report), also
  // committed at once.
  virtual void record_run_summary(RunId run, const std::string& phase, const nlohmann::json& summary) = 0;
  // A lab run's word on one device's job: replaces the one before for that device and
  // job. lab_jobs() lists them by device name, then job.
  virtual void record_lab_job(RunId lab_run, const LabJob& job) = 0;
  virtual std::vector<LabJob> lab_jobs(RunId lab_run) const = 0;

  virtual void finish_run(RunId run, Status status, const std::string& error = "") = 0;

  virtual std::vector<RunSummary> list_runs(const RunFilter& filter = {}) const = 0;
  // {"schema_version", "run": {...}, "configurations": [{"ordinal", "status", "config",
  //  "repetitions": [{"ordinal", "result", "telemetry": [...]}], "test": record_test's
  //  document or null}], "turns": [{..., "result", "telemetry"}], "telemetry": [run-level
  //  summaries]}. A lab run's jobs are lab_jobs(), not in here.
  virtual nlohmann::json load_run(RunId run) const = 0;
  virtual CompletedUnits completed_units(RunId run) const = 0;

  // "ok" or the store's list of problems.
  virtual std::string integrity_check() const = 0;
};

// A plain path, sqlite:PATH or sqlite:///ABS/PATH opens a SQLite file (sqlite_store.h);
// a postgresql:// or postgres:// URL (a libpq connection URI) a PostgreSQL database
// (pg_store.h). Any other scheme is Error(kBadInput), with one line that says what is
// supported.
std::unique_ptr<Store> open_store(const std::string& location, Mode mode = Mode::kCreate);

// The location with any URL password (user:PASSWORD@ or ?password=) replaced by "***",
// for messages and location().
std::string redact_password(const std::string& location);

}  // namespace edgeprobe::store
