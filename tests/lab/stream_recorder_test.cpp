// The controller's side of the wire format: each unit committed as its line arrives, a
// cut stream failing the run with every unit kept, a resumed run never recording twice.
#include "lab/stream_recorder.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "store/store.h"
#include "support/run_process.h"

using namespace edgeprobe;
using namespace edgeprobe::lab;
using nlohmann::json;

namespace {

// A bench stream of two cases with two repetitions each, as `run --plan` writes it.
std::vector<std::string> bench_stream() {
  std::vector<json> events = {
      {{"event", "start"}, {"kind", "bench"}, {"plan", {{"kind", "bench"}, {"repetitions", 2}}}},
      {{"event", "provenance"},
       {"provenance", {{"device", {{"id", "dev-abc"}}}, {"extra", json::object()}}},
       {"cases",
        {{{"test", "pp16"}, {"model_path", "/m.gguf"}}, {{"test", "tg4"}, {"model_path", "/m.gguf"}}}}},
      {{"event", "progress"}, {"step", "s"}, {"done", 0}, {"total", 4}, {"unit", "repetitions"}}};
  for (int c = 0; c < 2; ++c) {
    for (int r = 0; r < 2; ++r)
      events.push_back(
          {{"event", "repetition"}, {"case_index", c}, {"repetition", {{"index", r}, {"tokens", 16}}}});
    events.push_back({{"event", "test"},
                      {"result", {{"status", "ok"}, {"error", nullptr}, {"load", {{"samples_ms", {5.0}}}}}}});
  }
  events.push_back({{"event", "result"}, {"report", json::object()}});
  events.push_back({{"event", "end"}, {"exit_code", 0}, {"interrupted", false}, {"errors", json::array()}});
  std::vector<std::string> lines;
  for (size_t i = 0; i < events.size(); ++i) {
    events[i]["seq"] = i;
    lines.push_back(events[i].dump());
  }
  return lines;
}

size_t repetitions(const store::Store& s, store::RunId run) {
  size_t n = 0;
  const json doc = s.load_run(run);  // kept: a range-for over a temporary's member dangles
  for (const auto& c : doc["configurations"]) n += c["repetitions"].size();
  return n;
}

}  // namespace

TEST(StreamRecorder, CommitsEachUnitWithTheDeviceIdentity) {
  test_support::TempDir dir;
  auto s = store::open_store(dir.file("r.db"));
  StreamRecorder rec(*s, {{"device", "pixel8"}});
  for (const auto& l : bench_stream()) rec.line(l);
  EXPECT_TRUE(rec.ended());
  EXPECT_EQ(rec.failed(), "");
  EXPECT_EQ(rec.committed(), 4u);
  const auto run = s->get_run(rec.run_id());
  EXPECT_EQ(run.kind, "bench");
  EXPECT_EQ(run.status, "complete");
  EXPECT_EQ(run.device_id, "dev-abc");
  EXPECT_EQ(run.provenance["extra"]["lab"]["device"], "pixel8");
  EXPECT_EQ(repetitions(*s, rec.run_id()), 4u);
}

// A device's run with a failed test is partial in the controller's store, as it would be
// in the device's own; every test failing makes it failed.
TEST(StreamRecorder, FailedTestsMakeTheRunPartialOrFailed) {
  auto with_errors = [](size_t failing) {
    auto lines = bench_stream();
    size_t seen = 0;
    for (auto& l : lines) {
      json e = json::parse(l);
      if (e["event"] != "test" || seen++ >= failing) continue;
      e["result"]["status"] = "error";
      e["result"]["error"] = {{"kind", "bad_input"}, {"message", "llama.cpp could not create a context"}};
      l = e.dump();
    }
    return lines;
  };
  test_support::TempDir dir;
  auto s = store::open_store(dir.file("r.db"));
  for (size_t failing : {1, 2}) {
    StreamRecorder rec(*s, json::object());
    for (const auto& l : with_errors(failing)) rec.line(l);
    EXPECT_TRUE(rec.ended());
    const auto run = s->get_run(rec.run_id());
    EXPECT_EQ(run.status, failing == 1 ? "partial" : "failed") << failing;
    // In the job's own words (app::finished_error); this stream's end event lists no errors.
    EXPECT_EQ(run.error, failing == 1 ? "1 of 2 tests failed" : "all 2 tests failed");
  }
}

