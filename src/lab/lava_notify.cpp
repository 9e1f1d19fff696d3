#include "lab/lava_notify.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>

#include "core/error.h"
#include "core/text.h"
#include "kv/net.h"
#include "core/stop_token.h"

namespace edgeprobe::lab::lava {
namespace {

constexpr size_t kMaxHead = 16 * 1024;         // a callback's request line and headers
constexpr size_t kMaxBody = 4u << 20;          // dataset "all" carries the log; read and dropped
constexpr int kIoTimeoutMs = 10000;            // a peer that stops sending mid-request

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Reads one HTTP request (bounded), answers it, and says what it was ("POST /path").
std::string serve_one(kv::Socket& s) {
  std::string head;
  while (head.size() < kMaxHead && head.find("\r\n\r\n") == std::string::npos) {
    char c = 0;
    s.read_exact(&c, 1, kIoTimeoutMs);
    head += c;
  }
  auto answer = [&](const char* status) {
    const std::string text = fmt::format("HTTP/1.1 {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", status);
    s.write_all(text.data(), text.size(), kIoTimeoutMs);
  };
  if (head.find("\r\n\r\n") == std::string::npos) {
    answer("431 Request Header Fields Too Large");
    return "";
  }
  const std::string request_line = head.substr(0, head.find("\r\n"));
  size_t length = 0;
  std::string lower = head;
  for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (const auto at = lower.find("\r\ncontent-length:"); at != std::string::npos)
    length = std::strtoull(lower.c_str() + at + 17, nullptr, 10);
  if (length > kMaxBody) {
    answer("413 Content Too Large");
    return "";
  }
  std::string body(length, '\0');
  if (length) s.read_exact(body.data(), length, kIoTimeoutMs);
  if (!request_line.starts_with("POST ")) {
    answer("405 Method Not Allowed");
    return "";
  }
  answer("204 No Content");
  return one_line(request_line.substr(0, request_line.rfind(' ')), 120);
}

bool all_ended(const LabJobs& jobs) {
  for (const auto& j : jobs.jobs)
    if (!finished(j.status) || j.status == "submitted" || j.status == "rendered") return false;
  return true;
}

}  // namespace

LabJobs receive(store::Store& store, store::RunId lab_run, const ReceiveOptions& o) {
  if (!is_lava_lab(store, lab_run)) throw_bad_input("run {} is not a LAVA lab run (lab submit --engine lava)", lab_run);
  if (!(o.timeout_s > 0) || !(o.poll_s > 0)) throw_bad_input("--timeout and --poll must be positive seconds");
  const ProcessStopWatch watching;  // the loop below sees a Ctrl-C within its 500 ms accept
  kv::Listener listener(kv::parse_endpoint(o.listen));
  if (o.listening) o.listening(listener.port());
  if (o.say) o.say(fmt::format("listening for LAVA's callbacks on port {}", listener.port()));
  ImportOptions import_options;
  import_options.say = o.say;
  // What happened before we listened: jobs may have ended already.
  LabJobs jobs = import(store, lab_run, import_options);
  const double start = now_s();
  double last_import = start;
  while (!all_ended(jobs)) {
    if (o.stop.stop_requested()) throw Error(ErrorKind::kEnvironment, "interrupted while waiting for LAVA's callbacks");
    if (now_s() - start > o.timeout_s) {
      if (o.say) o.say(fmt::format("jobs still not ended after {:.0f} s; giving up", o.timeout_s));
      jobs.exit_code = 3;
      return jobs;
    }
    kv::Socket peer = listener.accept(500);
    bool prompted = false;
    if (peer.valid()) {
      try {
        const std::string what = serve_one(peer);
        if (!what.empty()) {
          prompted = true;
          if (o.say) o.say(fmt::format("LAVA's callback ({}); importing", what));
        }
      } catch (const Error& e) {  // a peer that stalled or hung up: not ours to fail on
        if (o.say) o.say(fmt::format("a callback connection failed: {}", e.what()));
      }
    }
    if (prompted || now_s() - last_import >= o.poll_s) {
      jobs = import(store, lab_run, import_options);
      last_import = now_s();
    }
  }
  return jobs;
}

}  // namespace edgeprobe::lab::lava
