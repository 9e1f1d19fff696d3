#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "store/store.h"

namespace CLI {
class App;
}

namespace edgeprobe::cli {

// `edgeprobe runs [--db PATH]`: the runs in the results store, newest last.
void register_runs(CLI::App& app);

// The table `runs` prints; separate so tests can check it without a process.
void print_runs(const std::vector<store::RunSummary>& runs, std::ostream& out);

// --db PATH, else the per-user default (store::default_db_path).
std::string resolve_db_path(const std::string& db_option);

}  // namespace edgeprobe::cli
