#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "doctor/doctor.h"
#include "runner/bench_runner.h"
#include "runner/session_runner.h"
#include "workload/sweep.h"

namespace edgeprobe::app {

// Plans are what a job runs, as data: built from flags by the CLI, read from a file by
// `edgeprobe run --plan`, stored with every run so --resume rebuilds the same sweep, and
// sent to a remote device by the lab. One place holds their defaults (the member
// initializers below), one validation and one JSON form (docs/wire-format.md).
inline constexpr int kPlanVersion = 1;

// Settings every job shares: which engine variant, what telemetry, where sysfs is.
struct Environment {
  std::string cpu_variant;         // "" = the best ggml CPU variant for this CPU
  double sample_hz = 20;           // telemetry sampling rate; 0 = off
  std::string sysfs_root = "/";    // a fixture tree stands in for a phone
  bool verbose_engine_log = false; // echo llama.cpp's log to stderr
  // KV disaggregation (docs/disaggregation.md): prefill on a kv-serve node at HOST:PORT,
  // decode here. The token comes from the file, else EDGEPROBE_KV_TOKEN; it is never stored.
  std::string prefill_remote;
  std::string prefill_token_file;
  bool prefill_compare_local = false;  // also prefill locally, timed apart, in each repetition/turn
  std::string prefill_transfer = "tail";  // later turns: "tail" (the new cells only) or "whole" state
  // A fallback to local prefill is an error of the repetition or turn (exit 3), not a
  // warning: for runs whose point is the remote path.
  bool prefill_remote_required = false;
  // An OpenAI-compatible endpoint instead of the in-process engine (docs/endpoint.md);
  // its API key comes from $EDGEPROBE_API_KEY and is never part of a plan.
  std::string endpoint;            // "" = in-process
  std::string api_model;           // the model name requests carry
  // "" = the token level in-process; "completions" or "chat": every repetition or turn is
  // one completion request (an endpoint's only path; in-process, the same code as one).
  std::string api;
  double request_timeout_s = 300;
  int server_pid = 0;              // telemetry follows this local server's threads (with --endpoint)
};

struct BenchPlan {
  // The sweep as the user wrote it; models may be "synth:SHAPE[:QUANT]" or "" (the
  // built-in default) until the job resolves them. Ignored when `cases` is given.
  workload::SweepSpec sweep = default_sweep();
  // Explicit test cases (a stored plan, a hand-written one); expanded from `sweep` when empty.
  std::vector<workload::TestCase> cases;
  runner::RunnerOptions run;       // repetitions, delay, warm-up, seed
  Environment env;
  bool hash_models = true;         // SHA-256 of each model file
  bool keep_engine_log = false;    // llama.cpp's log (info and above) into the result, for doctor
  std::string ceilings = "auto";   // auto (cached probe), refresh, off
  // --verify-against: a result (file or run id) whose greedy continuations (run.verify_tokens)
  // this run's are compared with; "" = none.
  std::string verify_against;
  // Its continuations, read by the command line before the job starts (a bad reference
  // fails before anything runs); not part of the stored plan, which names the reference.
  std::vector<result::GreedyCheck> verify_reference;
  // Repetitions a controller already holds (`lab run --resume`): reused, not measured
  // again. Each is {"case_index", "repetition"}, as the stream's repetition event sent it.
  nlohmann::json completed = nlohmann::json::array();

