#pragma once
#include <memory>
#include <string>

#include "store/store.h"

struct sqlite3;

namespace edgeprobe::store {

// The SQLite results store: one file, WAL, every unit its own committed transaction
// (fsynced: see open()). Several processes or threads, each with its own SqliteStore, may
// write one file at once; a writer waits up to kBusyTimeoutMs for another's transaction.
// Schema: sqlite_schema.cpp; version in PRAGMA user_version.
class SqliteStore final : public Store {
 public:
  static constexpr int kBusyTimeoutMs = 5000;

  // Opens (creating or migrating as needed) and checks that the file is ours. A file
  // that is not SQLite, a SQLite file of another program, a damaged one or one from a
  // newer edgeprobe gives Error(kBadInput, "PATH: not an edgeprobe results database ...").
  // With kMustExist, a store that cannot be written here (read-only mount, full disk) is
  // opened read-only: reads work, and the first write fails naming the cause (exit 3).
  static std::unique_ptr<SqliteStore> open(const std::string& path, Mode mode = Mode::kCreate);
  static int latest_schema_version();

  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;
  ~SqliteStore() override;

  std::string location() const override { return path_; }
  int schema_version() const override;
  // The connection's busy timeout as SQLite reports it (PRAGMA busy_timeout).
  int busy_timeout_ms() const;

  RunId begin_run(const std::string& kind, const nlohmann::json& provenance, const nlohmann::json& plan) override;
  RunRecord get_run(RunId run) const override;
  void resume_run(RunId run) override;
  int64_t add_configuration(RunId run, int64_t ordinal, const nlohmann::json& config) override;
  void finish_configuration(RunId run, int64_t ordinal, Status status, const std::string& error = "") override;
  int64_t record_repetition(RunId run, int64_t configuration_ordinal, int64_t repetition,
                            const nlohmann::json& result) override;
  int64_t record_turn(RunId run, const TurnKey& key, const nlohmann::json& result) override;
  void record_test(RunId run, int64_t configuration_ordinal, const nlohmann::json& test) override;
  void record_run_summary(RunId run, const std::string& phase, const nlohmann::json& summary) override;
  void record_lab_job(RunId lab_run, const LabJob& job) override;
  std::vector<LabJob> lab_jobs(RunId lab_run) const override;
  void finish_run(RunId run, Status status, const std::string& error = "") override;
  std::vector<RunSummary> list_runs(const RunFilter& filter = {}) const override;
  nlohmann::json load_run(RunId run) const override;
  CompletedUnits completed_units(RunId run) const override;
  std::string integrity_check() const override;

 private:
  SqliteStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  static std::unique_ptr<SqliteStore> open_read_write(const std::string& path);
  static std::unique_ptr<SqliteStore> open_read_only(const std::string& path);
  int64_t configuration_id(RunId run, int64_t ordinal) const;

  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace edgeprobe::store
