#include "http/http_engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "core/error.h"
#include "core/text.h"
#include "http/client.h"
#include "http/sse.h"

namespace edgeprobe::http {

using nlohmann::json;

namespace {

constexpr size_t kMaxEvent = 1 << 20;
// A server may send a few more chunks than tokens (an empty one, a stop piece); more
// than this over max_tokens is a stream that does not end.
constexpr int kChunkSlack = 16;
// Events of any kind (role, usage, empty deltas) and bytes of any kind (comments too) a
// stream of max_tokens may take: beyond them it is a stream that does not end, whatever it sends.
constexpr int64_t kEventsPerToken = 4;
constexpr int64_t kBytesPerToken = 64 << 10;
constexpr int64_t kStreamBaseBytes = 16 << 20;
// The reply's text: a token is a few bytes; this is generous and still bounded.
constexpr size_t kTextBytesPerToken = 1024;

// A server's JSON, parsed no deeper than kMaxJsonDepth (a copy or a dump of a deeper one
// recurses as deep; a server's few hundred thousand levels would overflow the stack):
// discarded when it is not JSON or nests deeper, and *too_deep says which.
constexpr int kMaxJsonDepth = 64;
struct TooDeep {};
json parse_server_json(const std::string& text, bool* too_deep = nullptr) {
  if (too_deep) *too_deep = false;
  try {
    return json::parse(text, [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxJsonDepth) throw TooDeep{};
      return true;
    }, false);
  } catch (const TooDeep&) {
    if (too_deep) *too_deep = true;
    return json(json::value_t::discarded);
  }
}

// A server's string for provenance, a result or a message: one short escaped line.
std::string server_text(const json& value, size_t max_bytes = 200) {
  return value.is_string() ? one_line(value.get_ref<const std::string&>(), max_bytes) : "";
}

// An integer a server reported, when it is one and fits [lo, hi].
std::optional<int64_t> server_int(const json& j, const char* key, int64_t lo, int64_t hi) {
  if (!j.is_object() || !j.contains(key)) return std::nullopt;
  const json& v = j[key];
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (!v.is_number_integer()) return std::nullopt;
  const auto i = v.get<int64_t>();
  return i >= lo && i <= hi ? std::optional<int64_t>(i) : std::nullopt;
}

// What the endpoint said about itself when we connected.
struct ServerInfo {
  std::string base;  // scheme://host:port[/prefix] without a trailing /v1
  EndpointOptions options;
  std::string api_key;
  bool llama_cpp = false;  // llama-server: its extra fields (cache_prompt, /props) apply
  json model_entry;        // its /v1/models entry for our model (null when not listed)
  json props;              // llama-server's /props (build_info, slots)
  std::map<std::string, std::string> headers;
  int32_t n_vocab = 0;
  engine::Token bos = -1;
  json server_side;  // the server's own settings, each with where it came from
};

std::string base_of(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  if (url.ends_with("/v1")) url.resize(url.size() - 3);
  return url;
}

ClientOptions client_options(const ServerInfo& s, double request_timeout_s) {
  ClientOptions o;
  o.request_timeout_s = request_timeout_s;
  o.stall_timeout_s = std::min(s.options.stall_timeout_s, request_timeout_s);
  o.bearer_token = s.api_key;
  return o;
}

// A short, printable excerpt of a body for an error message.
std::string excerpt(const std::string& body) {
  std::string out;
  for (char c : body.substr(0, 160)) out += (c >= 32 && c < 127) ? c : ' ';
  return out + (body.size() > 160 ? "..." : "");
}

// The message an error answer carries ({"error": {"message": ...}} or {"error": "..."}),
// else an excerpt of its body; one escaped line either way (it is the server's text).
std::string error_text(const std::string& body) {
  const json j = parse_server_json(body);
  if (j.is_object() && j.contains("error")) {
    const auto& e = j["error"];
    if (e.is_string()) return server_text(e, 300);
    if (e.is_object() && e.contains("message") && e["message"].is_string()) return server_text(e["message"], 300);
  }
  return excerpt(body);
}

// One streamed answer, event by event.
class StreamReader {
 public:
  StreamReader(const engine::CompletionRequest& request, const RunClock& clock,
               const engine::DeltaCallback& on_delta, engine::CompletionResult& result)
      : request_(request), clock_(clock), on_delta_(on_delta), r_(result), parser_([this](const SseEvent& e) {
          on_event(e);
        }, kMaxEvent) {}

