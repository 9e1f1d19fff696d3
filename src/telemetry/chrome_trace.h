#pragma once
#include <ostream>
#include <vector>

#include "core/events.h"
#include "telemetry/timeline.h"

namespace edgeprobe::telemetry {

// Writes Chrome Trace Event JSON (the "JSON Array/Object Format" that chrome://tracing
// and Perfetto's legacy importer read): phases and tokens as "X" slices on their own
// named threads (Perfetto cannot show overlapping slices on one thread), every sampled
// series as a "C" counter track named after the series. Counters that accumulate (CPU
// time, energy, throttled time) are written as rates between samples. ts/dur in µs.
void write_chrome_trace(std::ostream& out, const Timeline& timeline, const std::vector<PhaseEvent>& events);

}  // namespace edgeprobe::telemetry
