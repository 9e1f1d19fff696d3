#include "app/doctor_job.h"

#include <algorithm>

#include "app/plan.h"
#include "store/store.h"
#include "core/stop_token.h"

namespace edgeprobe::app {

using nlohmann::json;

namespace {

// A doctor run is stored whole when it ends: it has no unit worth resuming (its bench
// children are minutes, not hours), and a crash mid-diagnosis leaves a "running" run
// that says so.
// The sink (a stream, a lab controller) gets the same: provenance, plan and result.
int64_t store_result(const JobContext& ctx, const doctor::DoctorOptions& o, bool tune,
                     const std::optional<result::BenchReport>& primary_report, const result::DoctorResult& document) {
  const json result = result::to_json(document);  // as the store keeps it
  json provenance = primary_report ? result::to_json(primary_report->provenance) : json::object();
  provenance["command_line"] = ctx.command_line;
  const json plan = to_json(doctor_plan_of(o, tune));
  if (ctx.sink) ctx.sink->doctor_end(provenance, plan, document);
  if (!ctx.store) return 0;
  const int64_t run = ctx.store->begin_run("doctor", provenance, plan);
  ctx.store->record_run_summary(run, "doctor", result);
  ctx.store->finish_run(run, store::Status::kComplete);
  return run;
}

// Progress in bench children: doctor says "measuring ..." as each one starts. The total
// is the most it may run (the best-variant and thread-sweep children depend on what the
// first one finds); it settles to the children that ran when the diagnosis starts.
doctor::ProgressFn child_progress(const doctor::DoctorOptions& o, const JobContext& ctx) {
  const size_t most = 1 + (o.experiments ? size_t{1} + !o.config.cpu_variant.empty() + !o.config.use_mmap : 0);
  return [&ctx, most, started = size_t{0}](const std::string& s) mutable {
    if (!ctx.sink) return;
    ctx.sink->progress(s);
    if (s.starts_with("measuring")) {
      ctx.sink->units(started, std::max(most, started + 1), "children");
      ++started;
    }
    if (s == "diagnosing") ctx.sink->units(started, started, "children");
  };
}

}  // namespace

DoctorJobResult run_doctor(const doctor::DoctorOptions& options, const JobContext& ctx) {
  const ProcessStopWatch watching;  // its children are not left running by a first Ctrl-C
  DoctorJobResult out;
  warn_oversubscription({options.config.threads}, ctx);
  out.diagnosis = doctor::run_doctor(options, child_progress(options, ctx));
  out.outcome.run_id = store_result(ctx, options, false, out.diagnosis.evidence.primary.report,
                                    doctor::to_report(out.diagnosis));
  return out;
}

TuneJobResult run_tune(const doctor::DoctorOptions& options, const JobContext& ctx) {
  const ProcessStopWatch watching;
  TuneJobResult out;
  warn_oversubscription({options.config.threads}, ctx);
  out.tune = doctor::tune(
      options, [&](const std::string& s) {
        if (ctx.sink) ctx.sink->progress(s);
      },
      [&](size_t done, size_t total) {
        if (ctx.sink) ctx.sink->units(done, total, "children");
      });
  out.outcome.run_id = store_result(ctx, options, true, std::nullopt, doctor::to_report(out.tune));
  return out;
}

}  // namespace edgeprobe::app
