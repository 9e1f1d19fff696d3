// The edgeprobe binary end to end against a PostgreSQL store on a real server the test
// starts: `bench --db postgresql://...`, then `runs`, `export` and `compare` reading it
// back, two benches writing it at once, and the one-line errors of a bad or unreachable URL.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <thread>
#include <vector>

#include "support/pg_server.h"
#include "support/run_process.h"

namespace edgeprobe {
namespace {

using test_support::PgServer;
using test_support::ProcessResult;
using test_support::run_edgeprobe;
using test_support::tiny_model;

std::vector<std::string> bench_args(const std::string& url) {
  return {"bench", "-m", tiny_model(), "-p", "8", "-n", "4", "-r", "3", "-fa", "off",
          "--ceilings", "off", "--sample-hz", "0", "-o", "json", "-q", "--db", url};
}

TEST(PgCli, BenchRunsExportAndCompareShareOnePostgresqlStore) {
  PgServer server;
  if (!server.skip_reason().empty()) GTEST_SKIP() << server.skip_reason();
  ASSERT_EQ(server.error(), "");
  const std::string url = server.create_database("lab");

  const ProcessResult first = run_edgeprobe(bench_args(url), 300);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const nlohmann::json measured = nlohmann::json::parse(first.out);

  // Two controllers at once on one database (the store creates nothing twice, loses nothing).
  ProcessResult second, third;
  std::thread a([&] { second = run_edgeprobe(bench_args(url), 300); });
  std::thread b([&] { third = run_edgeprobe(bench_args(url), 300); });
  a.join();
  b.join();
  ASSERT_EQ(second.exit_code, 0) << second.err;
  ASSERT_EQ(third.exit_code, 0) << third.err;

  const ProcessResult runs = run_edgeprobe({"runs", "--db", url}, 60);
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_EQ(test_support::count_of(runs.out, " bench "), 3u) << runs.out;
  EXPECT_EQ(test_support::count_of(runs.out, " complete "), 3u) << runs.out;
  EXPECT_NE(runs.out.find("tiny"), std::string::npos) << runs.out;

  // Every run holds its two tests (pp8, tg4) with three repetitions each, exactly.
  for (const std::string id : {"1", "2", "3"}) {
    const ProcessResult exported = run_edgeprobe({"export", id, "--db", url, "-o", "json"}, 60);
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    const nlohmann::json doc = nlohmann::json::parse(exported.out);
    ASSERT_EQ(doc["results"].size(), 2u) << "run " << id;
    for (const nlohmann::json& r : doc["results"]) EXPECT_EQ(r["repetitions"].size(), 3u) << "run " << id;
    if (id == "1") {
      EXPECT_EQ(doc["results"], measured["results"]);  // what bench printed is what was stored
    }
  }

  const ProcessResult compared = run_edgeprobe({"compare", "1", "2", "--db", url}, 60);
  ASSERT_EQ(compared.exit_code, 0) << compared.err;
  EXPECT_EQ(compared.out.find("not comparable"), std::string::npos) << compared.out;
  EXPECT_NE(compared.out.find("| tg4 | decode_tokens_per_s |"), std::string::npos) << compared.out;
}

TEST(PgCli, ABadUrlExitsTwoAndAnUnreachableServerThreeOnOneLineWithoutThePassword) {
  test_support::TempDir empty;
  const ProcessResult bad = run_edgeprobe({"runs", "--db", "postgresql://lab:s3cret@[::1/lab"}, 60);
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  const ProcessResult away = run_edgeprobe({"runs", "--db", "postgresql://lab:s3cret@/lab?host=" + empty.path()}, 60);
  EXPECT_EQ(away.exit_code, 3) << away.err;
  EXPECT_NE(away.err.find(empty.path()), std::string::npos) << away.err;
  for (const ProcessResult* r : {&bad, &away}) {
    EXPECT_EQ(r->err.find("s3cret"), std::string::npos) << r->err;
    EXPECT_EQ(test_support::count_of(r->err, "\n"), 1u) << r->err;
  }
}

}  // namespace
}  // namespace edgeprobe