  static workload::SweepSpec default_sweep() {
    workload::SweepSpec s;
    s.models = {""};
    return s;
  }
};

struct SessionPlan {
  std::vector<std::string> models{""};  // resolved by the job like bench's
  std::vector<int> n_ctx{2048}, max_tokens{128}, n_batch{512}, threads;  // threads: empty = default
  // GPU offload of every configuration (-ngl, -dev, -nopo), as bench's defaults.
  int n_gpu_layers = kDefaultGpuLayers;
  std::string devices;
  bool op_offload = true;
  // Expanded configurations (model outermost); filled by validate() from the lists above
  // unless given explicitly (a stored plan).
  std::vector<runner::SessionConfig> configs;
  runner::SessionOptions options;
  std::string prompts;             // conversations JSONL; "" = the built-in set
  Environment env;
  // Turns a controller already holds (`lab run --resume`), replayed untimed like a
  // resumed run's: each {"config_index", "turn"}, as the stream's turn event sent it.
  nlohmann::json completed = nlohmann::json::array();
};

// What `edgeprobe doctor` diagnoses, as data, so that `run --plan` and `lab run` carry it
// to a device like a bench or a session: doctor's own settings (config, tests, budget,
// baseline; their defaults are the doctor command's) and which model, and whether to tune.
struct DoctorPlan : doctor::DoctorSettings {
  std::string model;             // a file or synth:SHAPE[:QUANT]; "" = the built-in default
  bool tune = false;             // search the fastest configuration instead (doctor --tune)
};

// Checks every value and fills the derived fields (cases/configs); throws
// Error(kBadInput) naming the flag and the value, so a typo fails in a second, not an
// hour into a sweep. Model specs are not resolved here (that writes files).
void validate(BenchPlan& plan, int default_threads);
void validate(SessionPlan& plan, int default_threads);
void validate(DoctorPlan& plan, int default_threads);  // resolves threads 0

// {"kind": "bench"|"session", "plan_version": 1, ...}. from_json accepts what to_json
// writes and hand-written plans (every field optional but the kind); unknown keys are an
// error so a misspelt setting is not silently ignored.
nlohmann::json to_json(const BenchPlan& plan);
nlohmann::json to_json(const SessionPlan& plan);
nlohmann::json to_json(const DoctorPlan& plan);
BenchPlan bench_plan_from_json(const nlohmann::json& j);
SessionPlan session_plan_from_json(const nlohmann::json& j);
DoctorPlan doctor_plan_from_json(const nlohmann::json& j);
std::string plan_kind(const nlohmann::json& j);  // "bench", "session", "doctor"; throws for anything else

// Any plan a job runs: the one closed set every frontend (`run --plan`, the lab) holds and
// dispatches on, so no caller walks plan JSON or compares kind strings of its own.
using Plan = std::variant<BenchPlan, SessionPlan, DoctorPlan>;
Plan plan_from_json(const nlohmann::json& j);  // by its "kind"; throws kBadInput
// A plan file, or "-" for stdin: at most kMaxPlanBytes and kMaxPlanDepth levels of
// nesting (a plan is outside bytes: a lab's, a user's, a pipe's); every refusal is one
// line naming the source. Throws kBadInput.
inline constexpr size_t kMaxPlanBytes = 64u << 20;  // a doctor plan carries a baseline result
inline constexpr int kMaxPlanDepth = 64;
Plan read_plan(const std::string& source);
nlohmann::json to_json(const Plan& plan);
std::string kind_of(const Plan& plan);  // "bench", "session", "doctor"
void validate(Plan& plan, int default_threads);
// The model specs a plan names (a bench's sweep models or cases, a session's models or
// configurations, doctor's model), distinct and in order; "" is the built-in default,
// which a plan without models runs. map_plan_models passes every one through `map`.
std::vector<std::string> plan_models(const Plan& plan);
void map_plan_models(Plan& plan, const std::function<std::string(const std::string&)>& map);
// A session's own conversations file ("" for the built-in set and for other plans).
std::string plan_prompts(const Plan& plan);

// The options doctor runs with, once the plan's model spec is a file (its children run as
// app::run_bench_child); and back (what a doctor run stores as its plan).
doctor::DoctorOptions doctor_options(const DoctorPlan& plan, const std::string& model_path);
DoctorPlan doctor_plan_of(const doctor::DoctorOptions& options, bool tune);

}  // namespace edgeprobe::app
