#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "result/result.h"

namespace edgeprobe::result {

// One configuration of a session sweep with its turns (as runner::TurnResult::to_json
// writes them, plus telemetry and frame counts) and the analysis of those turns
// (stability, change points, QES).
struct SessionConfigResult {
  int ordinal = 0;
  nlohmann::json config;    // {"model_path", "n_ctx", "max_tokens", "n_batch", "n_threads"}
  nlohmann::json analysis;  // analysis::analyse_session_turns
  std::vector<nlohmann::json> turns;
  std::optional<ErrorInfo> error;  // the configuration could not run (its model did not load)
};

// A session run: what `session -o json` prints, what the store loads back, what every
// session format (md, csv, json, jsonl) is generated from.
struct SessionReport {
  int schema_version = kSchemaVersion;
  int64_t run_id = 0;
  Provenance provenance;
  std::vector<std::string> telemetry_unavailable;
  std::vector<SessionConfigResult> configs;
};

nlohmann::json to_json(const SessionReport& report);
// Accepts what to_json writes (v2) and v1 session reports upgraded by result/migrate.h.
SessionReport session_report_from_json(const nlohmann::json& j);

// Turns that failed, in order ("config 0 round 1 c02 turn 2: message"), and the exit
// code the first failure maps to (0 when none failed).
std::vector<std::string> session_errors(const SessionReport& report, int* exit_code);

}  // namespace edgeprobe::result
