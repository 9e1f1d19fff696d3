#pragma once
#include "app/job.h"
#include "app/plan.h"
#include "result/session.h"

namespace edgeprobe::app {

struct SessionJobResult {
  result::SessionReport report;
  JobOutcome outcome;
};

// Runs a session plan: every configuration, rounds x conversations, turn by turn, with
// telemetry and the 60 Hz frame probe on one clock. Each turn is committed to the store
// and handed to the sink as it completes. A failing turn ends its conversation (the
// error is in the turn) and a configuration whose model fails to load is recorded; the
// sweep goes on. A stop request ends it after the turn in flight; --resume runs the rest.
SessionJobResult run_session(SessionPlan plan, const JobContext& context);

// The plan of a stored session run, for --resume; throws kBadInput when the run is not
// a session run or is already complete.
SessionPlan stored_session_plan(store::Store& store, int64_t run);

}  // namespace edgeprobe::app
