// The unit tier runs the conformance tests on SQLite only: no server to start.
#include "backends.h"

namespace edgeprobe::store::test {

INSTANTIATE_TEST_SUITE_P(Backends, Conformance, testing::Values(Backend::kSqlite), backend_name);

}  // namespace edgeprobe::store::test