  bool feed(std::string_view bytes) {
    bytes_ += static_cast<int64_t>(bytes.size());
    if (!parser_.feed(bytes) && error_.empty())
      error_ = "an event over 1 MiB without its end (a line without end, or data lines never dispatched)";
    const int64_t max_bytes = kStreamBaseBytes + kBytesPerToken * request_.max_tokens;
    if (error_.empty() && bytes_ > max_bytes)
      error_ = fmt::format("the server streamed over {} MiB for max_tokens {}; a stream that does not end",
                           max_bytes >> 20, request_.max_tokens);
    return error_.empty();
  }
  const std::string& error() const { return error_; }
  bool done() const { return done_; }

 private:
  void on_event(const SseEvent& e) {
    if (!error_.empty() || done_) return;
    const int64_t max_events = kEventsPerToken * (request_.max_tokens + kChunkSlack);
    if (++events_ > max_events) {
      error_ = fmt::format("the server streamed over {} events for max_tokens {}; a stream that does not end",
                           max_events, request_.max_tokens);
      return;
    }
    if (e.data == "[DONE]") {
      done_ = true;
      return;
    }
    bool too_deep = false;
    const json j = parse_server_json(e.data, &too_deep);
    if (j.is_discarded()) {
      error_ = too_deep ? fmt::format("malformed event (nested deeper than {} levels)", kMaxJsonDepth)
                        : "malformed event (not JSON): " + excerpt(e.data);
      return;
    }
    if (!j.is_object()) {
      error_ = "malformed event (not an object): " + excerpt(e.data);
      return;
    }
    if (j.contains("error")) {
      error_ = "the server reported an error mid-stream: " + error_text(e.data);
      return;
    }
    if (j.contains("model") && j["model"].is_string()) r_.server["model"] = server_text(j["model"]);
    if (j.contains("usage") && j["usage"].is_object()) {
      // Counts of the wrong type or out of range are not counts: left unset.
      const auto& u = j["usage"];
      if (auto v = server_int(u, "prompt_tokens", 0, INT32_MAX)) r_.prompt_tokens = static_cast<int>(*v);
      if (auto v = server_int(u, "completion_tokens", 0, INT32_MAX)) r_.completion_tokens = static_cast<int>(*v);
    }
    if (j.contains("timings") && j["timings"].is_object())
      r_.server["timings"] = j["timings"];  // llama-server
    for (const char* k : {"prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration",
                          "total_duration", "load_duration"})  // Ollama
      if (j.contains(k)) r_.server["ollama"][k] = j[k];
    if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) return;
    const auto& choice = j["choices"][0];
    if (!choice.is_object()) return;
    if (choice.contains("finish_reason") && choice["finish_reason"].is_string())
      r_.finish_reason = server_text(choice["finish_reason"], 40);
    const json* text = nullptr;
    if (choice.contains("delta") && choice["delta"].is_object() && choice["delta"].contains("content"))
      text = &choice["delta"]["content"];
    else if (choice.contains("text"))
      text = &choice["text"];
    // A role-only chunk (content null or "") is not a token: TTFT starts at content.
    if (!text || !text->is_string() || text->get_ref<const std::string&>().empty()) return;
    engine::ContentDelta d{clock_.now_ns(), text->get<std::string>(), 0};
    const size_t max_text = kTextBytesPerToken * static_cast<size_t>(std::max(1, request_.max_tokens) + kChunkSlack);
    if (r_.text.size() + d.text.size() > max_text) {
      error_ = fmt::format("the server streamed over {} bytes of text for max_tokens {}", max_text, request_.max_tokens);
      return;
    }
    r_.text += d.text;
    if (on_delta_) on_delta_(d);
    r_.deltas.push_back(std::move(d));
    if (static_cast<int>(r_.deltas.size()) > request_.max_tokens + kChunkSlack)
      error_ = fmt::format(
          "the server streamed over {} content chunks for max_tokens {}; a stream that does not end",
          request_.max_tokens + kChunkSlack, request_.max_tokens);
  }

