#pragma once
#include <nlohmann/json.hpp>

#include <memory>
#include <set>
#include <string>

#include "app/job.h"
#include "app/plan.h"
#include "engine/backend.h"
#include "engine/engine.h"
#include "kv/remote_prefill.h"
#include "result/result.h"

namespace edgeprobe::app {

// The engine a job runs its plan on. Today the in-process llama.cpp engine with the
// ggml CPU variant the plan asks for (the best one for this CPU by default); the HTTP
// engine of a later issue is chosen here too, from the plan, so no job knows which.
struct EngineHandle {
  std::unique_ptr<engine::Engine> engine;
  const engine::CpuBackendInfo* cpu_backend = nullptr;  // null for an engine without ggml
  result::EngineIdentity identity;                      // provenance's engine object
  // With env.prefill_remote: `engine` is the remote-prefill decorator around `inner`, and
  // each prefill's record (TTFT split, fallback) lands in prefill_log.
  std::unique_ptr<engine::Engine> inner;
  std::shared_ptr<kv::PrefillLog> prefill_log;
};
EngineHandle make_engine(const Environment& env);
// The engine a job runs on: the context's choice when it makes one (a test's fake
// engine), else make_engine(env).
EngineHandle make_engine(const Environment& env, const JobContext& context);
// A handle around an engine made elsewhere (the fake one in tests), its identity filled in.
EngineHandle engine_handle(std::unique_ptr<engine::Engine> engine);

// llama.cpp's own log lines at info level and above (the debug lines, one per tensor, say
// nothing doctor looks for), as provenance.llama_log.
nlohmann::json engine_log_json();

// Moves the last prefill's record (TTFT split, fallback) into `record`. With
// --prefill-compare-local the runner timed both paths inside one prefill, so the figures
// it measured are replaced by the remote path's own (the local one stays in the record).
void attach_prefill_record(kv::PrefillLog& log, const Environment& env, nlohmann::json& record, double& ttft_ms,
                           double& prefill_ms, double& prefill_tokens_per_s);

// The warning a prefill record calls for: a fallback says so once per distinct reason (a
// session against a stopped server fails the same way every turn), with what to do.
// Empty for a remote prefill, no record, or a reason already in `said`.
std::string fallback_warning(const nlohmann::json& record, const Environment& env, std::set<std::string>& said);

}  // namespace edgeprobe::app
