#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "store/store.h"

namespace edgeprobe::app {

// `explain --lab RUN --baseline DEVICE`: every device's run of a lab run against the
// baseline device's run of the same plan, one explanation each (analysis::explain), as
// {"kind": "explain-lab", "lab_run", "baseline", "rows": [{"device", "job", "run_id",
// "baseline_run_id", "explanation" | "error"}]}. A device whose pair explain refuses (another
// model, no ceilings) gets its error in its row; the others still explain. Throws
// Error(kBadInput) for a run that is not a lab run, or a baseline the lab run did not
// have (naming the devices it had).
nlohmann::json explain_lab_run(const store::Store& store, store::RunId lab_run, const std::string& baseline,
                               bool same_shape);

}  // namespace edgeprobe::app
