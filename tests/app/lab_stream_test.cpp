// The lab's path into the central store, checked against the job's own: a job streams
// the wire format (as `edgeprobe run --plan` does) while storing its run; the lab's
// StreamRecorder turns that stream into a run of a second store; the two stored runs
// must hold the same results. Ids, timestamps and the lab's note are not results.
#include <sstream>

#include "app/bench_job.h"
#include "app/job_fixture.h"
#include "app/session_job.h"
#include "app/stream_sink.h"
#include "lab/stream_recorder.h"

namespace edgeprobe::app_test {
namespace {

using nlohmann::json;

struct RoundTrip {
  json job_store_run;  // as the job stored it
  json lab_store_run;  // as the lab stored it from the job's stream
  std::string lab_failed;
  bool lab_ended = false;
};

class LabStream : public JobTest {
 protected:
  // Runs `job` with a stream sink and store A as `run --plan --db A` would, then feeds
  // every line to a StreamRecorder over store B.
  template <typename Plan, typename Job>
  RoundTrip round_trip(const std::string& kind, Plan plan, Job job) {
    auto job_store = store::open_store(db_path("device.db"));
    auto lab_store = store::open_store(db_path("lab.db"));
    std::ostringstream stream;
    app::StreamSink sink(stream);
    app::validate(plan, 1);
    sink.start(kind, app::to_json(plan));
    const auto out = job(std::move(plan), fake_context(fake_, job_store.get(), &sink, StopToken()));
    sink.end(out.outcome);

    lab::StreamRecorder recorder(*lab_store, {{"device", "fake"}, {"job", 0}});
    std::istringstream lines(stream.str());
    for (std::string line; std::getline(lines, line);) recorder.line(line);
    RoundTrip rt;
    rt.lab_failed = recorder.failed();
    rt.lab_ended = recorder.ended();
    rt.job_store_run = comparable_run(*job_store, out.outcome.run_id);
    if (recorder.run_id()) rt.lab_store_run = comparable_run(*lab_store, recorder.run_id());
    return rt;
  }
};

TEST_F(LabStream, ABenchJobsStreamStoresWhatTheJobStored) {
  auto plan = bench_plan(2);
  plan.env.sample_hz = 50;          // telemetry too: the test summaries carry it
  plan.run.load.concurrency = {2};  // a serving table per test
  plan.run.load.num_requests = 4;
  const auto rt = round_trip("bench", plan, [](app::BenchPlan p, const app::JobContext& c) {
    return app::run_bench(std::move(p), c);
  });
  ASSERT_TRUE(rt.lab_ended);
  ASSERT_EQ(rt.lab_failed, "");
  ASSERT_EQ(rt.job_store_run["configurations"].size(), 2u);
  EXPECT_EQ(rt.job_store_run["run"]["status"], "complete");
  for (const auto& c : rt.job_store_run["configurations"])
    ASSERT_FALSE(c["test"]["serving"].empty()) << "the job stored no serving table to lose";
  const auto paths = differing_paths(rt.job_store_run, rt.lab_store_run);
  // One writer of test-level data (app::record_test): the serving tables arrive too (the
  // recorder's own field list once left them out).
  EXPECT_EQ(paths, std::vector<std::string>{}) << json::diff(rt.job_store_run, rt.lab_store_run).dump(1);
}

TEST_F(LabStream, ABenchJobWithAFailedTestStoresTheSameErrorRowThroughTheLab) {
  engine::FakeScript script;
  script.fail_context_at = 1;  // pp8 fails, pp16 runs
  fake_ = std::make_shared<engine::FakeEngine>(script);
  const auto rt = round_trip("bench", bench_plan(2), [](app::BenchPlan p, const app::JobContext& c) {
    return app::run_bench(std::move(p), c);
  });
  ASSERT_TRUE(rt.lab_ended);
  EXPECT_EQ(rt.job_store_run["run"]["status"], "partial");
  EXPECT_EQ(rt.job_store_run["configurations"][0]["status"], "failed");
  EXPECT_EQ(rt.lab_store_run["configurations"][0]["status"], "failed");
  EXPECT_TRUE(rt.job_store_run["configurations"][0]["test"]["error"].is_object());
  EXPECT_EQ(rt.lab_store_run["configurations"][0]["test"]["error"],
            rt.job_store_run["configurations"][0]["test"]["error"]);
  const auto paths = differing_paths(rt.job_store_run, rt.lab_store_run);
  // The run's error is the job's sentence, naming the first failure, in both stores.
  EXPECT_EQ(
      rt.job_store_run["run"]["error"].get<std::string>().rfind("1 of 2 tests failed; the first: pp8: ", 0),
      0u)
      << rt.job_store_run["run"]["error"];
  EXPECT_EQ(paths, std::vector<std::string>{}) << json::diff(rt.job_store_run, rt.lab_store_run).dump(1);
}

TEST_F(LabStream, ASessionJobsStreamStoresWhatTheJobStored) {
  const auto rt = round_trip("session", session_plan(), [](app::SessionPlan p, const app::JobContext& c) {
    return app::run_session(std::move(p), c);
  });
  ASSERT_TRUE(rt.lab_ended);
  ASSERT_EQ(rt.lab_failed, "");
  ASSERT_EQ(rt.job_store_run["turns"].size(), 3u);
  EXPECT_EQ(rt.job_store_run["run"]["status"], "complete");
  const auto paths = differing_paths(rt.job_store_run, rt.lab_store_run);
  EXPECT_EQ(paths, std::vector<std::string>{}) << json::diff(rt.job_store_run, rt.lab_store_run).dump(1);
}

}  // namespace
}  // namespace edgeprobe::app_test
