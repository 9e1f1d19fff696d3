#include "lab/lava_notify.h"

#include <fmt/format.h>

#include <algorithm>
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
constexpr double kFirstRecheckS = 0.25;        // after a callback whose job still reads as running,
constexpr double kMaxRecheckS = 30;            // doubling up to this

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

bool ended(const JobRow& j) { return finished(j.status) && j.status != "submitted" && j.status != "rendered"; }

size_t ended_count(const LabJobs& jobs) {
  size_t n = 0;
  for (const auto& j : jobs.jobs) n += ended(j);
  return n;
}

bool all_ended(const LabJobs& jobs) { return ended_count(jobs) == jobs.jobs.size(); }

}  // namespace

LabJobs receive(store::Store& store, store::RunId lab_run, const ReceiveOptions& o) {
  if (!is_lava_lab(store, lab_run)) throw_bad_input("run {} is not a LAVA lab run (lab submit --engine lava)", lab_run);
  if (!(o.timeout_s > 0) || !(o.poll_s > 0) || !(o.settle_s >= 0))
    throw_bad_input("--timeout and --poll must be positive seconds, --settle not negative");
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
  // LAVA sends a job's callback from the job's pre_save signal, inside the transaction that
  // saves it as finished (lava_scheduler_app/signals.py, tasks.py: Celery runs the task
  // eagerly), so its REST API says "Running" until our answer is back and LAVA commits.
  // Callbacks that ended no job yet are awaited: the lab run is read again with a backoff.
  size_t awaited = 0;
  double backoff_s = 0, recheck_at = 0, settle_until = 0, callback_at = 0;
  while (!all_ended(jobs)) {
    if (o.stop.stop_requested()) throw Error(ErrorKind::kEnvironment, "interrupted while waiting for LAVA's callbacks");
    if (now_s() - start > o.timeout_s) {
      if (o.say) o.say(fmt::format("jobs still not ended after {:.0f} s; giving up", o.timeout_s));
      jobs.exit_code = 3;
      return jobs;
    }
    const int wait_ms = awaited ? static_cast<int>(std::clamp((recheck_at - now_s()) * 1000, 0.0, 500.0)) : 500;
    kv::Socket peer = listener.accept(wait_ms);
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
    const bool recheck = awaited && now_s() >= recheck_at;
    if (!prompted && !recheck && now_s() - last_import < o.poll_s) continue;
    const size_t ended_before = ended_count(jobs);
    jobs = import(store, lab_run, import_options);
    last_import = now_s();
    const size_t newly_ended = ended_count(jobs) - std::min(ended_count(jobs), ended_before);
    if (awaited && newly_ended && o.say)
      o.say(fmt::format("a job LAVA called back about reads as ended {:.1f} s after its callback",
                        last_import - callback_at));
    awaited = awaited + prompted - std::min(awaited + prompted, newly_ended);
    if (!awaited || all_ended(jobs)) {
      awaited = 0;
      continue;
    }
    if (prompted) {  // each callback has its own window, from the shortest pause
      callback_at = last_import;
      settle_until = last_import + o.settle_s;
      backoff_s = kFirstRecheckS;
      if (o.say)
        o.say(fmt::format("{} callback(s) whose job does not read as ended yet (LAVA calls back before it saves "
                          "the job's end): reading the jobs again with a backoff for up to {:.0f} s",
                          awaited, o.settle_s));
    } else {
      backoff_s = std::min(backoff_s * 2, kMaxRecheckS);
    }
    if (last_import + backoff_s > settle_until) {
      if (o.say)
        o.say(fmt::format("{} callback(s) still without an ended job after {:.0f} s of reading again; waiting for "
                          "the next callback",
                          awaited, o.settle_s));
      awaited = 0;
      continue;
    }
    recheck_at = last_import + backoff_s;
  }
  return jobs;
}

}  // namespace edgeprobe::lab::lava
