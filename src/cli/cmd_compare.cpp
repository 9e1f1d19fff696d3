#include "cli/cmd_compare.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>

#include "app/stored_run.h"
#include "cli/shared_flags.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/text.h"
#include "report/compare_reporters.h"
#include "store/store.h"
#include "report/formats.h"

namespace edgeprobe::cli {

namespace {

// Test names, settings and mismatch texts come from the result files: one escaped line
// each, so a newline or an escape sequence in a model name cannot reach the terminal.
constexpr size_t kCellBytes = 200;

}  // namespace

void register_compare(CLI::App& app) {
  struct Args {
    std::string a, b, db;
    OutputFlags output;
    bool force = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("compare", "Compare two runs metric by metric (B against A)");
  cmd->add_option("A", args->a, "Baseline: run id or result JSON file")->required();
  cmd->add_option("B", args->b, "Candidate: run id or result JSON file")->required();
  add_db_option(cmd, args->db);
  add_output_options(cmd, args->output, {report::formats_of(report::OutputKind::kCompare)});
  cmd->add_flag("--force", args->force, "Show the ratios even when the runs are not comparable");
  cmd->callback([args] {
    const nlohmann::json a = app::load_result_document(args->a, args->db);
    const nlohmann::json b = app::load_result_document(args->b, args->db);
    const analysis::CompareReport report = app::with_result_documents(
        fmt::format("{} or {}", one_line(args->a), one_line(args->b)), [&] { return analysis::compare_documents(a, b); });
    if (!report.comparable() && !args->force) {
      // Say why first, then refuse: a ratio between different models is not a speed-up.
      for (const analysis::Mismatch& m : report.mismatches)
        fmt::print("**not comparable**: {}\n", one_line(m.message(), kCellBytes));
      fmt::print("{}", report::compare_differences_text(report));
      throw_bad_input("{} and {} are not comparable; pass --force to see the ratios anyway", one_line(args->a),
                      one_line(args->b));
    }
    write_output(args->output.file, report::compare_report(report, args->output.format, args->a, args->b));
  });
}

}  // namespace edgeprobe::cli
