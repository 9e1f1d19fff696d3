#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

// A small libcurl client for one connection (kept alive across requests, as a real
// client's would be): JSON GETs and POSTs, and POSTs whose answer streams back.
namespace edgeprobe::http {

struct ClientOptions {
  double connect_timeout_s = 5;
  double request_timeout_s = 300;  // the whole request, stream included
  double stall_timeout_s = 60;     // no byte at all for this long (a server that hangs)
  std::string bearer_token;        // sent as "Authorization: SCHEME TOKEN"; never logged
  std::string auth_scheme = "Bearer";  // LAVA's REST API says "Token"
  size_t max_body_bytes = 64 * 1024;   // of an answer kept whole; the rest is dropped
};

struct Response {
  long status = 0;
  std::string content_type;
  std::string body;                            // up to a limit; a streamed answer's body is not kept
  std::map<std::string, std::string> headers;  // the provenance-safe ones, lower-case names
};

class Client {
 public:
  explicit Client(ClientOptions options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Throws Error(kEnvironment) when no answer came (refused, timed out), naming the URL.
  Response get(const std::string& url);
  Response post_json(const std::string& url, const std::string& body);
  // `on_bytes` gets the body of a 2xx event-stream answer as it arrives and returns false
  // to abort the transfer (then `abort_reason` is thrown). Other answers are kept whole
  // (bounded) in the Response, as for post_json.
  using ByteSink = std::function<bool(std::string_view)>;
  Response post_stream(const std::string& url, const std::string& body, const ByteSink& on_bytes,
                       const std::function<std::string()>& abort_reason);

 private:
  Response perform(const std::string& url, const std::string* body, const ByteSink* on_bytes,
                   const std::function<std::string()>* abort_reason);

  ClientOptions options_;
  void* curl_ = nullptr;  // CURL*
};

// The URL without user:password@, query or fragment: what provenance and messages show.
std::string redact_url(const std::string& url);

}  // namespace edgeprobe::http
