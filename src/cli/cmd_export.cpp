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

void write_export(const app::StoredRun& run, const std::string& format, std::ostream& out) {
  if (!run.content) throw_bad_input("run {} is a {} run with no stored result to export", run.record.id, run.record.kind);
  if (const auto* bench = std::get_if<result::BenchReport>(&*run.content)) write_bench_report(*bench, format, out);
  if (const auto* session = std::get_if<result::SessionReport>(&*run.content)) report::write_session_report(*session, format, out);
  if (const auto* doctor = std::get_if<result::DoctorResult>(&*run.content)) report::write_doctor_report(*doctor, format, out);
}

void register_export(CLI::App& app) {
  struct Args {
    int64_t run = 0;
    std::string db;
    OutputFlags output{"json", "", false};  // export's default is the document, not the table
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("export", "Write one stored run in any output format, as its subcommand did");
  cmd->add_option("run", a->run, "Run id (see 'edgeprobe runs')")->required();
  add_db_option(cmd, a->db);
  add_output_options(cmd, a->output, {report::formats_of(report::OutputKind::kResults)});
  cmd->callback([a] {
    OutputTarget output(a->output.file);
    const auto store = store::open_store(resolve_db_path(a->db), store::Mode::kMustExist);
    const auto run = app::load_stored_run(*store, a->run);
    app::with_result_documents(fmt::format("run {}", a->run), [&] { write_export(run, a->output.format, output.stream()); });
    output.commit();
  });
}

}  // namespace edgeprobe::cli