  const engine::CompletionRequest& request_;
  const RunClock& clock_;
  const engine::DeltaCallback& on_delta_;
  engine::CompletionResult& r_;
  SseParser parser_;
  std::string error_;
  bool done_ = false;
  int64_t events_ = 0, bytes_ = 0;
};

class HttpCompleter : public engine::Completer {
 public:
  explicit HttpCompleter(std::shared_ptr<const ServerInfo> info)
      : info_(std::move(info)), client_(client_options(*info_, info_->options.request_timeout_s)) {}

  engine::CompletionResult complete(const engine::CompletionRequest& request, const RunClock& clock,
                                    const engine::DeltaCallback& on_delta) override {
    const auto& o = info_->options;
    const bool chat = request.api == "chat";
    const std::string url = info_->base + (chat ? "/v1/chat/completions" : "/v1/completions");
    const std::string body = request_body(request).dump();
    for (int attempt = 0;; ++attempt) {
      engine::CompletionResult r;
      r.server = json::object();
      StreamReader reader(request, clock, on_delta, r);
      r.start_ns = clock.now_ns();
      const Response resp = client_.post_stream(
          url, body, [&](std::string_view bytes) { return reader.feed(bytes); },
          [&] { return reader.error(); });
      r.end_ns = clock.now_ns();
      const std::string where = redact_url(url);
      if ((resp.status == 429 || resp.status == 503) && attempt < o.max_retries) {
        std::this_thread::sleep_for(std::chrono::duration<double>(retry_wait(resp)));
        continue;
      }
      if (resp.status / 100 != 2)
        throw_environment("{}: HTTP {}{}: {}", where, resp.status,
                          attempt > 0 ? fmt::format(" after {} tries", attempt + 1) : "",
                          error_text(resp.body));
      if (!resp.content_type.starts_with("text/event-stream"))
        throw_environment("{}: expected an event stream (the request asked to stream), got '{}': {}", where,
                          resp.content_type, excerpt(resp.body));
      if (!reader.error().empty()) throw_environment("{}: {}", where, reader.error());
      if (!reader.done() && r.finish_reason.empty())
        throw_environment(
            "{}: the stream ended without its end ([DONE] or a finish reason) after {} content chunks", where,
            r.deltas.size());
      finish(r, attempt);
      return r;
    }
  }

 private:
  json request_body(const engine::CompletionRequest& request) const {
    json b = {{"model", info_->options.model},
              {"max_tokens", request.max_tokens},
              {"temperature", 0},
              {"seed", request.seed},
              {"stream", true},
              {"stream_options", {{"include_usage", true}}}};
    if (request.api == "chat") {
      json messages = json::array();
      for (const auto& m : request.messages) messages.push_back({{"role", m.role}, {"content", m.content}});
      b["messages"] = messages;
    } else if (!request.prompt_tokens.empty()) {
      b["prompt"] = request.prompt_tokens;  // token ids: llama-server and vLLM take them as is
    } else {
      b["prompt"] = request.prompt;
    }
    if (request.ignore_eos) b["ignore_eos"] = true;
    if (info_->llama_cpp) b["cache_prompt"] = request.cache_prompt;
    return b;
  }

  double retry_wait(const Response& resp) const {
    double wait = 1;
    if (auto it = resp.headers.find("retry-after"); it != resp.headers.end()) {
      char* end = nullptr;
      const double v = std::strtod(it->second.c_str(), &end);
      if (end != it->second.c_str() && v >= 0) wait = v;  // an HTTP date is not honoured: 1 s
    }
    return std::min(wait, info_->options.max_retry_wait_s);
  }

