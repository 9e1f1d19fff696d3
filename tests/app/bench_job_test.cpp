// app::run_bench end to end on the fake engine: the plan's tests run on the engine the
// context chose, every repetition reaches the sink and the store, a failing test is an
// error row, and a stop request through the context's token ends the sweep.
#include "app/bench_job.h"

#include "app/job_fixture.h"
#include "app/stored_run.h"
#include "core/error.h"

namespace edgeprobe::app_test {
namespace {

using nlohmann::json;

class BenchJob : public JobTest {};

TEST_F(BenchJob, RunsEveryTestOnTheEngineTheContextChoseAndStoresEachRepetition) {
  auto store = store::open_store(db_path("bench.db"));
  RecordingSink sink;
  const auto out = app::run_bench(bench_plan(3), fake_context(fake_, store.get(), &sink, sink.stop));

  EXPECT_EQ(out.report.provenance.engine.name, "fake");
  ASSERT_EQ(out.report.results.size(), 2u);
  EXPECT_EQ(out.report.results[0].config.name(), "pp8");
  EXPECT_EQ(out.report.results[1].config.name(), "pp16");
  for (const auto& r : out.report.results) {
    EXPECT_FALSE(r.error) << r.error->message;
    EXPECT_EQ(r.repetitions.size(), 3u);
  }
  // No warm-up, prompt only: one prefill per repetition, of the test's prompt.
  EXPECT_EQ(fake_->counters().prefill_sizes, (std::vector<int>{8, 8, 8, 16, 16, 16}));
  EXPECT_EQ(sink.repetitions.size(), 6u);
  EXPECT_EQ(sink.last_units, (std::pair<size_t, size_t>{6, 6}));
  EXPECT_TRUE(sink.ended);
  EXPECT_FALSE(out.outcome.interrupted);
  EXPECT_EQ(out.outcome.exit_code, 0);

  ASSERT_GT(out.outcome.run_id, 0);
  const auto stored = app::load_stored_run(*store, out.outcome.run_id);
  EXPECT_EQ(stored.record.status, "complete");
  ASSERT_TRUE(stored.bench());
  ASSERT_EQ(stored.bench()->results.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_EQ(stored.bench()->results[i].repetitions.size(), 3u);
    // What the store gives back is what the job measured, figure for figure.
    for (size_t r = 0; r < 3; ++r)
      EXPECT_EQ(result::to_json(stored.bench()->results[i].repetitions[r]),
                result::to_json(out.report.results[i].repetitions[r]));
  }
}

TEST_F(BenchJob, AFailingTestIsAnErrorRowAndTheSweepGoesOn) {
  engine::FakeScript script;
  script.fail_context_at = 1;  // pp8's context: the engine refuses it
  fake_ = std::make_shared<engine::FakeEngine>(script);
  auto store = store::open_store(db_path("bench.db"));
  RecordingSink sink;
  const auto out = app::run_bench(bench_plan(2), fake_context(fake_, store.get(), &sink, sink.stop));

  ASSERT_EQ(out.report.results.size(), 2u);
  ASSERT_TRUE(out.report.results[0].error);
  EXPECT_FALSE(out.report.results[1].error);
  EXPECT_EQ(out.report.results[1].repetitions.size(), 2u);
  EXPECT_EQ(sink.result_statuses, (std::vector<std::string>{out.report.results[0].error->kind, "ok"}));
  ASSERT_EQ(out.outcome.errors.size(), 1u);
  EXPECT_NE(out.outcome.errors[0].find("pp8"), std::string::npos) << out.outcome.errors[0];
  EXPECT_EQ(out.report.results[0].error->kind, "bad_input");
  EXPECT_EQ(out.outcome.exit_code, static_cast<int>(ErrorKind::kBadInput));
  // The failed test's repetitions count as settled: progress reaches its total.
  EXPECT_EQ(sink.last_units, (std::pair<size_t, size_t>{4, 4}));
  EXPECT_EQ(store->get_run(out.outcome.run_id).status, "partial");
}

TEST_F(BenchJob, AStopThroughTheContextTokenEndsTheSweepAfterTheRepetitionInFlight) {
  auto store = store::open_store(db_path("bench.db"));
  RecordingSink sink;
  sink.stop_after = 2;  // pp8's second of three
  const auto out = app::run_bench(bench_plan(3), fake_context(fake_, store.get(), &sink, sink.stop));

  EXPECT_TRUE(out.outcome.interrupted);
  EXPECT_EQ(out.outcome.exit_code, 0);  // an interruption is not a failure (the CLI exits 130)
  EXPECT_TRUE(out.outcome.errors.empty());
  ASSERT_EQ(out.report.results.size(), 2u);
  EXPECT_EQ(out.report.results[0].repetitions.size(), 2u);  // the one in flight was finished, no more
  ASSERT_TRUE(out.report.results[1].error);
  EXPECT_EQ(out.report.results[1].error->kind, "interrupted");
  EXPECT_EQ(fake_->counters().prefills, 2);
  const auto run = store->get_run(out.outcome.run_id);
  EXPECT_EQ(run.status, "failed");
  EXPECT_EQ(run.error, "interrupted");
  EXPECT_FALSE(StopToken::process().stop_requested());  // the process's token was not touched
}

TEST_F(BenchJob, WithoutAStoreNothingIsStoredAndTheRunHasNoId) {
  RecordingSink sink;
  const auto out = app::run_bench(bench_plan(1), fake_context(fake_, nullptr, &sink, sink.stop));
  EXPECT_EQ(out.outcome.run_id, 0);
  EXPECT_EQ(sink.repetitions.size(), 2u);
}

}  // namespace
}  // namespace edgeprobe::app_test
