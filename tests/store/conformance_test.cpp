// The store conformance tests: the same assertions on every backend (backends.h), each
// test binary instantiating the backends it runs (backends_sqlite.cpp for the unit tier,
// backends_postgresql.cpp for the integration tier, which starts a real server).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "backends.h"
#include "core/error.h"
#include "helpers.h"
#include "store/sqlite_store.h"
#include "store/store.h"

namespace edgeprobe::store {
namespace {

using test::Conformance;
using test::filter;
using test::intact;
using test::kind_of;
using test::message_of;
using test::provenance;
using test::provenance_on;
using test::repetition_result;

TEST_P(Conformance, FreshStoreGetsTheLatestSchemaAndReopensAsItIs) {
  auto store = open_store(location());
  EXPECT_EQ(store->schema_version(), SqliteStore::latest_schema_version());
  EXPECT_EQ(store->integrity_check(), "ok");
  const RunId run = store->begin_run(RunKind::kBench, provenance(), {});
  // Reopening is idempotent: no migration runs twice, nothing is lost.
  auto again = open_store(location(), Mode::kMustExist);
  EXPECT_EQ(again->schema_version(), SqliteStore::latest_schema_version());
  EXPECT_EQ(again->get_run(run).kind, "bench");
}

TEST_P(Conformance, RunRoundTripsWithEveryUnitAndTelemetry) {
  auto store = open_store(location());
  const RunId run = store->begin_run(RunKind::kSession, provenance(), {{"rounds", 3}});
  store->add_configuration(run, 0, {{"test", "session"}, {"ctx", 2048}});
  store->record_repetition(
      run, 0, 0,
      {{"decode_tokens_per_s", 21.5}, {"telemetry", {{"decode", {{"freq_khz_median", 2450000}}}}}});
  store->record_turn(run, {0, 1, "c07", 2}, {{"ttft_ms", 412.0}});
  store->record_run_summary(run, "qes", {{"total", 73.7}});
  store->finish_configuration(run, 0, Status::kComplete);
  store->finish_run(run, Status::kComplete);

  const nlohmann::json doc = store->load_run(run);
  EXPECT_EQ(doc["run"]["kind"], "session");
  EXPECT_EQ(doc["run"]["status"], "complete");
  EXPECT_EQ(doc["run"]["provenance"], provenance());
  EXPECT_EQ(doc["run"]["plan"]["rounds"], 3);
  EXPECT_TRUE(doc["run"]["created_at"].get<std::string>().ends_with("Z"));  // UTC
  EXPECT_FALSE(doc["run"]["finished_at"].is_null());
  ASSERT_EQ(doc["configurations"].size(), 1u);
  EXPECT_EQ(doc["configurations"][0]["status"], "complete");
  EXPECT_EQ(doc["configurations"][0]["repetitions"][0]["result"]["decode_tokens_per_s"], 21.5);
  EXPECT_EQ(doc["configurations"][0]["repetitions"][0]["result"]["telemetry"]["decode"]["freq_khz_median"],
            2450000);
  EXPECT_EQ(doc["configurations"][0]["repetitions"][0]["telemetry"],
            nlohmann::json::array());  // pre-v5 stores' only
  ASSERT_EQ(doc["turns"].size(), 1u);
  EXPECT_EQ(doc["turns"][0]["conversation_id"], "c07");
  EXPECT_EQ(doc["turns"][0]["round"], 1);
  EXPECT_EQ(doc["turns"][0]["turn_index"], 2);
  EXPECT_EQ(doc["turns"][0]["result"]["ttft_ms"], 412.0);
  EXPECT_EQ(doc["telemetry"][0]["summary"]["total"], 73.7);

  const std::vector<RunSummary> runs = store->list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].id, run);
  EXPECT_EQ(runs[0].model, "tiny-q4_0.gguf");
  EXPECT_EQ(runs[0].repetitions, 1);
  EXPECT_EQ(runs[0].turns, 1);
}

