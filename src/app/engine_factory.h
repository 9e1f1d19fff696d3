#pragma once
#include <nlohmann/json.hpp>

#include <memory>

#include "app/plan.h"
#include "engine/backend.h"
#include "engine/engine.h"
#include "result/result.h"

namespace edgeprobe::app {

// The engine a job runs its plan on. Today the in-process llama.cpp engine with the
// ggml CPU variant the plan asks for (the best one for this CPU by default); the HTTP
// engine of a later issue is chosen here too, from the plan, so no job knows which.
struct EngineHandle {
  std::unique_ptr<engine::Engine> engine;
  const engine::CpuBackendInfo* cpu_backend = nullptr;  // null for an engine without ggml
  result::EngineIdentity identity;                      // provenance's engine object
};
EngineHandle make_engine(const Environment& env);

// llama.cpp's own log lines at info level and above (the debug lines, one per tensor, say
// nothing doctor looks for), as provenance.llama_log.
nlohmann::json engine_log_json();

}  // namespace edgeprobe::app
