#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/stats.h"
#include "engine/backend.h"
#include "engine/placement.h"
#include "platform/device_identity.h"
#include "result/roofline.h"
#include "workload/sweep.h"

namespace edgeprobe::result {

// Version of the result schema below. Every output format (md, csv, json, jsonl) and the
// results store are generated from these structs; bump on any incompatible change.
// v2: provenance names the engine and the device as objects (v1 had llama.cpp and host
// fields at the top); result/migrate.h upgrades v1 documents and stored runs.
inline constexpr int kSchemaVersion = 2;

struct TensorTypeStats {
  int64_t tensors = 0;
  uint64_t bytes = 0;
  uint64_t params = 0;
};

// Which file was measured: the seed's first pitfall is comparing two different files.
struct ModelIdentity {
  std::string path;
  std::string sha256;
  uint64_t size_bytes = 0;
  uint64_t n_params = 0;
  std::string architecture;
  std::string name;
  std::string dominant_type;  // the quantisation most weight bytes are in
  double bits_per_weight = 0;
  std::map<std::string, TensorTypeStats> tensor_types;
  int64_t n_layer = 0, n_embd = 0, n_ff = 0, n_head = 0, n_head_kv = 0, n_vocab = 0;
};

// What ran the workload. The in-process llama.cpp engine fills the ggml variant that
// actually loaded; another engine (scripted, an HTTP endpoint) leaves it empty and puts
// what it knows in `details`.
struct EngineIdentity {
  std::string name;     // "llama.cpp", "fake", ...
  std::string kind;     // "in-process", "scripted", "endpoint"
  std::string version;
  std::string commit;
  std::string cpu_variant;          // the ggml CPU backend variant that loaded
  std::string cpu_variant_library;
  std::vector<std::pair<std::string, std::string>> cpu_variant_features;
  std::vector<std::string> backends;  // the ggml backends registered ("CPU"); absent in older results
  // Each GPU backend library installed, why it did not load, the devices it found.
  std::vector<engine::GpuBackendInfo> gpu_backends;
  nlohmann::json details = nlohmann::json::object();
};

// Which build of edgeprobe measured (core/build_info.h); empty in results older than it,
// which then carry no "build" object.
struct BuildIdentity {
  std::string git_commit;
  bool git_dirty = false;
  std::string build_type, compiler;
  bool empty() const { return git_commit.empty() && build_type.empty() && compiler.empty(); }
};

// Where it ran: a stable id to group runs by device, and the names a user recognizes.
// Who the device is, and the rule that names it, live in platform/ (the lab's probe of a
// device applies the same rule).
using DeviceIdentity = platform::DeviceIdentity;

struct Provenance {
  std::string edgeprobe_version;
  BuildIdentity build;
  EngineIdentity engine;
  DeviceIdentity device;
  std::string started_at_utc;       // RFC 3339
  std::string command_line;
  std::vector<ModelIdentity> models;
  nlohmann::json extra = nlohmann::json::object();  // platform/probe additions
};

// One timed repetition of one test. Times are wall-clock on the monotonic run clock.
struct Repetition {
  int index = 0;
  int64_t start_ns = 0;  // run clock
  int64_t end_ns = 0;
  double ttft_ms = 0;    // see docs: prefill time, or the first decode step without a prompt
  double prefill_ms = 0;
  double prefill_tokens_per_s = 0;
  double decode_ms = 0;  // steps after the first generated token
  double decode_tokens_per_s = 0;
  std::vector<double> decode_step_ms;  // every decode step, synchronized
  int64_t peak_rss_bytes = -1;          // -1: unavailable
  nlohmann::json telemetry;             // {"prefill": {...}, "decode": {...}}; null when off
  nlohmann::json prefill_remote;        // --prefill-remote: the TTFT split (docs/disaggregation.md); null otherwise
  // A repetition run as one completion request (an endpoint, or --api in-process): token
  // counts, end-to-end and TPOT, and what the server said of its own timings; null else.
  nlohmann::json request;
};

struct ErrorInfo {
  std::string kind;  // "bad_input", "environment", "bug"
  std::string message;
  bool operator==(const ErrorInfo&) const = default;
};

// A latency over one load level's requests, vLLM's statistics of it; all nullopt when no
// request gave one (no token after the first: no TPOT).
struct LatencyDistribution {
  std::optional<double> mean, median, std, p90, p99;
  bool operator==(const LatencyDistribution&) const = default;
};

// One load level of a bench test (runner/load_runner.h: many requests, closed loop at a
// concurrency or open loop at a Poisson rate), in vLLM `bench serve`'s field names.
struct ServingLevel {
  std::optional<int> concurrency;      // closed loop; nullopt for an open loop
  std::optional<double> request_rate;  // open loop: arrivals per second
  int max_concurrency = 0;             // requests in flight at most
  int num_requests = 0, not_sent = 0;  // asked for; not sent before the level's time ran out
  int completed = 0, failed = 0;
  double duration_s = 0;               // first request's start to the last one's end
  int64_t total_input_tokens = 0, total_output_tokens = 0;
  // Per second of duration_s; nullopt when nothing completed. goodput: requests that met
  // every bound of the SLO, nullopt without one.
  std::optional<double> request_throughput, output_throughput, total_token_throughput, goodput;
  std::map<std::string, double> slo;   // "ttft_ms", "tpot_ms", "e2el_ms" -> bound
  std::vector<std::string> errors;     // the first few distinct ones
  LatencyDistribution ttft, tpot, itl, e2el;
  bool operator==(const ServingLevel&) const = default;
};

// --verify: the model's greedy continuation of a fixed prompt, computed after the timed
// repetitions (so the figures do not change), and where it first differs from a
// reference's continuation of the same prompt. Cheap: one short prompt and a few dozen
// decode steps. docs/fidelity.md, "Verified runs".
struct GreedyCheck {
  std::vector<int32_t> prompt;  // the prompt's token ids, in the model's own tokenizer
  std::vector<int32_t> tokens;  // the greedy continuation (ends early at end-of-generation)
  std::string reference;        // what it was compared with; "" when not compared
  int compared = 0;             // tokens compared: the shorter continuation's length
  int first_divergence = -1;    // the first position that differs; -1: none within `compared`
  bool verified() const { return !reference.empty() && compared > 0 && first_divergence < 0; }
};

// bench --draft (docs/speculative.md): per draft position, the verify steps whose draft
// reached it and those that accepted it. Acceptance is a prefix, so `accepted` never grows
// with the position; the rate may, where shorter drafts (near the end) reach fewer steps.
struct DraftPosition {
  int64_t drafted = 0;
  int64_t accepted = 0;
};

// One repetition of bench --draft: plain greedy decoding, then speculative decoding of the
// same prompt to the same length, back to back, so each pair shares the machine's state.
struct SpeculativePair {
  int index = 0;
  int tokens = 0;       // generated by each, the first (from the prefill) included
  double plain_ms = 0;  // plain decoding: the steps after the first generated token
  double spec_ms = 0;   // speculative decoding of the same tokens, likewise
  // spec_ms's parts, each timed on its own: the draft model (catching up, proposing), the
  // target (verifying batches, and single steps where no draft was worth it), the rest
  // (acceptance, cache truncation). What no part covers is spec_ms minus their sum.
  double draft_ms = 0, verify_ms = 0, overhead_ms = 0;
  double target_prefill_ms = 0, draft_prefill_ms = 0;  // before decoding; not in spec_ms
  bool identical = true;                               // the speculative tokens equal plain decoding's
};

struct Speculative {
  // The draft file (path, SHA-256, size, shape), here rather than in Provenance::models,
  // whose entries are the models the tests measured.
  ModelIdentity draft;
  int draft_max = 0, draft_min = 0;
  // The speculative tokens of the first pair against plain decoding's of the same run
  // (reference "plain decoding"): greedy speculation must not change a token.
  GreedyCheck check;
  // Summed over the pairs' speculative runs: target passes that verified a draft, single
  // target steps (no draft of draft_min tokens fitted), draft tokens proposed and accepted.
  int64_t verify_steps = 0, plain_steps = 0, drafted = 0, accepted = 0;
  std::vector<DraftPosition> positions;  // [j]: draft position j (0-based)
  std::vector<SpeculativePair> pairs;
  double acceptance_rate() const { return drafted > 0 ? static_cast<double>(accepted) / drafted : 0; }
  // Draft tokens accepted per verify step (0..draft_max); the target's pass yields one more.
  double mean_accepted() const { return verify_steps > 0 ? static_cast<double>(accepted) / verify_steps : 0; }
  bool identical() const;  // every pair's tokens equal plain decoding's
};

// What a report shows of a Speculative: medians over pairs and shares of the summed times.
struct SpeculativeSummary {
  double plain_tokens_per_s = 0, spec_tokens_per_s = 0;
  double speed_up = 0;  // the median of the pairs' plain_ms / spec_ms
  double speed_up_min = 0, speed_up_max = 0;
  double draft_share = 0, verify_share = 0, overhead_share = 0, unaccounted_share = 0;  // of spec_ms
};
SpeculativeSummary summarize(const Speculative& spec);

struct TestResult {
  workload::TestCase config;
  int model_index = 0;  // into Provenance::models
  std::optional<ErrorInfo> error;
  std::vector<double> load_ms;  // this model's loads: [0] first (cold), the rest warm
  double page_cache_resident_share = -1;  // of the file, before the first load; -1 unknown
  std::vector<Repetition> repetitions;
  nlohmann::json telemetry;  // {"sample_hz", "unavailable", "load"}: null when off
  std::optional<Roofline> roofline;  // ceilings and efficiencies; none without ceilings (or a failed test)
  // Load levels after the repetitions (--concurrency, --request-rate); none without them.
  std::optional<std::vector<ServingLevel>> serving;
  // Where the model and its compute lived: devices, layers offloaded, buffers, and from an
  // untimed probe which backend ran the graphs (docs/gpu.md). Empty when not known.
  engine::Placement placement;
  std::optional<GreedyCheck> verify;       // with --verify
  std::optional<Speculative> speculative;  // with --draft
};

struct BenchReport {
  int schema_version = kSchemaVersion;
  Provenance provenance;
  std::vector<TestResult> results;
};

// Aggregates computed from the raw repetitions; never stored apart from them.
struct TestSummary {
  stats::Summary prefill_tokens_per_s;
  stats::Summary decode_tokens_per_s;
  stats::Summary ttft_ms;
  stats::Percentiles token_latency_ms;  // pooled decode steps of all repetitions
  double token_latency_mean_ms = 0;
  size_t token_latency_steps = 0;  // 0: no decode step was timed (the latency fields are then absent)
  double load_cold_ms = -1;
  stats::Summary load_warm_ms;
  int64_t peak_rss_bytes = -1;
};
TestSummary summarize(const TestResult& result);

nlohmann::json to_json(const GreedyCheck& check);
std::optional<GreedyCheck> greedy_check_from_json(const nlohmann::json& j);  // nullopt for null
nlohmann::json to_json(const Speculative& spec);                             // with its summary
std::optional<Speculative> speculative_from_json(const nlohmann::json& j);   // nullopt for null

nlohmann::json to_json(const stats::Summary& summary);
nlohmann::json to_json(const ModelIdentity& model);
nlohmann::json to_json(const EngineIdentity& engine);
// The GPU backend libraries as results and sysinfo write them: each with why it did not
// load and its devices.
nlohmann::json to_json(const std::vector<engine::GpuBackendInfo>& backends);
nlohmann::json to_json(const DeviceIdentity& device);
nlohmann::json to_json(const Provenance& provenance);
// The inverse, for stored runs and result files (v2; upgrade v1 first with result/migrate.h).
ModelIdentity model_identity_from_json(const nlohmann::json& j);
EngineIdentity engine_from_json(const nlohmann::json& j);
DeviceIdentity device_from_json(const nlohmann::json& j);
Provenance provenance_from_json(const nlohmann::json& j);
nlohmann::json to_json(const workload::TestCase& config);  // without the model path
workload::TestCase test_case_from_json(const nlohmann::json& config, const std::string& model_path);
// One field of a stored config; a GPU setting to_json left out reads as what its absence
// means (n_gpu_layers 0, ...). Null for a field that is neither there nor such a setting.
nlohmann::json config_field(const nlohmann::json& config, const std::string& key);
nlohmann::json to_json(const Repetition& repetition);
Repetition repetition_from_json(const nlohmann::json& j);  // for --resume from the store
nlohmann::json to_json(const engine::Placement& placement);
engine::Placement placement_from_json(const nlohmann::json& j);
nlohmann::json to_json(const ServingLevel& level);
ServingLevel serving_level_from_json(const nlohmann::json& j);
// A test's levels: an array; nullopt for anything else (a test without load levels).
std::optional<std::vector<ServingLevel>> serving_from_json(const nlohmann::json& j);
nlohmann::json to_json(const TestResult& result);
nlohmann::json to_json(const BenchReport& report);
// The inverse, for bench documents read back (a doctor's children from their stream, a
// --baseline file; upgrade a v1 document first with result/migrate.h). The summaries are
// not read: summarize() computes them again from the repetitions. A field of the wrong
// type throws nlohmann::json::exception (app::with_result_documents makes it bad input),
// a document without results Error(kBadInput).
TestResult test_result_from_json(const nlohmann::json& j);
BenchReport bench_report_from_json(const nlohmann::json& j);

}  // namespace edgeprobe::result
