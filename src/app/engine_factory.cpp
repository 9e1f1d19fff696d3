#include "app/engine_factory.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "engine/llama_engine.h"
#include "http/http_engine.h"

namespace edgeprobe::app {

EngineHandle make_engine(const Environment& env) {
  EngineHandle h;
  if (!env.endpoint.empty()) {
#ifndef EDGEPROBE_WITH_HTTP
    throw_environment("--endpoint: this edgeprobe was built without the HTTP endpoint engine (EDGEPROBE_HTTP=OFF, "
                      "no libcurl, as device bundles are); run it from a build with it, e.g. the controller's");
#else
    http::EndpointOptions o;
    o.url = env.endpoint;
    o.model = env.api_model;
    o.api = env.api.empty() ? "completions" : env.api;
    o.request_timeout_s = env.request_timeout_s;
    o.stall_timeout_s = std::min(o.stall_timeout_s, env.request_timeout_s);
    o.server_pid = env.server_pid;
    h.engine = http::connect_endpoint(o);
    h.identity = result::engine_from_json(h.engine->provenance());
    return h;
#endif
  }
  engine::start_log_capture(env.verbose_engine_log);
  h.cpu_backend = &engine::load_cpu_backend(env.cpu_variant);
  auto llama = std::make_unique<engine::LlamaEngine>(*h.cpu_backend);
  const auto gpu_backends = llama->gpu_backends();
  h.engine = std::move(llama);
  if (!env.prefill_remote.empty()) {
    kv::RemotePrefillOptions o;
    o.client.server = kv::parse_endpoint(env.prefill_remote);
    o.client.token = kv::load_token(env.prefill_token_file);
    o.compare_local = env.prefill_compare_local;
    o.send_tail = env.prefill_transfer != "whole";
    o.required = env.prefill_remote_required;
    h.prefill_log = std::make_shared<kv::PrefillLog>();
    h.inner = std::move(h.engine);
    h.engine = std::make_unique<kv::RemotePrefillEngine>(*h.inner, std::move(o), h.prefill_log);
  }
  h.identity = result::engine_from_json(h.engine->provenance());
  h.identity.gpu_backends = gpu_backends;
  return h;
}

EngineHandle make_engine(const Environment& env, const JobContext& context) {
  return context.engine ? context.engine(env) : make_engine(env);
}

EngineHandle engine_handle(std::unique_ptr<engine::Engine> engine) {
  EngineHandle h;
  h.engine = std::move(engine);
  h.identity = result::engine_from_json(h.engine->provenance());
  return h;
}

nlohmann::json engine_log_json() {
  nlohmann::json lines = nlohmann::json::array();
  for (const auto& line : engine::captured_log(engine::LogLevel::kInfo))
    lines.push_back({{"level", static_cast<int>(line.level)}, {"text", line.text}});
  return lines;
}

void attach_prefill_record(kv::PrefillLog& log, const Environment& env, nlohmann::json& record, double& ttft_ms,
                           double& prefill_ms, double& prefill_tokens_per_s) {
  const auto last = log.take_last();
  if (!last) return;
  record = last->to_json();
  if (!env.prefill_compare_local) return;
  ttft_ms = last->ttft_ms;
  prefill_ms = last->ttft_ms;
  prefill_tokens_per_s = last->ttft_ms > 0 ? last->tokens / (last->ttft_ms / 1e3) : 0;
}

std::string fallback_warning(const nlohmann::json& record, const Environment& env, std::set<std::string>& said) {
  if (!record.is_object() || record.value("mode", "") != "local") return "";
  const std::string reason = record.value("fallback_reason", "");
  if (!said.insert(reason).second) return "";
  return fmt::format(
      "--prefill-remote {}: fell back to a local prefill: {}; {} (such rows say \"local (fallback)\"; "
      "--prefill-remote-required makes a fallback an error)",
      env.prefill_remote, reason, kv::fallback_advice(reason, env.prefill_remote));
}

}  // namespace edgeprobe::app
