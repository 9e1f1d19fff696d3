#pragma once
#include <mutex>

#include "store/store.h"

namespace edgeprobe::lab {

// One store shared by the controller's device threads: every call holds a lock, so a
// store connection (SQLite's, PostgreSQL's) is only ever used by one thread at a time.
// Each call is still its own transaction, committed before the lock is released.
class LockedStore : public store::Store {
 public:
  explicit LockedStore(store::Store& inner) : inner_(inner) {}
  std::string location() const override { return inner_.location(); }
  int schema_version() const override { return inner_.schema_version(); }
  store::RunId begin_run(const std::string& kind, const nlohmann::json& provenance,
                         const nlohmann::json& plan) override {
    const std::lock_guard lock(mutex_);
    return inner_.begin_run(kind, provenance, plan);
  }
  store::RunRecord get_run(store::RunId run) const override {
    const std::lock_guard lock(mutex_);
    return inner_.get_run(run);
  }
  void resume_run(store::RunId run) override {
    const std::lock_guard lock(mutex_);
    inner_.resume_run(run);
  }
  int64_t add_configuration(store::RunId run, int64_t ordinal, const nlohmann::json& config) override {
    const std::lock_guard lock(mutex_);
    return inner_.add_configuration(run, ordinal, config);
  }
  void finish_configuration(store::RunId run, int64_t ordinal, store::Status status,
                            const std::string& error) override {
    const std::lock_guard lock(mutex_);
    inner_.finish_configuration(run, ordinal, status, error);
  }
  int64_t record_repetition(store::RunId run, int64_t ordinal, int64_t repetition,
                            const nlohmann::json& result) override {
    const std::lock_guard lock(mutex_);
    return inner_.record_repetition(run, ordinal, repetition, result);
  }
  int64_t record_turn(store::RunId run, const store::TurnKey& key, const nlohmann::json& result) override {
    const std::lock_guard lock(mutex_);
    return inner_.record_turn(run, key, result);
  }
  void record_run_summary(store::RunId run, const std::string& phase,
                          const nlohmann::json& summary) override {
    const std::lock_guard lock(mutex_);
    inner_.record_run_summary(run, phase, summary);
  }
  void record_test(store::RunId run, int64_t ordinal, const nlohmann::json& test) override {
    const std::lock_guard lock(mutex_);
    inner_.record_test(run, ordinal, test);
  }
  void record_lab_job(store::RunId lab_run, const store::LabJob& job) override {
    const std::lock_guard lock(mutex_);
    inner_.record_lab_job(lab_run, job);
  }
  std::vector<store::LabJob> lab_jobs(store::RunId lab_run) const override {
    const std::lock_guard lock(mutex_);
    return inner_.lab_jobs(lab_run);
  }
  void finish_run(store::RunId run, store::Status status, const std::string& error) override {
    const std::lock_guard lock(mutex_);
    inner_.finish_run(run, status, error);
  }
  std::vector<store::RunSummary> list_runs(const store::RunFilter& filter) const override {
    const std::lock_guard lock(mutex_);
    return inner_.list_runs(filter);
  }
  nlohmann::json load_run(store::RunId run) const override {
    const std::lock_guard lock(mutex_);
    return inner_.load_run(run);
  }
  store::CompletedUnits completed_units(store::RunId run) const override {
    const std::lock_guard lock(mutex_);
    return inner_.completed_units(run);
  }
  std::string integrity_check() const override {
    const std::lock_guard lock(mutex_);
    return inner_.integrity_check();
  }

 private:
  store::Store& inner_;
  mutable std::mutex mutex_;
};

}  // namespace edgeprobe::lab
