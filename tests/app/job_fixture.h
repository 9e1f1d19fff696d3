#pragma once
// What the job tests share: a tiny model file (the jobs read and hash it; the fake engine
// never opens it), plans small enough to run in milliseconds, the fake engine chosen
// through the job context, and a sink that records what a job handed over.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "app/bench_job.h"
#include "app/engine_factory.h"
#include "app/session_job.h"
#include "engine/fake_engine.h"
#include "store/store.h"
#include "support/run_process.h"

namespace edgeprobe::app_test {

// The job owns its engine; this one forwards to a FakeEngine the test keeps, so the test
// can read what the job asked of it after the job is done.
class BorrowedEngine : public engine::Engine {
 public:
  explicit BorrowedEngine(std::shared_ptr<engine::FakeEngine> fake) : fake_(std::move(fake)) {}
  std::string name() const override { return fake_->name(); }
  engine::Capabilities capabilities() const override { return fake_->capabilities(); }
  nlohmann::json provenance() const override { return fake_->provenance(); }
  std::unique_ptr<engine::LoadedModel> load(const engine::ModelOptions& options) override {
    return fake_->load(options);
  }

 private:
  std::shared_ptr<engine::FakeEngine> fake_;
};

// A job context whose engine is `fake` and whose stop token is `stop` (never the
// process's, so one test's stop cannot leak into another).
app::JobContext fake_context(std::shared_ptr<engine::FakeEngine> fake, store::Store* store,
                             app::JobSink* sink, StopToken stop);

// Keeps what a job handed its sink, and asks the job to stop once `stop_after` units
// (repetitions or turns) have arrived (0: never).
class RecordingSink : public app::JobSink {
 public:
  StopToken stop;
  size_t stop_after = 0;
  std::vector<std::pair<size_t, int>> repetitions;  // (case index, repetition index), in order
  std::vector<nlohmann::json> turns;                // {"config", "round", "conversation", "turn"}
  std::vector<std::string> result_statuses;         // each test's, as it completed
  std::pair<size_t, size_t> last_units{0, 0};       // (done, total) last reported
  bool ended = false;

  void units(size_t done, size_t total, const std::string&) override { last_units = {done, total}; }
  void bench_repetition(size_t case_index, const workload::TestCase&, const result::Repetition& rep) override;
  void bench_result(const result::TestResult& r) override {
    result_statuses.push_back(r.error ? r.error->kind : "ok");
  }
  void bench_end(const result::BenchReport&) override { ended = true; }
  void session_turn(size_t config_index, const result::Turn& turn) override;
  void session_end(const result::SessionReport&) override { ended = true; }

 private:
  void count_unit();
  size_t seen_ = 0;
};

class JobTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;

  static std::string model_path();
  static std::string prompts_path();  // two conversations: c1 (two turns), c2 (one)
  std::string db_path(const std::string& name) const { return dir_->file(name); }

  // pp8 and pp16, prompt only and without warm-up, so every repetition is exactly one
  // prefill of its prompt's size on the fake engine.
  app::BenchPlan bench_plan(int repetitions) const;
  // One configuration, one round over both conversations: three turns.
  app::SessionPlan session_plan() const;

  std::shared_ptr<engine::FakeEngine> fake_;
  std::unique_ptr<test_support::TempDir> dir_;  // per test: its stores

 private:
  static test_support::TempDir* shared_;  // per suite: the model and the prompts
};

// A stored run with what legitimately differs between two stores of the same results
// removed: ids, timestamps and the lab's own note in the provenance.
nlohmann::json comparable_run(const store::Store& store, store::RunId run);
// The JSON pointers at which two documents differ (json::diff), in order.
std::vector<std::string> differing_paths(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace edgeprobe::app_test
