#pragma once
#include <set>

#include "app/job.h"
#include "app/plan.h"
#include "probe/ceilings.h"

namespace edgeprobe::app {

// Measures the step costs (probe::StepCosts) that `ceilings` lacks at each thread count:
// two synthesized tiny models that differ only in depth (4 and 16 layers) are benchmarked
// through the real engine (tg32 at depth 0 and 1024, pp64 at depth 0 and 512, pp256), the
// time the kernel probe accounts for (their matmuls) is taken off, and the rest is split by
// differences that change one thing each: depth gives attention's cost per position, the
// layer count the cost per layer, and what is left of the shallow model the cost per step.
// Cached with the ceilings. A run the stop token ends, or that fails, stores nothing and
// says so through the sink. Returns how many thread counts were measured.
int ensure_step_costs(probe::DeviceCeilings& ceilings, const std::set<int>& threads, const Environment& env,
                      const probe::ProbeOptions& options, const JobContext& context);

}  // namespace edgeprobe::app
