#pragma once
// The hub's view of a store: one row of facets and headline figures per run, computed once
// from the run's own result document (app::load_stored_run) and kept in memory, so that a
// page filters, sorts and ranks thousands of runs without reading their units again.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "app/stored_run.h"

namespace edgeprobe::hub {

// A phase's best test in a run: its median rate and, when the document carried the
// device's ceilings, that rate over the ceiling (1.0 = the ceiling).
struct PhaseFigure {
  std::string test;         // "pp512", "tg128"
  double tokens_per_s = 0;  // the median repetition
  std::optional<double> efficiency;
};

struct RunRow {
  int64_t id = 0;
  std::string created_at, kind, status;
  std::string device_id, device_name, chip, backend;
  std::string model_name, model_sha, quant;
  std::string llama_commit, edgeprobe_version;
  std::string submitter;       // the write token's name; "" for a run recorded locally
  std::string ceilings_check;  // "checked", "unchecked" or "" (not submitted)
  std::optional<PhaseFigure> prefill, decode;
  std::optional<double> ttft_ms;  // of the prefill figure's test
};

// The facets of a stored run; the figures of a bench run. `submission` is the hub's record
// of how it arrived (the plan's "hub" object), null for a run recorded on this machine.
RunRow row_of(const app::StoredRun& run, const nlohmann::json& submission);

// Empty values match everything. Text filters match any part, case-insensitively, except
// sha and commit (a prefix) and kind (exact). Dates compare against created_at's text.
struct RunQuery {
  std::map<std::string, std::string> filters;  // keys: kFilterKeys
  std::string sort = "id";                     // kSortKeys
  bool descending = true;
  size_t page = 1, per_page = 50;
};
extern const std::vector<std::string> kFilterKeys;
extern const std::vector<std::string> kSortKeys;
inline constexpr size_t kMaxPerPage = 200;

struct RunPage {
  size_t total = 0;  // rows matching the filter
  std::vector<RunRow> rows;
};
RunPage query_runs(const std::vector<RunRow>& all, const RunQuery& query);

// One device on a leaderboard: its best run of the model and quantization for the phase.
struct Placing {
  RunRow run;
  PhaseFigure figure;
};
struct Leaderboard {
  std::string model, quant;
  std::vector<Placing> prefill, decode;  // fastest first, one entry per device
};
Leaderboard leaderboard(const std::vector<RunRow>& all, const std::string& model, const std::string& quant);

// Every model and quantization that has a bench run, with how many devices ran it.
struct BoardKey {
  std::string model, quant;
  size_t devices = 0, runs = 0;
};
std::vector<BoardKey> leaderboards(const std::vector<RunRow>& all);

nlohmann::json to_json(const RunRow& row);
nlohmann::json to_json(const Leaderboard& board);

}  // namespace edgeprobe::hub
