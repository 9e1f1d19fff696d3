#include "cli/cmd_report.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "app/stored_run.h"
#include "core/text.h"
#include "cli/shared_flags.h"
#include "report/html_report.h"
#include "report/formats.h"

namespace edgeprobe::cli {

void register_report(CLI::App& app) {
  struct Args {
    std::vector<std::string> inputs;
    std::string db;
    OutputFlags output{"html", "report.html"};
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("report", "Write one self-contained HTML report of runs or result files");
  cmd->add_option("inputs", args->inputs, "Run ids or result JSON files (bench, session, doctor); 2+ are compared "
                                          "against the first")->required();
  add_output_options(cmd, args->output, {report::formats_of(report::OutputKind::kHtml)}, "the HTML page");
  add_db_option(cmd, args->db);
  cmd->callback([args] {
    OutputTarget output(args->output.file);
    std::vector<report::HtmlInput> inputs;
    for (const std::string& in : args->inputs)
      inputs.push_back({app::result_label(in), app::load_result_document(in, args->db)});
    std::string names;
    for (const auto& in : args->inputs) names += (names.empty() ? "" : ", ") + one_line(in, 80);
    const std::string page = app::with_result_documents(names, [&] { return report::render_html_report(inputs); });
    output.stream() << page;
    output.commit();
    if (args->output.file == "-" || args->output.quiet) return;
    std::cerr << fmt::format("wrote {} ({:.0f} KB)\n", args->output.file, static_cast<double>(page.size()) / 1024);
  });
}

}  // namespace edgeprobe::cli
