// The store seam: open_store's location forms and password hiding, and several writers on
// one SQLite file. Run kinds and listing by device: conformance_test.cpp.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "core/error.h"
#include "helpers.h"
#include "store/sqlite_store.h"
#include "store/store.h"
#include "support/run_process.h"

namespace edgeprobe::store {
namespace {

namespace fs = std::filesystem;

using edgeprobe::test_support::TempDir;
using test::kind_of;
using test::filter;
using test::message_of;
using test::provenance_on;

TEST(OpenStore, PlainPathAndBothSqliteFormsOpenTheSameFile) {
  TempDir dir;
  const std::string path = dir.file("r.db");
  {
    auto store = open_store(path);
    EXPECT_EQ(store->location(), path);
    store->begin_run(RunKind::kBench, provenance_on(""), {});
  }
  ASSERT_EQ(path.front(), '/');  // TempDir is absolute, so sqlite:// + path is sqlite:///...
  for (const std::string& location : {"sqlite:" + path, "sqlite://" + path, "SQLite://" + path}) {
    auto store = open_store(location, Mode::kMustExist);
    EXPECT_EQ(store->location(), path) << location;
    EXPECT_EQ(store->list_runs().size(), 1u) << location;
  }
}

TEST(OpenStore, MalformedSqliteLocationsAreOneClearLine) {
  TempDir dir;
  for (const std::string& location : {std::string("sqlite:"), std::string("sqlite://host/r.db"),
                                      std::string("sqlite://relative.db"), std::string("")}) {
    EXPECT_EQ(kind_of([&] { open_store(location); }), ErrorKind::kBadInput) << location;
    const std::string msg = message_of([&] { open_store(location); });
    EXPECT_NE(msg.find("sqlite:///ABS/PATH"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  EXPECT_FALSE(fs::exists("host/r.db"));
}

#ifdef EDGEPROBE_WITH_POSTGRESQL
// No server needed: libpq refuses these before connecting, so they are bad input (exit 2).
TEST(OpenStore, PostgresqlUrlsLibpqCannotReadAreBadInputWithoutThePassword) {
  for (const std::string location :
       {"postgresql://lab:s3cret@db.lab:5432/edgeprobe?no_such_option=1", "postgres://lab:s3cret@[::1/edgeprobe",
        "postgresql://lab:s3cret@db.lab:fivefour/edgeprobe"}) {
    EXPECT_EQ(kind_of([&] { open_store(location); }), ErrorKind::kBadInput) << location;
    const std::string msg = message_of([&] { open_store(location); });
    EXPECT_EQ(msg.find("s3cret"), std::string::npos) << msg;
    EXPECT_NE(msg.find("lab:***@"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

// A socket directory with no server in it: the environment (exit 3), one line that names
// where it looked and what to check, and no password.
TEST(OpenStore, PostgresqlServerThatIsNotThereIsAnEnvironmentErrorNamingIt) {
  TempDir dir;
  const std::string location = "postgresql://lab:s3cret@/edgeprobe?host=" + dir.path();
  EXPECT_EQ(kind_of([&] { open_store(location); }), ErrorKind::kEnvironment);
  const std::string msg = message_of([&] { open_store(location); });
  EXPECT_NE(msg.find("cannot connect to the PostgreSQL results store on " + dir.path()), std::string::npos) << msg;
  EXPECT_NE(msg.find("check that the server runs"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("s3cret"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}
#endif

TEST(OpenStore, UnknownSchemeIsNamedWithTheSupportedOnes) {
  const std::string msg = message_of([] { open_store("mysql://db.lab/edgeprobe"); });
  EXPECT_EQ(kind_of([] { open_store("mysql://db.lab/edgeprobe"); }), ErrorKind::kBadInput);
  EXPECT_NE(msg.find("unknown results store scheme 'mysql'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sqlite:///ABS/PATH"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST(OpenStore, RedactPasswordKeepsEverythingElse) {
  EXPECT_EQ(redact_password("postgresql://u:p@h/db"), "postgresql://u:***@h/db");
  EXPECT_EQ(redact_password("postgresql://u@h/db"), "postgresql://u@h/db");
  EXPECT_EQ(redact_password("postgresql://h:5432/db"), "postgresql://h:5432/db");
  EXPECT_EQ(redact_password("/data/results.db"), "/data/results.db");
  EXPECT_EQ(redact_password("postgresql:///db?host=/run/pg&password=p&user=u"),
            "postgresql:///db?host=/run/pg&password=***&user=u");
  EXPECT_EQ(redact_password("postgresql://u:p@h/db?password=q"), "postgresql://u:***@h/db?password=***");
}

// Two writers on one file, each with its own connection (two processes in real use: a
// lab runner and a bench). BEGIN IMMEDIATE plus the busy timeout makes the second wait
// for the first's commit; without the timeout it would fail with "database is locked".
TEST(Concurrency, TwoWritersOnOneFileLoseNothing) {
  TempDir dir;
  const std::string path = dir.file("shared.db");
  {
    auto first = SqliteStore::open(path);  // created once; the writers then open it as it is
    EXPECT_EQ(first->busy_timeout_ms(), SqliteStore::kBusyTimeoutMs);
    EXPECT_GE(SqliteStore::kBusyTimeoutMs, 1000);
  }
  constexpr int64_t kUnits = 200;
  std::vector<RunId> runs(2);
  std::vector<std::string> errors(2);
  auto writer = [&](size_t w) {
    try {
      auto store = open_store(path);
      runs[w] = store->begin_run(RunKind::kBench, provenance_on(fmt::format("dev-writer{}", w)), {});
      store->add_configuration(runs[w], 0, {{"writer", w}});
      for (int64_t rep = 0; rep < kUnits; ++rep)
        store->record_repetition(runs[w], 0, rep, {{"writer", w}, {"rep", rep}});
      store->finish_configuration(runs[w], 0, Status::kComplete);
      store->finish_run(runs[w], Status::kComplete);
    } catch (const std::exception& e) {
      errors[w] = e.what();
    }
  };
  std::thread t0(writer, 0), t1(writer, 1);
  t0.join();
  t1.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");

  auto store = open_store(path, Mode::kMustExist);
  EXPECT_EQ(store->integrity_check(), "ok");
  const std::vector<RunSummary> listed = store->list_runs();
  ASSERT_EQ(listed.size(), 2u);
  for (size_t w = 0; w < 2; ++w) {
    const nlohmann::json doc = store->load_run(runs[w]);
    EXPECT_EQ(doc["run"]["status"], "complete");
    const nlohmann::json& reps = doc["configurations"][0]["repetitions"];
    ASSERT_EQ(static_cast<int64_t>(reps.size()), kUnits) << "writer " << w;
    for (int64_t rep = 0; rep < kUnits; ++rep) {
      const nlohmann::json& r = reps[static_cast<size_t>(rep)];
      EXPECT_EQ(r["result"]["writer"], w);
      EXPECT_EQ(r["result"]["rep"], rep);
    }
  }
}

}  // namespace
}  // namespace edgeprobe::store
