#include "http/client.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <mutex>

#include "core/error.h"
#include "core/text.h"

namespace edgeprobe::http {
namespace {


void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Headers worth keeping as provenance; nothing that could carry a credential or a cookie.
bool keep_header(const std::string& name) {
  return name == "server" || name == "retry-after" || name == "content-type" || name == "openai-version" ||
         name == "x-ollama-version" || name.starts_with("x-vllm");
}

struct Transfer {
  Response response;
  CURL* curl = nullptr;
  const Client::ByteSink* on_bytes = nullptr;
  size_t max_body = 0;
  bool started = false, streaming = false, aborted = false;
  std::string location;          // a redirect's target, for the message that refuses it
  std::string content_encoding;  // none was asked for: any but identity is refused
  std::string refused;           // why this client stopped reading the answer
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string line(data, size * n);
  const auto colon = line.find(':');
  if (line.starts_with("HTTP/")) {  // a new response (after a 100 Continue)
    t->response.headers.clear();
    t->location.clear();
    t->content_encoding.clear();
  }
  if (colon == std::string::npos) return size * n;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string value = line.substr(colon + 1);
  const auto b = value.find_first_not_of(" \t");
  const auto e = value.find_last_not_of(" \t\r\n");
  value = b == std::string::npos ? "" : value.substr(b, e - b + 1);
  // A server's words go to provenance, messages and the terminal: one short escaped line.
  if (name == "location") t->location = one_line(value, 200);
  if (name == "content-encoding") t->content_encoding = one_line(value, 40);
  if (keep_header(name)) t->response.headers[name] = one_line(value, 200);
  return size * n;
}

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * n;
  if (!t->started) {  // the first body bytes: the status line and headers are in
    t->started = true;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &t->response.status);
    auto it = t->response.headers.find("content-type");
    t->response.content_type = it == t->response.headers.end() ? "" : it->second;
    t->streaming = t->on_bytes && t->response.status / 100 == 2 &&
                   t->response.content_type.starts_with("text/event-stream");
    // No Accept-Encoding is sent and libcurl decodes nothing: a compressed answer is one
    // this client never asked for (and a decompression bomb is never decompressed).
    if (!t->content_encoding.empty() && t->content_encoding != "identity") {
      t->refused = fmt::format(
          "the server sent a '{}'-encoded answer though this client asks for none; edgeprobe reads "
          "uncompressed answers only (turn compression off on the server or its proxy)",
          t->content_encoding);
      return 0;  // libcurl aborts with CURLE_WRITE_ERROR
    }
  }
  if (t->streaming) {
    if (!(*t->on_bytes)(std::string_view(data, bytes))) {
      t->aborted = true;
      return 0;  // libcurl aborts with CURLE_WRITE_ERROR
    }
    return bytes;
  }
  if (t->response.body.size() < t->max_body)
    t->response.body.append(data, std::min(bytes, t->max_body - t->response.body.size()));
  return bytes;
}

}  // namespace

std::string redact_url(const std::string& url) {
  std::string out = url;
  const auto scheme_end = out.find("://");
  const size_t host_start = scheme_end == std::string::npos ? 0 : scheme_end + 3;
  const auto path_start = out.find_first_of("/?#", host_start);
  const auto at = out.rfind('@', path_start == std::string::npos ? out.size() : path_start);
  if (at != std::string::npos && at >= host_start) out.erase(host_start, at + 1 - host_start);
  if (const auto q = out.find_first_of("?#"); q != std::string::npos) out.erase(q);
  return out;
}

Client::Client(ClientOptions options) : options_(std::move(options)) {
  global_init();
  curl_ = curl_easy_init();
  if (!curl_) throw_environment("libcurl could not start a connection handle");
}

Client::~Client() { curl_easy_cleanup(static_cast<CURL*>(curl_)); }

Response Client::get(const std::string& url) { return perform(url, nullptr, nullptr, nullptr); }

Response Client::post_json(const std::string& url, const std::string& body) {
  return perform(url, &body, nullptr, nullptr);
}

Response Client::post_stream(const std::string& url, const std::string& body, const ByteSink& on_bytes,
                             const std::function<std::string()>& abort_reason) {
  return perform(url, &body, &on_bytes, &abort_reason);
}

Response Client::perform(const std::string& url, const std::string* body, const ByteSink* on_bytes,
                         const std::function<std::string()>* abort_reason) {
  auto* c = static_cast<CURL*>(curl_);
  curl_easy_reset(c);
  Transfer t;
  t.curl = c;
  t.on_bytes = on_bytes;
  t.max_body = options_.max_body_bytes;
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, "Accept: application/json, text/event-stream");
  headers = curl_slist_append(headers, "Accept-Encoding: identity");
  if (body) headers = curl_slist_append(headers, "Content-Type: application/json");
  if (!options_.bearer_token.empty())
    headers = curl_slist_append(headers, ("Authorization: " + options_.auth_scheme + " " + options_.bearer_token).c_str());
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);  // redirects are refused below, never followed
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_s * 1000));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.request_timeout_s * 1000));
  // A stall: under one byte per second for stall_timeout_s (a slow first byte included).
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, std::max(1L, static_cast<long>(options_.stall_timeout_s)));
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
  if (body) {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body->size()));
  }
  const CURLcode rc = curl_easy_perform(c);
  curl_slist_free_all(headers);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  t.response.status = status;
  if (t.response.content_type.empty()) {
    auto it = t.response.headers.find("content-type");
    if (it != t.response.headers.end()) t.response.content_type = it->second;
  }
  const std::string where = redact_url(url);
  if (!t.refused.empty()) throw_environment("{}: {}", where, t.refused);
  if (t.aborted) throw_environment("{}: {}", where, abort_reason ? (*abort_reason)() : "aborted");
  // Not followed: the endpoint is the URL the user gave, stored as such, and a redirect
  // could lead the API key or the measurement to another host (or around in a loop).
  if (rc == CURLE_OK && status / 100 == 3 && status != 304)
    throw_environment("{}: the server redirects (HTTP {}{}); edgeprobe follows no redirect: give the final URL",
                      where, status, t.location.empty() ? "" : " to " + redact_url(t.location));
  if (rc == CURLE_OPERATION_TIMEDOUT)
    throw_environment("{}: timed out ({})", where,
                      status == 0 ? "no answer" : "the answer stalled or ran too long");
  if (rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR || rc == CURLE_GOT_NOTHING)
    throw_environment("{}: the connection closed mid-answer ({})", where, curl_easy_strerror(rc));
  if (rc != CURLE_OK) throw_environment("{}: {}", where, curl_easy_strerror(rc));
  return t.response;
}

}  // namespace edgeprobe::http
