#pragma once
#include "app/job.h"
#include "app/plan.h"
#include "result/result.h"

namespace edgeprobe::app {

struct BenchJobResult {
  result::BenchReport report;
  JobOutcome outcome;
};

// Runs a bench plan: resolves and identifies the models, measures (or reads the cached)
// device ceilings, runs every test with telemetry on one clock, commits each repetition
// to the store as it completes and hands it to the sink. A failing test is an error row
// and the sweep goes on; a stop request ends it after the repetition in flight. Throws
// Error for a plan that cannot start at all (bad model file, bad variant).
BenchJobResult run_bench(BenchPlan plan, const JobContext& context);

// The plan of a stored bench run, for --resume; throws kBadInput when the run is not a
// bench run or is already complete.
BenchPlan stored_bench_plan(store::Store& store, int64_t run);

// Each test's own data beyond its repetitions (load times, test telemetry, roofline, the
// error with its kind) is stored as the run summary "test<i>"; stored_run.cpp reads it.
std::string test_summary_phase(size_t case_index);
nlohmann::json test_level_json(const result::TestResult& result);

}  // namespace edgeprobe::app
