#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/stop_token.h"
#include "engine/engine.h"
#include "result/result.h"
#include "workload/sweep.h"

// Load on a server (or the in-process engine through its request path): many requests
// of one bench test, closed-loop at fixed concurrency or open-loop at a Poisson rate,
// summarized as vLLM's `bench serve` does (its field names, so a vLLM user reads them).
namespace edgeprobe::runner {

struct LoadOptions {
  std::vector<int> concurrency;       // closed loop: one level after another; empty = none
  double request_rate = 0;            // > 0: open loop, Poisson arrivals at this many per second
  int max_concurrency = 0;            // open loop's cap on requests in flight; 0 = 64
  int num_requests = 16;              // per level
  double max_duration_s = 300;        // per level: later arrivals are not sent
  std::map<std::string, double> slo;  // "ttft_ms", "tpot_ms", "e2el_ms" -> bound, for goodput
  bool enabled() const { return !concurrency.empty() || request_rate > 0; }
};

// "ttft_ms=500,tpot_ms=50" -> bounds; throws Error(kBadInput) naming what is wrong.
std::map<std::string, double> parse_slo(const std::string& text);
void validate(const LoadOptions& options);

// One level (concurrency c, or the request rate when c = 0), summarized from its requests.
// Each worker gets its own completer (a server connection, or an in-process context).
// Asked to stop, no further request is sent; those in flight finish and are counted.
result::ServingLevel run_load_level(const engine::LoadedModel& model, const engine::ContextOptions& context,
                              const workload::TestCase& test, const std::string& api,
                              const LoadOptions& options, int concurrency, uint64_t seed,
                              const RunClock& clock, const StopToken& stop);

// Summary of one level from its per-request records (pure; exposed for tests).
struct RequestRecord {
  bool ok = false;
  std::string error;
  double start_s = 0, end_s = 0;  // on the run clock
  double ttft_ms = 0, tpot_ms = 0, e2el_ms = 0;
  std::vector<double> itl_ms;
  int prompt_tokens = 0, completion_tokens = 0;
};
// The level's own fields (concurrency, rate, requests asked for) are left to the caller.
result::ServingLevel summarize_load(const std::vector<RequestRecord>& records, const std::map<std::string, double>& slo);

}  // namespace edgeprobe::runner
