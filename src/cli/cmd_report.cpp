#include "cli/cmd_report.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>

#include "app/stored_run.h"
#include "core/error.h"
#include "report/html_report.h"

namespace edgeprobe::cli {

void register_report(CLI::App& app) {
  struct Args {
    std::vector<std::string> inputs;
    std::string output = "report.html", db;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("report", "Write one self-contained HTML report of runs or result files");
  cmd->add_option("inputs", args->inputs, "Run ids or result JSON files (bench, session, doctor); 2+ are compared "
                                          "against the first")->required();
  cmd->add_option("--output", args->output, "HTML file to write ('-' for stdout)")->capture_default_str();
  cmd->add_option("--db", args->db, "Results database for run ids (default: $XDG_DATA_HOME/edgeprobe/results.db)");
  cmd->callback([args] {
    std::vector<report::HtmlInput> inputs;
    for (const std::string& in : args->inputs) {
      const bool run_id = !in.empty() && in.find_first_not_of("0123456789") == std::string::npos;
      inputs.push_back({run_id ? "run " + in : in, app::load_result_document(in, args->db)});
    }
    const std::string page = report::render_html_report(inputs);
    if (args->output == "-") {
      std::cout << page;
      if (!std::cout.flush()) throw_environment("cannot write the report to stdout");
      return;
    }
    std::ofstream out(args->output, std::ios::binary | std::ios::trunc);
    if (!out) throw_bad_input("cannot write --output '{}'", args->output);
    out << page;
    if (!out.flush()) throw_environment("cannot write {}", args->output);
    std::cerr << fmt::format("wrote {} ({:.0f} KB)\n", args->output, static_cast<double>(page.size()) / 1024);
  });
}

}  // namespace edgeprobe::cli