TEST(StreamRecorder, ACutStreamFailsTheRunAndKeepsWhatArrived) {
  test_support::TempDir dir;
  auto s = store::open_store(dir.file("r.db"));
  const auto lines = bench_stream();
  StreamRecorder rec(*s, json::object());
  for (size_t i = 0; i < 5; ++i) rec.line(lines[i]);  // start, provenance, progress, 2 repetitions
  EXPECT_EQ(repetitions(*s, rec.run_id()), 2u);       // committed as they arrived
  rec.finish_cut("ssh phone: connection closed");
  EXPECT_FALSE(rec.ended());
  EXPECT_EQ(s->get_run(rec.run_id()).status, "failed");
  EXPECT_EQ(s->get_run(rec.run_id()).error, "ssh phone: connection closed");

  // The resumed device streams everything again (say it re-measured): nothing twice.
  StreamRecorder again(*s, json::object(), rec.run_id());
  for (const auto& l : lines) again.line(l);
  EXPECT_TRUE(again.ended());
  EXPECT_EQ(again.committed(), 2u);
  EXPECT_EQ(again.skipped(), 2u);
  EXPECT_EQ(again.run_id(), rec.run_id());
  EXPECT_EQ(repetitions(*s, rec.run_id()), 4u);
  EXPECT_EQ(s->get_run(rec.run_id()).status, "complete");
}

// A test that failed is run again when its run is resumed, and recorded again: its one
// record is then the second (a v4 store kept both, as two run summaries "test0").
TEST(StreamRecorder, AResumedFailedTestLeavesOneRecordTheLast) {
  test_support::TempDir dir;
  auto s = store::open_store(dir.file("r.db"));
  auto lines = bench_stream();
  std::vector<std::string> failing = lines;
  for (auto& l : failing) {
    json e = json::parse(l);
    if (e["event"] != "test") continue;
    e["result"]["status"] = "error";
    e["result"]["error"] = {{"kind", "environment"}, {"message", "out of memory"}};
    l = e.dump();
    break;  // the first test only
  }
  StreamRecorder rec(*s, json::object());
  for (const auto& l : failing) rec.line(l);
  ASSERT_EQ(s->get_run(rec.run_id()).status, "partial");

  StreamRecorder again(*s, json::object(), rec.run_id());
  for (const auto& l : lines) again.line(l);
  EXPECT_EQ(s->get_run(rec.run_id()).status, "complete");
  const json doc = s->load_run(rec.run_id());
  const json test0 = doc["configurations"][0].value("test", json());
  ASSERT_TRUE(test0.is_object()) << doc["configurations"][0];
  EXPECT_TRUE(test0.value("error", json("no error field")).is_null()) << test0;
  EXPECT_EQ(test0.value("load_ms", json()), json({5.0}));
  EXPECT_TRUE(doc["configurations"][1].value("test", json()).is_object());
  EXPECT_TRUE(doc["telemetry"].empty()) << doc["telemetry"];  // no test records among the run's summaries
}

TEST(StreamRecorder, AGapOrGarbageStopsRecordingWithTheReason) {
  test_support::TempDir dir;
  auto s = store::open_store(dir.file("r.db"));
  auto lines = bench_stream();
  StreamRecorder rec(*s, json::object());
  rec.line(lines[0]);
  rec.line(lines[1]);
  rec.line(lines[3]);  // seq 2 lost
  EXPECT_EQ(rec.failed(), "the stream skipped from seq 1 to 3");
  EXPECT_EQ(s->get_run(rec.run_id()).status, "failed");
  rec.line(lines[4]);  // ignored after the stop
  EXPECT_EQ(repetitions(*s, rec.run_id()), 0u);

  StreamRecorder junk(*s, json::object());
  junk.line("Segmentation fault");
  EXPECT_TRUE(junk.failed().starts_with("line 0 of the stream is not JSON")) << junk.failed();
}

TEST(StreamRecorder, AnErrorEventIsTheJobsFailure) {
  test_support::TempDir dir;
  auto s = store::open_store(dir.file("r.db"));
  StreamRecorder rec(*s, json::object());
  rec.line(json({{"event", "error"}, {"seq", 0}, {"kind", "bad_input"}, {"message", "-p 0: no"}}).dump());
  EXPECT_EQ(rec.exit_code(), 2);
  EXPECT_EQ(rec.failed(), "bad_input on the device: -p 0: no");
  EXPECT_EQ(rec.run_id(), 0);
}