  // How the chunks map to tokens: one token per chunk when the usage says as many tokens
  // as content chunks came; otherwise the chunk count stands and `itl_basis` says so.
  void finish(engine::CompletionResult& r, int retries) const {
    const bool per_token = r.completion_tokens == static_cast<int>(r.deltas.size());
    if (per_token)
      for (auto& d : r.deltas) d.tokens = 1;
    r.server["itl_basis"] = per_token ? "token" : "chunk";
    r.server["content_chunks"] = r.deltas.size();
    r.server["retries"] = retries;
  }

  std::shared_ptr<const ServerInfo> info_;
  Client client_;
};

class HttpModel : public engine::LoadedModel {
 public:
  HttpModel(std::shared_ptr<const ServerInfo> info, engine::ModelOptions options)
      : info_(std::move(info)), options_(std::move(options)) {}
  const engine::ModelOptions& options() const override { return options_; }
  std::vector<engine::Token> tokenize(const std::string&, bool) const override { no_token_level("tokenize"); }
  std::string token_to_piece(engine::Token) const override { return ""; }
  bool is_end_of_generation(engine::Token) const override { return false; }
  int32_t n_vocab() const override { return info_->n_vocab; }
  engine::Token bos_token() const override { return info_->bos; }
  bool adds_bos() const override { return info_->bos >= 0; }
  std::string description() const override { return info_->options.model + " at " + redact_url(info_->base); }
  uint64_t size_bytes() const override { return meta_u64("size"); }
  uint64_t n_params() const override { return meta_u64("n_params"); }
  std::string chat_template() const override { return ""; }
  std::string apply_chat_template(const std::vector<engine::ChatMessage>& messages, bool add_assistant,
                                  bool* used_fallback) const override {
    if (used_fallback) *used_fallback = true;
    return engine::plain_chat_text(messages, add_assistant);
  }
  std::unique_ptr<engine::Context> new_context(const engine::ContextOptions&) const override {
    no_token_level("decode token by token");
  }
  std::unique_ptr<engine::Completer> new_completer(const engine::ContextOptions&) const override {
    return std::make_unique<HttpCompleter>(info_);
  }

 private:
  [[noreturn]] static void no_token_level(const char* what) {
    throw_bad_input("the http engine cannot {}: a server takes whole requests", what);
  }
  uint64_t meta_u64(const char* key) const {
    const json& m = info_->model_entry;
    return m.is_object() && m.contains("meta") && m["meta"].contains(key) &&
                   m["meta"][key].is_number_unsigned()
               ? m["meta"][key].get<uint64_t>()
               : 0;
  }
  std::shared_ptr<const ServerInfo> info_;
  engine::ModelOptions options_;
};

class HttpEngine : public engine::Engine {
 public:
  explicit HttpEngine(std::shared_ptr<const ServerInfo> info) : info_(std::move(info)) {}
  std::string name() const override { return "http"; }
  engine::Capabilities capabilities() const override {
    engine::Capabilities c;
    c.token_level = false;
    c.requests = true;
    c.in_process = false;  // load, threads and memory are the server's, not this process's
    return c;
  }
  nlohmann::json provenance() const override {
    const auto& s = *info_;
    json details = {{"endpoint", redact_url(s.base)},
                    {"api", s.options.api},
                    {"api_model", s.options.model},
                    {"server_model", s.model_entry.is_object() && s.model_entry.contains("id")
                                         ? server_text(s.model_entry["id"])
                                         : ""},
                    {"server_headers", s.headers},
                    {"server", s.llama_cpp ? "llama.cpp" : ""},
                    {"api_key_env", s.options.key_env},
                    {"api_key_set", !s.api_key.empty()}};
    if (s.model_entry.is_object() && s.model_entry.contains("meta"))
      details["model_meta"] = s.model_entry["meta"];
    details["server_side"] = s.server_side;
    std::string version;
    if (s.props.is_object() && s.props.contains("build_info") && s.props["build_info"].is_string())
      version = server_text(s.props["build_info"]);
    else if (auto it = s.headers.find("server"); it != s.headers.end())
      version = it->second;
    return {{"name", name()}, {"kind", "endpoint"}, {"version", version},
            {"commit", ""},   {"details", details}, {"capabilities", capabilities().to_json()}};
  }
  std::unique_ptr<engine::LoadedModel> load(const engine::ModelOptions& options) override {
    return std::make_unique<HttpModel>(info_, options);
  }

