#include "cli/cmd_explain.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>
#include <sstream>

#include "analysis/explain.h"
#include "app/explain_lab.h"
#include "app/stored_run.h"
#include "cli/shared_flags.h"
#include "core/error.h"
#include "core/text.h"
#include "report/explain_reporters.h"
#include "store/store.h"
#include "report/formats.h"

namespace edgeprobe::cli {

void register_explain(CLI::App& app) {
  struct Args {
    std::string a, b, db, baseline;
    int64_t lab = 0;
    bool same_shape = false;
    OutputFlags output;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "explain", "Why B is slower (or faster) than A: the gap as hardware times each cause, with the speed after each fix");
  cmd->add_option("A", args->a, "Baseline: run id or bench/doctor result JSON file");
  cmd->add_option("B", args->b, "The run to explain: run id or bench/doctor result JSON file");
  cmd->add_option("--lab", args->lab, "A lab run: every device against --baseline, one table")->check(CLI::PositiveNumber);
  cmd->add_option("--baseline", args->baseline, "With --lab: the device (inventory name) the others are explained against");
  add_db_option(cmd, args->db);
  cmd->add_flag("--same-shape", args->same_shape,
                "Allow two model files of the same architecture, quantisation and size (not one file)");
  add_output_options(cmd, args->output, {report::formats_of(report::OutputKind::kExplain)}, "the explanation");
  cmd->callback([args] {
    std::ostringstream out;
    if (args->lab > 0) {
      if (args->baseline.empty()) throw_bad_input("explain --lab {} needs --baseline DEVICE: the device the others are explained against", args->lab);
      if (!args->a.empty()) throw_bad_input("explain --lab takes no A B runs: it explains every device of the lab run");
      const auto store = store::open_store(resolve_db_path(args->db), store::Mode::kMustExist);
      report::write_explain_lab_report(app::explain_lab_run(*store, args->lab, args->baseline, args->same_shape),
                                       args->output.format, out);
    } else {
      if (args->a.empty() || args->b.empty())
        throw_bad_input("explain needs two runs, A B (run ids or result files), or --lab RUN --baseline DEVICE");
      if (!args->baseline.empty()) throw_bad_input("--baseline goes with --lab RUN; with A B, A is the baseline");
      const nlohmann::json a = app::load_result_document(args->a, args->db);
      const nlohmann::json b = app::load_result_document(args->b, args->db);
      const nlohmann::json explanation =
          app::with_result_documents(fmt::format("{} or {}", one_line(args->a), one_line(args->b)), [&] {
            const auto e = analysis::explain(analysis::explain_side(a, args->a), analysis::explain_side(b, args->b),
                                             {args->same_shape});
            return analysis::to_json(e);
          });
      report::write_explain_report(explanation, args->output.format, out);
    }
    write_output(args->output.file, out.str());
  });
}

}  // namespace edgeprobe::cli
