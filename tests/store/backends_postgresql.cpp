// The integration tier runs the conformance tests on PostgreSQL: each test starts a real
// server (support/pg_server.h) and skips only where no server binaries are installed.
#include "backends.h"
#include "store/pg_store.h"
#include "store/sqlite_store.h"

namespace edgeprobe::store::test {

INSTANTIATE_TEST_SUITE_P(Backends, Conformance, testing::Values(Backend::kPostgresql), backend_name);

TEST(PgStoreSchema, BothBackendsShareOneSchemaVersion) {
  EXPECT_EQ(PgStore::latest_schema_version(), SqliteStore::latest_schema_version());
}

}  // namespace edgeprobe::store::test