 private:
  std::shared_ptr<const ServerInfo> info_;
};

json parse_or_null(const std::string& body) {
  json j = parse_server_json(body);
  return j.is_discarded() ? json(nullptr) : j;
}

// The /v1/models entry that serves `model` (by id or alias); null when the list does not
// name it; throws when the list names others only.
json find_model(const json& list, const EndpointOptions& o) {
  if (!list.is_object() || !list.contains("data") || !list["data"].is_array()) return nullptr;
  std::vector<std::string> ids;
  for (const auto& m : list["data"]) {
    if (!m.is_object() || !m.contains("id") || !m["id"].is_string()) continue;
    ids.push_back(server_text(m["id"], 100));
    if (m["id"] == o.model) return m;
    if (m.contains("aliases") && m["aliases"].is_array())
      for (const auto& a : m["aliases"])
        if (a == o.model) return m;
  }
  if (ids.empty()) return nullptr;
  std::string names;
  for (const auto& id : ids) names += (names.empty() ? "" : ", ") + id;
  throw_bad_input("the endpoint {} does not serve model '{}' (it lists: {}); set --api-model",
                  redact_url(o.url), one_line(o.model, 100), one_line(names, 400));
}

// The NUL-separated strings of /proc/PID/<what> (cmdline, environ); empty when unreadable.
std::vector<std::string> proc_strings(int pid, const char* what) {
  std::ifstream in(fmt::format("/proc/{}/{}", pid, what), std::ios::binary);
  std::vector<std::string> out;
  for (std::string s; std::getline(in, s, '\0');) out.push_back(s);
  return out;
}

std::optional<int> positive_int(const std::string& s) {
  char* end = nullptr;
  const long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < 1 || v > 4096) return std::nullopt;
  return static_cast<int>(v);
}

// What llama-server says of its own settings (/props) and, for a local server, what its
// command line says of its threads (llama-server reports them nowhere over HTTP). Every
// value is null where neither says: never this client's own.
json server_side(const ServerInfo& s, int pid) {
  json out = {{"threads", nullptr}, {"threads_source", nullptr}, {"model_path", nullptr},
              {"n_ctx", nullptr},   {"slots", nullptr},          {"load_ms", nullptr}};
  const json& p = s.props;
  if (p.is_object()) {
    if (p.contains("model_path") && p["model_path"].is_string()) out["model_path"] = server_text(p["model_path"], 400);
    if (p.contains("total_slots") && p["total_slots"].is_number_integer()) out["slots"] = p["total_slots"];
    const json* g = p.contains("default_generation_settings") ? &p["default_generation_settings"] : nullptr;
    if (g && g->is_object() && g->contains("n_ctx") && (*g)["n_ctx"].is_number_integer()) out["n_ctx"] = (*g)["n_ctx"];
  }
  if (pid <= 0) return out;
  const auto argv = proc_strings(pid, "cmdline");
  if (argv.empty() || std::filesystem::path(argv[0]).filename().string().find("llama-server") == std::string::npos)
    return out;  // another server's flags mean other things
  // llama.cpp's parser: a flag on the command line wins over its LLAMA_ARG_ variable.
  for (size_t i = 1; i + 1 < argv.size(); ++i)
    if (argv[i] == "-t" || argv[i] == "--threads")
      if (auto t = positive_int(argv[i + 1])) {
        out["threads"] = *t;
        out["threads_source"] = "server command line";
      }
  if (out["threads"].is_null())
    for (const auto& e : proc_strings(pid, "environ"))
      if (e.starts_with("LLAMA_ARG_THREADS="))
        if (auto t = positive_int(e.substr(18))) {
          out["threads"] = *t;
          out["threads_source"] = "server environment (LLAMA_ARG_THREADS)";
        }
  return out;
}

}  // namespace

