// A lab's central store on a real PostgreSQL server (tests/support/pg_server.h): three
// local devices run at once and every unit lands in the shared database.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "store/store.h"
#include "support/pg_server.h"
#include "support/run_process.h"

using namespace edgeprobe;
using namespace edgeprobe::test_support;
using nlohmann::json;

TEST(LabPg, ThreeDevicesCommitIntoOnePostgresqlStore) {
  PgServer pg;
  if (!pg.skip_reason().empty()) GTEST_SKIP() << pg.skip_reason();
  ASSERT_EQ(pg.error(), "");
  const std::string url = pg.create_database("lab");  // its URL
  TempDir dir;
  std::string inv = "all:\n  hosts:\n";
  for (const char* d : {"d1", "d2", "d3"})
    inv += std::string("    ") + d + ": {transport: local, workdir: " + dir.file(d) + "}\n";
  write_file(dir.file("lab.yml"), inv);
  const auto r =
      run_process({EDGEPROBE_BINARY,
                   "lab",
                   "run",
                   "-i",
                   dir.file("lab.yml"),
                   "--db",
                   url,
                   "-m",
                   tiny_model(),
                   "-p",
                   "16",
                   "-n",
                   "4",
                   "-t",
                   "1",
                   "-r",
                   "2",
                   "--ceilings",
                   "off",
                   "--sample-hz",
                   "0",
                   "-q",
                   "-o",
                   "json"},
                  300, {{"XDG_CACHE_HOME", std::string(EDGEPROBE_BUILD_DIR) + "/test-home/cache"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto s = store::open_store(url, store::Mode::kMustExist);
  std::map<std::string, int64_t> reps;
  for (const auto& run : s->list_runs({})) {
    if (run.kind == "lab") {
      EXPECT_EQ(run.status, "complete");
      continue;
    }
    reps[s->get_run(run.id).provenance["extra"]["lab"]["device"]] = run.repetitions;
  }
  EXPECT_EQ(reps, (std::map<std::string, int64_t>{{"d1", 4}, {"d2", 4}, {"d3", 4}}));
  EXPECT_EQ(s->integrity_check(), "ok");
}
