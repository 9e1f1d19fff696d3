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
  // The phase's energy over its tokens (the repetitions' telemetry, median), where the
  // device measured its total energy (Jetson rails, a discharging battery, RAPL).
  std::optional<double> joules_per_token = std::nullopt;
};

// Something a reader of a run should know before trusting its figures: kept and shown
// next to the run, never a reason to hide it (docs/hub.md, "Flags").
struct Flag {
  std::string code;    // "sha-malformed", "sha-absent", "sha-conflict", "outlier-prefill", "outlier-decode"
  std::string reason;  // one line, with the figures it rests on
};

// One device's ceilings as one run's roofline measured them, for one backend.
struct CeilingFigure {
  std::string backend;  // "CPU" or the GPU ("Vulkan0")
  double bandwidth_gb_per_s = 0, decode_kernel_gb_per_s = 0, prefill_compute_gflop_per_s = 0;
  bool suspect = false;  // a rate of the run was above it: the ceiling was measured low
};

// A doctor run's finding, as its list shows it.
struct FindingLine {
  std::string severity, id, title;
};

struct RunRow {
  int64_t id = 0;
  std::string created_at, kind, status;
  std::string device_id, device_name, chip, backend;
  std::string model_name, model_sha, quant;
  uint64_t model_params = 0;
  std::string llama_commit, edgeprobe_version;
  std::string submitter;       // the write token's name; "" for a run recorded locally
  std::string ceilings_check;  // "checked", "unchecked" or "" (not submitted)
  std::optional<PhaseFigure> prefill, decode;
  std::optional<double> ttft_ms;  // of the prefill figure's test
  // --verify against a reference: "verified ..." or "diverges ..."; "" when not compared.
  std::string fidelity;
  std::vector<CeilingFigure> ceilings;  // a bench run's, per backend
  std::vector<FindingLine> findings;    // a doctor run's
  std::vector<Flag> flags;              // set by flag_runs over the whole index
};

// The flags of every run, from the run itself (its model's SHA) and from the runs around
// it (the same name with another SHA; a rate far from its device class's). Pure: the same
// rows give the same flags, whatever order they arrived in.
void flag_runs(std::vector<RunRow>& rows);
// The same flags, one list per row, without touching the rows (the hub works them out
// under a reader's lock and only swaps them in under the writer's).
std::vector<std::vector<Flag>> compute_flags(const std::vector<RunRow>& rows);
inline constexpr double kOutlierFactor = 3;  // this many times above or below the median
inline constexpr size_t kOutlierPeers = 3;   // of at least this many other runs

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

// The devices that ran anything, most runs first.
struct DeviceKey {
  std::string id, name, chip;
  size_t runs = 0;
  std::string last_run_at;
};
std::vector<DeviceKey> devices(const std::vector<RunRow>& all);

// A device's page: its runs by date (oldest first), each bench run's ceilings, and the
// findings of its doctor runs.
struct DeviceView {
  DeviceKey device;
  std::vector<RunRow> runs;
};
DeviceView device_view(const std::vector<RunRow>& all, const std::string& device_id);

nlohmann::json to_json(const RunRow& row);
nlohmann::json to_json(const DeviceView& view);
nlohmann::json to_json(const Leaderboard& board);

}  // namespace edgeprobe::hub
