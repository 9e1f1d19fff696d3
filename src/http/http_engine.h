#pragma once
#include <memory>
#include <string>

#include "engine/engine.h"

// An engine behind an OpenAI-compatible HTTP endpoint (llama-server, Ollama, vLLM,
// MLC-LLM, an app's own server): whole streamed requests, no token level.
namespace edgeprobe::http {

struct EndpointOptions {
  std::string url;                            // http(s)://host:port[/v1]
  std::string model;                          // the model name requests carry (--api-model)
  std::string api = "completions";            // "completions" or "chat"
  std::string key_env = "EDGEPROBE_API_KEY";  // the API key is read from this variable
  double request_timeout_s = 300;
  double stall_timeout_s = 60;
  int max_retries = 3;  // for 429 and 503, waiting as Retry-After says (bounded)
  double max_retry_wait_s = 10;
  // A local server's process (--server-pid): its command line says what threads it runs,
  // which llama-server does not report over HTTP. 0: not known.
  int server_pid = 0;
};

// Throws Error(kBadInput) for a URL that is not http(s), an empty model name or api.
void validate_endpoint(const EndpointOptions& options);

// Connects: checks the endpoint answers and serves `model` (when it lists its models),
// and learns what it says of itself (its model list, llama-server's /props; provenance's
// details.server_side, docs/endpoint.md). Throws
// Error(kBadInput) for an endpoint that cannot be reached or does not serve the model,
// so a typo fails at once with one line.
std::unique_ptr<engine::Engine> connect_endpoint(const EndpointOptions& options);

}  // namespace edgeprobe::http
