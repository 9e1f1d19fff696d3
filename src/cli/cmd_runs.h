#pragma once
#include <iosfwd>
#include <string>
#include <vector>

#include "store/store.h"

namespace CLI {
class App;
}

namespace edgeprobe::cli {

// `edgeprobe runs [--db PATH] [-o md|json|csv] [--output FILE]`: the runs in the results
// store, newest last.
void register_runs(CLI::App& app);

// The table `runs` prints (md); separate so tests can check it without a process.
void print_runs(const std::vector<store::RunSummary>& runs, std::ostream& out);
// The same runs as `format` writes them: md (the table), json (an array of the table's
// fields, typed: numbers as numbers, an unknown device or model null) or csv (a header,
// then one row per run, unknown fields empty).
void write_runs(const std::vector<store::RunSummary>& runs, const std::string& format, std::ostream& out);

}  // namespace edgeprobe::cli
