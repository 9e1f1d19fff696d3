#include "cli/cmd_run.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>

#include "app/bench_job.h"
#include "app/doctor_job.h"
#include "app/models.h"
#include "app/session_job.h"
#include "app/stream_frames.h"
#include "app/stream_sink.h"
#include "cli/common.h"
#include "cli/shared_flags.h"
#include "core/error.h"
#include "store/store.h"
#include "report/formats.h"

namespace edgeprobe::cli {
namespace {

struct RunFlags {
  std::string plan, db, trace;
  OutputFlags output{"jsonl", ""};  // the stream has one format; -q: it shows no progress anyway
};

int run(const RunFlags& f, const std::string& command_line) {
  OutputTarget output(f.output.file);
  // -o lava: the same stream, framed to survive a LAVA job log (app/stream_frames.h).
  std::optional<app::FramedOutput> framed;
  if (f.output.format == "lava") framed.emplace(output.stream());
  app::StreamSink sink(framed ? framed->stream() : output.stream());
  auto close = [&] {
    if (framed) framed->finish();
    output.commit();
  };
  try {
    app::Plan plan = app::read_plan(f.plan);
    app::validate(plan, workload::default_thread_count());
    // A plan streams its results; it is stored here only when asked (a lab controller
    // stores what it receives in its own store).
    std::unique_ptr<store::Store> store;
    if (!f.db.empty()) store = store::open_store(f.db, store::Mode::kCreate);
    const app::JobContext ctx{store.get(), 0, &sink, command_line, f.trace};
    sink.start(app::kind_of(plan), app::to_json(plan));
    app::JobOutcome outcome;
    if (auto* bench = std::get_if<app::BenchPlan>(&plan)) {
      outcome = app::run_bench(std::move(*bench), ctx).outcome;
    } else if (auto* session = std::get_if<app::SessionPlan>(&plan)) {
      outcome = app::run_session(std::move(*session), ctx).outcome;
    } else {
      const auto& doctor = std::get<app::DoctorPlan>(plan);
      const auto options = app::doctor_options(doctor, app::ModelSet::resolve(doctor.model, &sink));
      outcome = doctor.tune ? app::run_tune(options, ctx).outcome : app::run_doctor(options, ctx).outcome;
    }
    sink.end(outcome);
    close();
    for (const auto& e : outcome.errors) std::cerr << "edgeprobe: error: " << e << "\n";
    return outcome.exit_code;
  } catch (const Error& e) {
    // The fatal event ends the stream as a reader expects it, so the file is kept too.
    sink.fatal(error_kind_name(e.kind()), e.what());
    close();
    throw;
  }
}

}  // namespace

void register_run(CLI::App& app, const std::vector<std::string>& command_line) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand(
      "run", "Execute a bench or session plan (JSON) and stream JSON Lines: progress, each unit, the result");
  cmd->add_option("--plan", f->plan, "Plan file, or - for stdin (format: docs/wire-format.md)")->required();
  add_db_option(cmd, f->db, "not stored: a lab controller stores what it receives");
  add_output_options(cmd, f->output, {report::formats_of(report::OutputKind::kStream)}, "the stream; lava: framed for a LAVA job log");
  cmd->add_option("--trace", f->trace, "Write a Chrome/Perfetto trace of the run");
  cmd->callback([f, command_line] {
    const int rc = run(*f, join_command_line(command_line));
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace edgeprobe::cli