TEST_P(Conformance, CompletedUnitsListExactlyWhatWasRecorded) {
  auto store = open_store(location());
  const RunId run = store->begin_run(RunKind::kBench, provenance(), {});
  store->add_configuration(run, 0, {{"test", "tg64"}});
  store->add_configuration(run, 1, {{"test", "pp512"}});
  store->record_repetition(run, 0, 0, {});
  store->record_repetition(run, 0, 1, {{"decode_tokens_per_s", 21.5}});
  store->record_repetition(run, 1, 0, {});
  store->finish_configuration(run, 0, Status::kComplete);
  store->record_turn(run, {1, 0, "c01", 0}, {{"ttft_ms", 120}});
  const CompletedUnits done = store->completed_units(run);
  EXPECT_EQ(done.repetitions.size(), 3u);
  // Each with what it stored, so a resumed run rebuilds its history from these alone.
  EXPECT_EQ(done.repetitions.at({0, 1})["decode_tokens_per_s"], 21.5);
  EXPECT_EQ(done.turns.at({1, 0, "c01", 0})["ttft_ms"], 120);
  EXPECT_TRUE(done.has(RepetitionKey{0, 1}));
  EXPECT_TRUE(done.has(RepetitionKey{1, 0}));
  EXPECT_FALSE(done.has(RepetitionKey{1, 1}));
  EXPECT_TRUE(done.has(TurnKey{1, 0, "c01", 0}));
  EXPECT_FALSE(done.has(TurnKey{1, 0, "c01", 1}));
  EXPECT_EQ(done.complete_configurations, (std::set<int64_t>{0}));
}

TEST_P(Conformance, RecordingAUnitTwiceIsABug) {
  auto store = open_store(location());
  const RunId run = store->begin_run(RunKind::kBench, provenance(), {});
  store->add_configuration(run, 0, {{"test", "tg64"}});
  store->record_repetition(run, 0, 0, {{"x", 1}});
  EXPECT_EQ(kind_of([&] { store->record_repetition(run, 0, 0, {{"x", 2}}); }), ErrorKind::kBug);
  store->record_turn(run, {0, 0, "c01", 0}, {});
  EXPECT_EQ(kind_of([&] { store->record_turn(run, {0, 0, "c01", 0}, {}); }), ErrorKind::kBug);
  // The failed insert rolled back: the first value is still the one stored.
  EXPECT_EQ(store->load_run(run)["configurations"][0]["repetitions"][0]["result"]["x"], 1);
}

TEST_P(Conformance, InvalidUtf8InAResultIsStoredNotLost) {
  auto store = open_store(location());
  const std::string bad = "model \xff\xfe output";  // e.g. a generated byte sequence cut mid-character
  const RunId run = store->begin_run(RunKind::kSession, {{"host", bad}}, {});
  store->add_configuration(run, 0, {{"name", bad}});
  EXPECT_NO_THROW(store->add_configuration(run, 0, {{"name", bad}}));  // resume still matches
  store->record_turn(run, {0, 0, "c01", 0}, {{"text", bad}, {"ttft_ms", 250.0}});
  const nlohmann::json doc = store->load_run(run);
  EXPECT_EQ(doc["turns"][0]["result"]["ttft_ms"], 250.0);
  EXPECT_EQ(doc["turns"][0]["result"]["text"], "model \xef\xbf\xbd\xef\xbf\xbd output");  // U+FFFD twice
  EXPECT_NO_THROW((void)doc.dump());
}

TEST_P(Conformance, ResumeRefusesAChangedPlan) {
  auto store = open_store(location());
  const RunId run = store->begin_run(RunKind::kBench, provenance(), {});
  const int64_t id = store->add_configuration(run, 0, {{"test", "tg64"}, {"threads", 2}});
  EXPECT_EQ(store->add_configuration(run, 0, {{"threads", 2}, {"test", "tg64"}}), id);  // same config: same row
  EXPECT_EQ(kind_of([&] { store->add_configuration(run, 0, {{"test", "tg64"}, {"threads", 4}}); }),
            ErrorKind::kBadInput);
}

TEST_P(Conformance, CompleteRunCannotBeResumedButAFailedOneCan) {
  auto store = open_store(location());
  const RunId done = store->begin_run(RunKind::kBench, provenance(), {});
  store->finish_run(done, Status::kComplete);
  EXPECT_EQ(kind_of([&] { store->resume_run(done); }), ErrorKind::kBadInput);
  const RunId failed = store->begin_run(RunKind::kBench, provenance(), {});
  store->finish_run(failed, Status::kFailed, "model file vanished");
  EXPECT_EQ(store->get_run(failed).error, "model file vanished");
  store->resume_run(failed);
  EXPECT_EQ(store->get_run(failed).status, "running");
  EXPECT_EQ(kind_of([&] { store->get_run(999); }), ErrorKind::kBadInput);
}

// Issue 24: a run whose some units failed is partial, in both backends, and listed so.
TEST_P(Conformance, APartialRunIsStoredAndListedAsPartial) {
  auto store = open_store(location());
  const RunId run = store->begin_run(RunKind::kBench, provenance(), {});
  store->finish_run(run, finished_status(3, 1, false), "1 of 3 tests failed");
  EXPECT_EQ(store->get_run(run).status, "partial");
  EXPECT_EQ(store->list_runs()[0].status, "partial");
  EXPECT_EQ(finished_status(3, 3, false), Status::kFailed);
  EXPECT_EQ(finished_status(3, 0, false), Status::kComplete);
  EXPECT_EQ(finished_status(3, 0, true), Status::kFailed);
  EXPECT_EQ(finished_status(0, 0, false), Status::kComplete);
}

