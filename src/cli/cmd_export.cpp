#include "cli/cmd_export.h"

#include <CLI/CLI.hpp>

#include "app/stored_run.h"
#include "cli/shared_flags.h"
#include "core/error.h"
#include "report/doctor_reporters.h"
#include "report/reporter.h"
#include "report/session_reporters.h"
#include "store/store.h"
#include "report/formats.h"

namespace edgeprobe::cli {

namespace {

// The same rows `bench -o FORMAT` printed when the run was measured.
void write_bench_report(const result::BenchReport& bench, const std::string& format, std::ostream& out) {
  std::vector<workload::TestCase> cases;
  for (const auto& r : bench.results) cases.push_back(r.config);
  auto reporter = report::make_reporter(format, out);
  reporter->begin(bench.provenance, cases);
  for (const auto& r : bench.results) reporter->add(r);
  reporter->end(bench);
}

}  // namespace

void write_export(const result::Document& document, const std::string& format, std::ostream& out) {
  if (const auto* bench = std::get_if<result::BenchReport>(&document)) write_bench_report(*bench, format, out);
  if (const auto* session = std::get_if<result::SessionReport>(&document)) report::write_session_report(*session, format, out);
  if (const auto* doctor = std::get_if<result::DoctorResult>(&document)) report::write_doctor_report(*doctor, format, out);
}

void register_export(CLI::App& app) {
  struct Args {
    std::string run;
    std::string db;
    OutputFlags output{"json", "", false};  // export's default is the document, not the table
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("export", "Write one stored run (or result file) in any output format, as its subcommand did");
  cmd->add_option("run", a->run, "Run id (see 'edgeprobe runs') or a result JSON file")->required();
  add_db_option(cmd, a->db);
  add_output_options(cmd, a->output, {report::formats_of(report::OutputKind::kResults)});
  cmd->callback([a] {
    OutputTarget output(a->output.file);
    const result::Document document = app::load_result(a->run, a->db);
    app::with_result_documents(app::result_label(a->run), [&] { write_export(document, a->output.format, output.stream()); });
    output.commit();
  });
}

}  // namespace edgeprobe::cli
