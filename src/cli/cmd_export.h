#pragma once
#include <iosfwd>
#include <string>

#include "app/stored_run.h"

namespace CLI {
class App;
}

namespace edgeprobe::cli {

// `edgeprobe export RUN|FILE [-o md|csv|json|jsonl] [--db PATH] [--output FILE]`: one stored
// run (or result file) loaded back into its result structs and written by the same
// reporters its subcommand uses, so `export 3 -o csv` is what `bench -o csv` printed for
// run 3.
void register_export(CLI::App& app);
void write_export(const result::Document& document, const std::string& format, std::ostream& out);

}  // namespace edgeprobe::cli
