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

// What a finished test leaves in the store beyond its repetitions: its configuration's
// status, and its own data (load times, test telemetry, roofline, serving table, the error
// with its kind) as its test record (Store::record_test), which stored_run.cpp reads back.
// The one writer of both: a bench job passes the test it ran, the lab's stream recorder the
// test's result document off a device's stream, which is result::to_json of the same
// TestResult (a second field list here once lost the serving table of every lab run).
void record_test(store::Store& store, int64_t run, size_t case_index, const nlohmann::json& test_result);

}  // namespace edgeprobe::app