// The durability claim, tested with a real SIGKILL: a child process writes repetitions
// one at a time and reports each commit through a pipe; the parent kills it mid-run,
// then checks that every reported unit is stored intact and that a resumed writer can
// finish the plan from completed_units().
TEST_P(Conformance, KillDuringRunLosesAtMostTheUnitInFlightAndResumeFinishesIt) {
  const std::string path = location("kill");
  // 100 planned at >= 15 ms each leaves the parent over a second to kill the child
// after the 12th commit, even on a loaded machine.
  constexpr int64_t kPlanned = 100, kKillAfter = 12;
  RunId run = 0;
  {
    auto store = open_store(path);
    run = store->begin_run(RunKind::kBench, provenance(), {{"repetitions", kPlanned}});
    store->add_configuration(run, 0, {{"test", "tg64"}});
  }  // closed before fork: neither a SQLite nor a PostgreSQL connection may cross a fork

  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(pipe_fds[0]);
    try {
      auto store = open_store(path);
      for (int64_t rep = 0; rep < kPlanned; ++rep) {
        store->record_repetition(run, 0, rep, repetition_result(rep));
        const char byte = 1;
        if (write(pipe_fds[1], &byte, 1) != 1) _exit(3);
        std::this_thread::sleep_for(std::chrono::milliseconds(15));
      }
    } catch (...) {
      _exit(2);
    }
    _exit(0);  // not reached in the test: the parent kills first
  }
  close(pipe_fds[1]);
  int64_t reported = 0;
  char byte;
  while (reported < kKillAfter && read(pipe_fds[0], &byte, 1) == 1) ++reported;
  // Land inside the next write or sleep, not on a clean boundary.
  std::this_thread::sleep_for(std::chrono::milliseconds(7));
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  close(pipe_fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer finished or failed before the kill; status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  ASSERT_EQ(reported, kKillAfter);

  auto store = open_store(path);
  EXPECT_EQ(store->integrity_check(), "ok");
  EXPECT_EQ(store->get_run(run).status, "running");  // the killed run never finished
  const CompletedUnits done = store->completed_units(run);
  // Every commit the child reported is there; at most the units in flight beyond it.
  EXPECT_GE(static_cast<int64_t>(done.repetitions.size()), kKillAfter);
  EXPECT_LE(static_cast<int64_t>(done.repetitions.size()), kKillAfter + 2);
  EXPECT_LT(static_cast<int64_t>(done.repetitions.size()), kPlanned);
  const nlohmann::json before = store->load_run(run);
  for (const nlohmann::json& rep : before["configurations"][0]["repetitions"])
    EXPECT_TRUE(intact(rep["result"], rep["ordinal"].get<int64_t>())) << "repetition " << rep["ordinal"];
  for (int64_t rep = 0; rep < static_cast<int64_t>(done.repetitions.size()); ++rep)
    EXPECT_TRUE(done.has(RepetitionKey{0, rep})) << "gap at " << rep;  // a prefix: nothing skipped

  // Resume: same plan, skip what is stored.
  store->resume_run(run);
  store->add_configuration(run, 0, {{"test", "tg64"}});
  int64_t written = 0;
  for (int64_t rep = 0; rep < kPlanned; ++rep) {
    if (done.has(RepetitionKey{0, rep})) continue;
    store->record_repetition(run, 0, rep, repetition_result(rep));
    ++written;
  }
  store->finish_configuration(run, 0, Status::kComplete);
  store->finish_run(run, Status::kComplete);
  EXPECT_EQ(written + static_cast<int64_t>(done.repetitions.size()), kPlanned);
  const nlohmann::json after = store->load_run(run);
  ASSERT_EQ(static_cast<int64_t>(after["configurations"][0]["repetitions"].size()), kPlanned);
  for (int64_t rep = 0; rep < kPlanned; ++rep) {
    const nlohmann::json& r = after["configurations"][0]["repetitions"][static_cast<size_t>(rep)];
    EXPECT_EQ(r["ordinal"], rep);
    EXPECT_TRUE(intact(r["result"], rep));
  }
  EXPECT_EQ(after["run"]["status"], "complete");
  EXPECT_EQ(store->integrity_check(), "ok");
}

