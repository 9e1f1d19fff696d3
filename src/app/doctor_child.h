#pragma once
#include "app/plan.h"
#include "doctor/doctor.h"

namespace edgeprobe::app {

// doctor's bench children: the configuration and tests as a BenchPlan sent on stdin to
// `edgeprobe run --plan -`, and the child's wire-format stream read back by the reader
// the lab reads a device's with (app::StreamReader). This lives in app/, not doctor/:
// the plan and the reader are app's, and app depends on doctor, so doctor takes it as
// DoctorOptions::bench_child.
BenchPlan bench_child_plan(const doctor::DoctorOptions& options, const doctor::RunConfig& config,
                           const doctor::ChildTests& tests);
// Never throws for a child that fails: ChildOutput::error says why, in one line.
doctor::ChildOutput run_bench_child(const doctor::DoctorOptions& options, const doctor::RunConfig& config,
                                    const doctor::ChildTests& tests);

}  // namespace edgeprobe::app
