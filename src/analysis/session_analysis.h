#pragma once
#include <nlohmann/json.hpp>

#include <vector>

#include "result/session.h"

namespace edgeprobe::analysis {

// Stability (CV, drift, change points tied to the turn and its telemetry) and the QES of
// one session configuration's turns, in the order they ran. Turns that generated nothing
// because the context was full are left out; failed turns too.
nlohmann::json analyse_session_turns(const std::vector<result::Turn>& turns);

}  // namespace edgeprobe::analysis