TEST_P(Conformance, MustExistModeCreatesNothing) {
  const std::string where = location("absent");
  EXPECT_EQ(kind_of([&] { open_store(where, Store::Mode::kMustExist); }), ErrorKind::kBadInput);
  EXPECT_NE(message_of([&] { open_store(where, Store::Mode::kMustExist); }).find("nothing recorded yet"),
            std::string::npos);
  EXPECT_TRUE(holds_nothing("absent"));
}

// Parallel runs (ctest -j, a lab's controllers) often create the same new store at once.
// SQLite: the switch of a new file to WAL takes an exclusive lock that SQLite's busy
// handler does not wait for, so every opener but one must retry instead of failing with
// "database is locked". PostgreSQL: two CREATE TABLEs racing fail on the catalog's unique
// index unless the schema is created under a lock.
TEST_P(Conformance, ManyProcessesOpeningOneNewStoreAtOnceAllSucceed) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    const std::string path = location(fmt::format("new{}", attempt));
    std::vector<pid_t> children;
    for (int i = 0; i < 8; ++i) {
      const pid_t pid = fork();
      if (pid == 0) {
        try {
          auto s = open_store(path);
          s->begin_run("bench", {}, {});
          _exit(0);
        } catch (const std::exception& e) {
          fprintf(stderr, "child %d: %s\n", i, e.what());
          _exit(1);
        }
      }
      children.push_back(pid);
    }
    for (pid_t pid : children) {
      int status = 0;
      waitpid(pid, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a concurrent open failed";
    }
    auto store = open_store(path);
    EXPECT_EQ(store->list_runs({}).size(), 8u);
    EXPECT_EQ(store->integrity_check(), "ok");
  }
}

TEST_P(Conformance, RunKindsADoctorRunStoresItsReportAsARunSummary) {
  auto store = open_store(location());
  const nlohmann::json report = {{"schema_version", 2}, {"verdict", "healthy"}, {"findings", nlohmann::json::array()}};
  const RunId run = store->begin_run(RunKind::kDoctor, provenance_on("dev-0123456789abcdef"), {{"model", "tiny"}});
  store->record_run_summary(run, "doctor", report);
  store->finish_run(run, Status::kComplete);

  const std::vector<RunSummary> runs = store->list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].kind, "doctor");
  EXPECT_EQ(runs[0].status, "complete");
  EXPECT_EQ(runs[0].model, "tiny.gguf");
  const nlohmann::json doc = store->load_run(run);
  ASSERT_EQ(doc["telemetry"].size(), 1u);
  EXPECT_EQ(doc["telemetry"][0]["phase"], "doctor");
  EXPECT_EQ(doc["telemetry"][0]["summary"], report);
}

TEST_P(Conformance, RunKindsAnyWellFormedKindIsStoredAndFilteredOn) {
  auto store = open_store(location());
  const std::string longest(32, 'k');
  for (const std::string& kind : {std::string("lab"), std::string("sweep_2-b"), longest, std::string("bench")})
    store->begin_run(kind, provenance_on(""), {});
  ASSERT_EQ(store->list_runs().size(), 4u);
  EXPECT_EQ(store->list_runs()[1].kind, "sweep_2-b");
  EXPECT_EQ(store->get_run(3).kind, longest);
  const std::vector<RunSummary> labs = store->list_runs(filter("lab", "", false));
  ASSERT_EQ(labs.size(), 1u);
  EXPECT_EQ(labs[0].id, 1);
  EXPECT_TRUE(store->list_runs(filter("session", "", false)).empty());
}

TEST_P(Conformance, RunKindsAMalformedKindIsRefusedAndNothingIsStored) {
  auto store = open_store(location());
  for (const std::string& kind : {std::string(""), std::string("Bench"), std::string("1st"), std::string("a b"),
                                  std::string("bench;"), std::string("_x"), std::string(33, 'k')}) {
    EXPECT_FALSE(is_valid_run_kind(kind)) << kind;
    EXPECT_EQ(kind_of([&] { store->begin_run(kind, provenance_on(""), {}); }), ErrorKind::kBadInput) << kind;
  }
  EXPECT_NE(message_of([&] { store->begin_run("Bench", {}, {}); }).find("run kind 'Bench'"), std::string::npos);
  EXPECT_TRUE(store->list_runs().empty());
}

