#pragma once
namespace CLI {
class App;
}

namespace edgeprobe::cli {

// `edgeprobe compare A B [--db PATH] [--force] [-o md|csv|json|jsonl]`: per-metric ratio B/A of
// medians with a 95 % bootstrap CI, a Mann-Whitney p-value and a verdict only where the
// evidence holds one (analysis::judge). A and B are run ids in the store or result JSON
// files (`bench`, `session` or `doctor -o json`, any schema version). The settings that
// differ are listed above the table. Runs whose model sha256, quantisation, engine,
// engine version, request path or workload differ are refused as not comparable (exit 2)
// unless --force.
void register_compare(CLI::App& app);

}  // namespace edgeprobe::cli