void validate_endpoint(const EndpointOptions& o) {
  if (!o.url.starts_with("http://") && !o.url.starts_with("https://"))
    throw_bad_input("--endpoint '{}': use an http:// or https:// URL", redact_url(o.url));
  if (o.url.find_first_of(" \t\r\n") != std::string::npos) throw_bad_input("--endpoint: a URL has no spaces");
  // The URL is stored with the plan and shown in provenance: no secret may ride in it.
  const auto host = o.url.substr(o.url.find("://") + 3);
  if (host.substr(0, host.find('/')).find('@') != std::string::npos || o.url.find('?') != std::string::npos)
    throw_bad_input("--endpoint {}: no credentials or query in the URL (it is stored); put the key in ${}",
                    redact_url(o.url), o.key_env);
  if (o.model.empty()) throw_bad_input("--endpoint needs --api-model NAME: the model name requests carry");
  if (o.api != "completions" && o.api != "chat")
    throw_bad_input("--api '{}': use chat or completions", o.api);
  if (!(o.request_timeout_s > 0 && o.request_timeout_s <= 86400))
    throw_bad_input("--request-timeout {} out of range (0, 86400] seconds", o.request_timeout_s);
}

std::unique_ptr<engine::Engine> connect_endpoint(const EndpointOptions& options) {
  validate_endpoint(options);
  auto info = std::make_shared<ServerInfo>();
  info->options = options;
  info->base = base_of(options.url);
  if (const char* key = std::getenv(options.key_env.c_str())) info->api_key = key;
  Client client(client_options(*info, std::min(30.0, options.request_timeout_s)));
  Response models;
  try {
    models = client.get(info->base + "/v1/models");
  } catch (const Error& e) {
    throw_bad_input("cannot reach the endpoint: {}", e.what());
  }
  if (models.status == 401 || models.status == 403)
    throw_bad_input("the endpoint {} refused the request (HTTP {}): set the API key in ${}",
                    redact_url(info->base), models.status, options.key_env);
  info->headers = models.headers;
  if (models.status / 100 == 2) info->model_entry = find_model(parse_or_null(models.body), options);
  const json& entry = info->model_entry;
  // Every field is the server's word, of any type: read only when of the type it should be.
  info->llama_cpp = entry.is_object() && entry.contains("owned_by") && entry["owned_by"] == "llamacpp";
  if (entry.is_object() && entry.contains("meta"))
    if (auto v = server_int(entry["meta"], "n_vocab", 1, INT32_MAX)) info->n_vocab = static_cast<int32_t>(*v);
  if (info->llama_cpp) {
    // Its build and slots, and its BOS token: token prompts then start as in-process ones.
    try {
      if (auto props = client.get(info->base + "/props"); props.status == 200)
        info->props = parse_or_null(props.body);
      auto tok = client.post_json(info->base + "/tokenize", R"({"content": "", "add_special": true})");
      const json t = parse_or_null(tok.body);
      if (tok.status == 200 && t.is_object() && t.contains("tokens") && t["tokens"].is_array() &&
          t["tokens"].size() == 1)
        if (auto bos = server_int(json{{"bos", t["tokens"][0]}}, "bos", 0, INT32_MAX))
          info->bos = static_cast<engine::Token>(*bos);
    } catch (const Error&) {
      // Provenance only: an endpoint that answers /v1/models but not these still runs.
    }
  }
  info->server_side = server_side(*info, options.server_pid);
  return std::make_unique<HttpEngine>(std::move(info));
}

}  // namespace edgeprobe::http
