#pragma once
#include <memory>
#include <string>

#include "store/store.h"

namespace edgeprobe::store {

namespace pg {
class Connection;  // pg_conn.h: libpq stays out of this header
}

// The PostgreSQL results store, for a lab or a team that shares one: the same logical
// schema, schema version and migrations as the SQLite store (pg_schema.cpp), every unit
// its own committed transaction. Several controllers (processes, machines) may write one
// database at once: ids come from identity sequences, a unit recorded twice is refused by
// a unique constraint, and creating the schema is serialised by an advisory lock.
class PgStore final : public Store {
 public:
  // url: a libpq connection URI, postgresql://USER@HOST:PORT/DB or
  // postgresql:///DB?host=/SOCKET/DIR. A malformed URL is Error(kBadInput); a server that
  // cannot be reached or refuses the login is Error(kEnvironment).
  static std::unique_ptr<PgStore> open(const std::string& url, Mode mode = Mode::kCreate);
  static int latest_schema_version();

  PgStore(const PgStore&) = delete;
  PgStore& operator=(const PgStore&) = delete;
  ~PgStore() override;

  // The URL with any password hidden.
  std::string location() const override;
  int schema_version() const override;

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
  explicit PgStore(std::unique_ptr<pg::Connection> conn);

  std::unique_ptr<pg::Connection> conn_;  // never null
};

}  // namespace edgeprobe::store