TEST_P(Conformance, RunsByDeviceFilterMatchesPartOrAllOfTheDeviceId) {
  auto store = open_store(location());
  const RunId a = store->begin_run(RunKind::kBench, provenance_on("dev-aaaa1111bbbb2222"), {});
  const RunId b = store->begin_run(RunKind::kSession, provenance_on("dev-cccc3333dddd4444"), {});
  const RunId none = store->begin_run(RunKind::kBench, provenance_on(""), {});  // a run that named no device
  store->begin_run(RunKind::kBench, {{"device", "not an object"}}, {});

  EXPECT_EQ(store->get_run(a).device_id, "dev-aaaa1111bbbb2222");
  EXPECT_EQ(store->get_run(none).device_id, "");
  EXPECT_EQ(store->load_run(b)["run"]["device_id"], "dev-cccc3333dddd4444");
  EXPECT_TRUE(store->load_run(none)["run"]["device_id"].is_null());

  auto ids = [&](const RunFilter& f) {
    std::vector<RunId> out;
    for (const RunSummary& r : store->list_runs(f)) out.push_back(r.id);
    return out;
  };
  EXPECT_EQ(ids({}).size(), 4u);
  EXPECT_EQ(ids(filter("", "aaaa1111", false)), std::vector<RunId>{a});
  EXPECT_EQ(ids(filter("", "dev-", false)), (std::vector<RunId>{a, b}));
  EXPECT_EQ(ids(filter("", "dev-cccc3333dddd4444", true)), std::vector<RunId>{b});
  EXPECT_TRUE(ids(filter("", "cccc3333", true)).empty());
  EXPECT_TRUE(ids(filter("bench", "cccc", false)).empty());
  EXPECT_EQ(ids(filter("session", "cccc", false)), std::vector<RunId>{b});
  EXPECT_EQ(store->list_runs(filter("", "aaaa", false))[0].device_id, "dev-aaaa1111bbbb2222");
}

// `runs` at a lab's scale: the newest N, and by model (the label `runs` shows), alone or
// with the other filters; rows stay oldest first either way.
TEST_P(Conformance, RunsNewestFirstAndByModelCombineWithTheOtherFilters) {
  auto store = open_store(location());
  auto on = [](const std::string& device, const std::string& model_path) {
    nlohmann::json p = provenance_on(device);
    p["models"][0]["path"] = model_path;
    return p;
  };
  const RunId a = store->begin_run(RunKind::kBench, on("dev-aaaa", "/m/tiny.gguf"), {});
  const RunId b = store->begin_run(RunKind::kBench, on("dev-aaaa", "/m/big.gguf"), {});
  const RunId c = store->begin_run(RunKind::kSession, on("dev-bbbb", "/m/tiny.gguf"), {});
  const RunId d = store->begin_run(RunKind::kBench, on("dev-aaaa", "/srv/tiny.gguf"), {});
  nlohmann::json two = on("dev-bbbb", "/m/tiny.gguf");
  two["models"].push_back({{"path", "/m/draft.gguf"}});
  const RunId e = store->begin_run(RunKind::kBench, two, {});

  auto ids = [&](const std::string& kind, const std::string& device, const std::string& model, size_t last) {
    std::vector<RunId> out;
    for (const RunSummary& r : store->list_runs(RunFilter{kind, device, false, model, last})) out.push_back(r.id);
    return out;
  };
  EXPECT_EQ(ids("", "", "", 2), (std::vector<RunId>{d, e}));
  EXPECT_EQ(ids("", "", "", 50), (std::vector<RunId>{a, b, c, d, e}));
  EXPECT_EQ(ids("", "", "tiny.gguf", 0), (std::vector<RunId>{a, c, d}));
  EXPECT_EQ(ids("", "", "tiny.gguf", 2), (std::vector<RunId>{c, d}));
  EXPECT_EQ(ids("", "", "tiny.gguf,draft.gguf", 0), std::vector<RunId>{e});
  EXPECT_TRUE(ids("", "", "tiny", 0).empty());  // the whole label, not a part
  EXPECT_EQ(ids("", "aaaa", "tiny.gguf", 1), std::vector<RunId>{d});
  EXPECT_EQ(ids("bench", "bbbb", "", 5), std::vector<RunId>{e});
  EXPECT_EQ(ids("session", "", "tiny.gguf", 1), std::vector<RunId>{c});
  EXPECT_TRUE(ids("", "zzzz", "", 0).empty());  // a part of no device id
  EXPECT_EQ(ids("", "a", "", 0), (std::vector<RunId>{a, b, d}));  // one part, one device, three runs
  const std::vector<RunSummary> newest = store->list_runs(RunFilter{"", "", false, "", 1});
  ASSERT_EQ(newest.size(), 1u);
  EXPECT_EQ(newest[0].model, "tiny.gguf,draft.gguf");
  EXPECT_EQ(newest[0].device_id, "dev-bbbb");
}

}  // namespace
}  // namespace edgeprobe::store
