// Schema v5's typed rows, on every backend (backends.h): a test's own record, one per
// configuration, and a lab run's word on each device's job, one per device and job.
#include <gtest/gtest.h>

#include "backends.h"
#include "core/error.h"
#include "helpers.h"
#include "store/store.h"

namespace edgeprobe::store {
namespace {

using test::Conformance;
using test::kind_of;
using test::provenance;

// A failed test that is resumed and then passes is recorded twice: the second replaces
// the first (a v4 store kept both as run summaries, and readers took the last).
TEST_P(Conformance, TypedRowsATestRecordedAgainReplacesItsFirstRecord) {
  auto store = open_store(location());
  const RunId run = store->begin_run(RunKind::kBench, provenance(), {});
  store->add_configuration(run, 0, {{"test", "pp16"}});
  store->add_configuration(run, 1, {{"test", "tg4"}});
  const nlohmann::json failed = {{"load_ms", {5.0}},
                                 {"error", {{"kind", "environment"}, {"message", "oom"}}}};
  const nlohmann::json passed = {{"load_ms", {6.0, 4.0}}, {"error", nullptr}};
  store->record_test(run, 0, failed);
  store->record_test(run, 0, passed);
  store->record_run_summary(run, "qes", {{"total", 1.0}});

  const nlohmann::json doc = store->load_run(run);
  EXPECT_EQ(doc["configurations"][0]["test"], passed);
  EXPECT_TRUE(doc["configurations"][1]["test"].is_null());  // not finished: no record
  ASSERT_EQ(doc["telemetry"].size(), 1u);                   // the run's own summaries only
  EXPECT_EQ(doc["telemetry"][0]["phase"], "qes");

  // A test of a configuration the run does not have is the caller's bug.
  EXPECT_EQ(kind_of([&] { store->record_test(run, 7, passed); }), ErrorKind::kBug);
  auto again = open_store(location(), Mode::kMustExist);
  EXPECT_EQ(again->load_run(run)["configurations"][0]["test"], passed);
}

TEST_P(Conformance, TypedRowsALabRunKeepsTheLatestWordOnEachDevicesJob) {
  auto store = open_store(location());
  const RunId device_run = store->begin_run(RunKind::kBench, provenance(), {});
  const RunId lab = store->begin_run("lab", {}, {{"plans", nlohmann::json::array()}});
  LabJob first{"pixel:8", 0, "failed", 1, "ssh: connection closed", 0, {{"committed", 3}}};
  store->record_lab_job(lab, first);
  LabJob second{"pixel:8", 0, "complete", 2, "", device_run, {{"committed", 5}, {"exit_code", 0}}};
  store->record_lab_job(lab, second);
  LabJob other{"pc", 1, "submitted", 1, "", 0, {{"engine", "lava"}, {"lava_job", 42}}};
  store->record_lab_job(lab, other);

  const std::vector<LabJob> jobs = store->lab_jobs(lab);
  ASSERT_EQ(jobs.size(), 2u);
  const LabJob& pc = jobs[0].device == "pc" ? jobs[0] : jobs[1];
  const LabJob& pixel = jobs[0].device == "pc" ? jobs[1] : jobs[0];
  EXPECT_EQ(pixel.device, "pixel:8");
  EXPECT_EQ(pixel.job, 0);
  EXPECT_EQ(pixel.status, "complete");
  EXPECT_EQ(pixel.attempt, 2);
  EXPECT_EQ(pixel.error, "");
  EXPECT_EQ(pixel.device_run, device_run);
  EXPECT_EQ(pixel.detail, second.detail);
  EXPECT_EQ(pc.job, 1);
  EXPECT_EQ(pc.status, "submitted");
  EXPECT_EQ(pc.device_run, 0);
  EXPECT_EQ(pc.detail["lava_job"], 42);

  EXPECT_TRUE(store->lab_jobs(device_run).empty());
  EXPECT_TRUE(store->load_run(lab)["telemetry"].empty());  // no summaries named after devices
  EXPECT_EQ(kind_of([&] { store->record_lab_job(999, other); }), ErrorKind::kBadInput);
  EXPECT_EQ(kind_of([&] { store->lab_jobs(999); }), ErrorKind::kBadInput);
  EXPECT_EQ(store->integrity_check(), "ok");
}

}  // namespace
}  // namespace edgeprobe::store
