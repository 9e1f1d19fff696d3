#pragma once
// Whether a test's figures were measured on a machine that was doing something else: a
// spread of the repetitions wider than their median allows, a decode-step tail far past
// its median, other processes taking CPU time the threads needed. Computed from what the
// result already holds, so results of every release are judged alike; bench warns when it
// stores one, the md marks its row, explain says it discounts it.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "result/result.h"

namespace edgeprobe::analysis {

// The bounds, each a factor a healthy run on a noisy 2-core VM stays well inside.
inline constexpr double kContaminatedSpread = 0.30;     // sample sd over median, of prefill or decode tokens/s
inline constexpr double kContaminatedTail = 10;         // decode step p99 over p50
inline constexpr double kContaminatedCpuCost = 1.10;    // contention_cost of other processes on the threads
inline constexpr double kMinJudgedMs = 250;  // phases shorter than this in all: CPU shares not judged

// One line per bound the test is past ("decode spread: sd 12406 over median 12313 (101 %,
// bound 30 %)"); empty for a clean test. `provenance` (JSON) gives the usable and machine
// CPUs the other-process share is judged against.
std::vector<std::string> contamination(const result::TestResult& test, const nlohmann::json& provenance);
// The same from a test result's JSON (a result file or a stored run); empty when it does
// not read as one.
std::vector<std::string> contamination(const nlohmann::json& test, const nlohmann::json& provenance);

}  // namespace edgeprobe::analysis
