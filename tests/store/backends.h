#pragma once
// The store conformance tests run once per backend with the same assertions: SQLite (a
// file in a temporary directory) and PostgreSQL (a real server the test starts, see
// support/pg_server.h).
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "support/pg_server.h"
#include "support/run_process.h"

namespace edgeprobe::store::test {

enum class Backend { kSqlite, kPostgresql };

inline std::string backend_name(const testing::TestParamInfo<Backend>& info) {
  return info.param == Backend::kSqlite ? "sqlite" : "postgresql";
}

class Conformance : public testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() != Backend::kPostgresql) return;
    server_ = std::make_unique<test_support::PgServer>();
    if (!server_->skip_reason().empty()) GTEST_SKIP() << server_->skip_reason();
    ASSERT_EQ(server_->error(), "") << "the test's PostgreSQL server did not start";
  }

  bool is_sqlite() const { return GetParam() == Backend::kSqlite; }

  // The location of a store called `name`: a file in this test's directory, or a
  // database on its server (created empty on first use). The store itself is created by
  // whoever opens it first.
  std::string location(const std::string& name = "r") {
    if (is_sqlite()) return dir_.file(name + ".db");
    if (databases_.insert(name).second) server_->create_database(name);
    return server_->url(name);
  }

  // Whether the store called `name` holds nothing at all: no file, or no tables.
  bool holds_nothing(const std::string& name) {
    if (is_sqlite()) return !std::filesystem::exists(dir_.file(name + ".db"));
    location(name);
    return server_->psql(name, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'") == "0\n";
  }

  test_support::TempDir dir_;
  std::unique_ptr<test_support::PgServer> server_;
  std::set<std::string> databases_;
};

}  // namespace edgeprobe::store::test
