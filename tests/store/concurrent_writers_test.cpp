// Several controllers writing one store at once, as real separate processes (each with its
// own connection): nothing lost, nothing duplicated, ids unique, on SQLite and PostgreSQL.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>

#include "backends.h"
#include "core/error.h"
#include "store/store.h"

namespace edgeprobe::store {
namespace {

using test::Conformance;

constexpr int kWriters = 2;
constexpr int64_t kUnits = 60;

// What one writer process did, written to a file for the parent: its own run's id and
// how many units of the contested run it got in first.
struct WriterReport {
  RunId own_run = 0;
  int64_t won = 0;
};

// Child body: its own run of kUnits repetitions, then every unit of the shared run,
// which the other writer is recording at the same moment; a unit already recorded by the
// other is refused as Error(kBug) and must not be stored twice.
int write_as(int writer, const std::string& location, RunId shared, const std::string& report_path) {
  try {
    auto store = open_store(location);
    // Both add the shared run's configuration: idempotent even when they race.
    store->add_configuration(shared, 0, {{"test", "tg8"}});
    WriterReport report;
    report.own_run = store->begin_run(RunKind::kBench, {{"device", {{"id", fmt::format("dev-w{}", writer)}}}}, {});
    store->add_configuration(report.own_run, 0, {{"writer", writer}});
    for (int64_t rep = 0; rep < kUnits; ++rep) {
      store->record_repetition(report.own_run, 0, rep, {{"writer", writer}, {"rep", rep}});
      try {
        store->record_repetition(shared, 0, rep, {{"writer", writer}, {"rep", rep}});
        ++report.won;
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kBug) throw;  // only "already recorded" is expected
      }
    }
    store->finish_configuration(report.own_run, 0, Status::kComplete);
    store->finish_run(report.own_run, Status::kComplete);
    std::ofstream(report_path) << report.own_run << " " << report.won << "\n";
    return 0;
  } catch (const std::exception& e) {
    fprintf(stderr, "writer %d: %s\n", writer, e.what());
    return 1;
  }
}

TEST_P(Conformance, TwoWriterProcessesLoseNothingAndDuplicateNothing) {
  const std::string where = location("shared");
  RunId shared = 0;
  {
    auto store = open_store(where);
    shared = store->begin_run(RunKind::kBench, {}, {{"repetitions", kUnits}});
  }  // closed before fork: a connection must not cross a fork

  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) _exit(write_as(w, where, shared, dir_.file(fmt::format("writer{}", w))));
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "a writer failed (see its stderr)";
  }

  auto store = open_store(where, Mode::kMustExist);
  EXPECT_EQ(store->integrity_check(), "ok");
  std::set<RunId> own_runs;
  int64_t won = 0;
  for (int w = 0; w < kWriters; ++w) {
    WriterReport r;
    std::ifstream(dir_.file(fmt::format("writer{}", w))) >> r.own_run >> r.won;
    own_runs.insert(r.own_run);
    won += r.won;
    const nlohmann::json doc = store->load_run(r.own_run);
    EXPECT_EQ(doc["run"]["status"], "complete");
    EXPECT_EQ(doc["run"]["device_id"], fmt::format("dev-w{}", w));
    const nlohmann::json& reps = doc["configurations"][0]["repetitions"];
    ASSERT_EQ(static_cast<int64_t>(reps.size()), kUnits) << "writer " << w;
    for (int64_t rep = 0; rep < kUnits; ++rep) {
      const nlohmann::json& u = reps[static_cast<size_t>(rep)];
      EXPECT_EQ(u["result"]["writer"], w);
      EXPECT_EQ(u["result"]["rep"], rep);
    }
  }
  EXPECT_EQ(own_runs.size(), static_cast<size_t>(kWriters)) << "two writers got the same run id";
  EXPECT_EQ(own_runs.count(shared), 0u);

  // The contested run: every unit exactly once, by whichever writer got there first.
  EXPECT_EQ(won, kUnits);
  const nlohmann::json doc = store->load_run(shared);
  ASSERT_EQ(doc["configurations"].size(), 1u);
  const nlohmann::json& reps = doc["configurations"][0]["repetitions"];
  ASSERT_EQ(static_cast<int64_t>(reps.size()), kUnits);
  for (int64_t rep = 0; rep < kUnits; ++rep) {
    const nlohmann::json& u = reps[static_cast<size_t>(rep)];
    EXPECT_EQ(u["ordinal"], rep);
    EXPECT_EQ(u["result"]["rep"], rep);
  }
  EXPECT_EQ(store->list_runs().size(), 3u);
}

}  // namespace
}  // namespace edgeprobe::store
