// Doctor's result document from what it measured: every finding, its evidence and the
// runs behind it (result/doctor.h). Every format is made from that document.
#include "doctor/doctor.h"

namespace edgeprobe::doctor {
namespace {

result::DoctorChild child_record(const BenchRun& run) {
  result::DoctorChild c;
  c.label = run.label;
  c.config = run.config.bench_args();
  c.command = run.command;
  c.error = run.error;
  c.wall_s = run.window.wall_s;
  c.child_cpu_s = run.window.child_cpu_s;
  c.other_cpu_share = run.window.other_cpu_share;
  c.throttled_ms = run.window.throttled_ms;
  c.cpu_pressure_share = run.window.cpu_pressure_share;
  c.reference_kernel_ms = run.reference_ms;
  return c;
}

}  // namespace

result::DoctorReport to_report(const Diagnosis& d) {
  const auto& e = d.evidence;
  result::DoctorReport r;
  r.model = e.options.model_path;
  r.config = e.options.config.bench_args();
  r.n_prompt = e.options.n_prompt;
  r.n_gen = e.options.n_gen;
  r.repetitions = e.options.repetitions;
  r.healthy = true;
  for (const auto& f : d.findings) r.healthy = r.healthy && f.severity == Severity::kInfo;
  r.findings = d.findings;
  r.runs.push_back(child_record(e.primary));
  for (const auto* run : {&e.best_variant, &e.thread_sweep, &e.with_mmap})
    if (*run) r.runs.push_back(child_record(**run));
  for (const auto* c : {&e.variant_pairs, &e.thread_pairs, &e.mmap_pairs, &e.gpu_pairs})
    if (*c) r.comparisons.push_back(**c);  // the document's part of it
  r.reference_kernel_best_ms = e.reference_best_ms;
  r.speed_variation = e.speed_variation;
  r.budget_s = e.budget_s;
  r.emulated = emulated_run(e);
  r.wall_s = d.wall_s;
  r.primary = e.primary.report;
  return r;
}

}  // namespace edgeprobe::doctor
