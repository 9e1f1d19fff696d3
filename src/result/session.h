#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/context_defaults.h"
#include "result/result.h"

namespace edgeprobe::result {

// Frames of the frame probe (analysis/frame_probe.h) whose deadline fell in one phase of a
// turn: all of them, those that missed their vsync, those that started late but made it.
struct FrameCounts {
  int64_t due = 0, missed = 0, late = 0;
  bool operator==(const FrameCounts&) const = default;
};

// One user turn of a session, measured: what the session runner produces, the store keeps
// one row of, the stream carries, and every session format is written from.
struct Turn {
  int round = 0;
  std::string conversation_id;
  int turn_index = 0;
  int prompt_tokens = 0;     // new tokens prefilled this turn (the history is cached); a request's whole prompt
  int context_tokens = 0;    // tokens in the KV cache after the turn
  int generated_tokens = 0;
  // "end_of_turn", "max_tokens", "context_full", "context_shifted" (after a comma), or
  // "error": the turn failed (see `error`) and ended its conversation.
  std::string stop_reason;
  // Not measured is not zero: what a failed turn never reached, and the decode rate of a
  // turn with at most one token (the first comes from the prefill), are nullopt (null).
  std::optional<double> ttft_ms;  // prefill + picking the first token
  std::optional<double> prefill_ms, prefill_tokens_per_s;
  std::optional<double> decode_tokens_per_s;  // tokens after the first over their time
  std::optional<double> e2e_ms;               // from the turn's start to its last token
  std::vector<double> decode_step_ms;
  int64_t start_ns = 0, prefill_end_ns = 0, end_ns = 0;  // run clock; end_ns 0: nothing was timed
  std::string reply;                  // generated text (invalid UTF-8 replaced in JSON)
  std::vector<int32_t> reply_tokens;  // what was decoded into the cache: a resumed run replays these
  // {"prefill": ..., "decode": ...}, each telemetry::summarize's per-source figures: open
  // ended (which sources a device has), so JSON, as bench repetitions keep it.
  nlohmann::json telemetry;
  std::optional<double> missed_frame_share_prefill, missed_frame_share_decode;
  std::optional<FrameCounts> frames_prefill, frames_decode;  // absent: the turn was not timed
  std::optional<ErrorInfo> error;  // why the turn failed; the figures so far are kept
  // A turn run as one completion request: the server's own timings and counts, whatever
  // fields that server reports, so JSON. Absent for a token-level turn.
  std::optional<nlohmann::json> request;
  // --prefill-remote: the TTFT split record of kv/ (docs/disaggregation.md), JSON as a
  // bench repetition keeps it. Absent otherwise.
  std::optional<nlohmann::json> prefill_remote;
  // Keys of the fields above (one bit each, in the order to_json lists them) that the
  // document this turn was read from did not have: turns stored before failed turns were
  // recorded have no "error", hand-written ones leave out more. to_json leaves them out
  // again, so a stored run exports the bytes it was stored as. 0 for a measured turn.
  uint32_t absent_keys = 0;

  // Whether the document had `key` (always, for a key outside that list).
  bool had(std::string_view key) const;
  bool operator==(const Turn&) const = default;
};

nlohmann::json to_json(const Turn& turn);
// Accepts every turn edgeprobe has written (and the partial ones plans and tests hold): a
// missing field reads as its default. A field of the wrong type throws Error(kBadInput)
// naming the field ("turn field 'ttft_ms' must be a number or null, got \"fast\"").
Turn turn_from_json(const nlohmann::json& j);

// One configuration of a session sweep (MELT's grid: model, context, generation length,
// batch, threads), as plans, the store and session documents hold it.
struct SessionConfig {
  std::string model_path;
  int n_ctx = 2048;
  int max_tokens = 128;
  int n_batch = 512;
  int n_threads = 1;
  // GPU offload, as bench takes it (engine::ModelOptions); written to JSON only when not the
  // default, so a CPU session's documents read as before.
  int n_gpu_layers = kDefaultGpuLayers;
  std::string devices;
  bool op_offload = true;
  nlohmann::json to_json() const;
  bool operator==(const SessionConfig&) const = default;
};
// The inverse of to_json: a missing key reads as its default; a key of the wrong type
// throws Error(kBadInput) naming it. Keys it does not know are not kept.
SessionConfig session_config_from_json(const nlohmann::json& j);

// One configuration of a session sweep with its turns and the analysis of those turns
// (stability, change points, QES).
struct SessionConfigResult {
  int ordinal = 0;
  SessionConfig config;
  nlohmann::json analysis;  // analysis::analyse_session_turns
  std::vector<Turn> turns;
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
