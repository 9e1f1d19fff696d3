#include "hub/server.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "analysis/compare.h"
#include "analysis/explain.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/text.h"
#include "hub/hub_state.h"
#include "hub/pages.h"
#include "hub/submission.h"
#include "report/compare_reporters.h"
#include "report/explain_reporters.h"
#include "report/html_report.h"

namespace edgeprobe::hub {

using nlohmann::json;

namespace {

// httplib's own pool queues every accepted socket without a bound; this one makes the
// acceptor wait when `cap` are already waiting, so a flood costs the kernel's backlog,
// not the hub's memory.
class BoundedPool : public httplib::TaskQueue {
 public:
  BoundedPool(size_t threads, size_t cap) : cap_(cap), threads_n_(threads) {
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
  }
  void enqueue(std::function<void()> fn) override {
    std::unique_lock lock(mutex_);
    space_.wait(lock, [&] { return jobs_.size() < cap_ || shutdown_; });
    jobs_.push_back(std::move(fn));
    ready_.notify_one();
  }
  // Every worker busy: a new request waits for one.
  bool saturated() const { return busy_.load() >= threads_n_; }
  void shutdown() override {
    {
      std::lock_guard lock(mutex_);
      shutdown_ = true;
    }
    ready_.notify_all();
    space_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mutex_);
        ready_.wait(lock, [&] { return !jobs_.empty() || shutdown_; });
        if (jobs_.empty()) return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
        space_.notify_one();
      }
      ++busy_;
      fn();
      --busy_;
    }
  }
  size_t cap_, threads_n_;
  std::atomic<size_t> busy_{0};
  std::mutex mutex_;
  std::condition_variable ready_, space_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  bool shutdown_ = false;
};

// The hub's own pages run no script; a report page runs its own inline script and nothing
// else. Neither loads anything from anywhere.
constexpr const char* kPageCsp =
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'";
constexpr const char* kReportCsp =
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; base-uri "
    "'none'";

void send_html(httplib::Response& res, const std::string& html, const char* csp = kPageCsp) {
  res.set_header("Content-Security-Policy", csp);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content(html, "text/html; charset=utf-8");
}

void send_json(httplib::Response& res, const json& value, int status = 200) {
  res.status = status;
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content(value.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message, bool api) {
  res.status = status;
  if (api) return send_json(res, {{"error", message}}, status);
  send_html(res, message_page(fmt::format("{}", status), message));
}

bool is_api(const httplib::Request& req) { return req.path.rfind("/api/", 0) == 0; }

std::optional<size_t> small_number(const std::string& text, size_t max) {
  size_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 1 || v > max) return std::nullopt;
  return v;
}

// The query of a runs request; throws kBadInput for a sort, order or page out of range.
RunQuery parse_query(const httplib::Request& req) {
  RunQuery q;
  for (const std::string& key : kFilterKeys)
    if (req.has_param(key.c_str())) q.filters[key] = req.get_param_value(key.c_str()).substr(0, 200);
  if (req.has_param("sort")) {
    q.sort = req.get_param_value("sort");
    if (std::find(kSortKeys.begin(), kSortKeys.end(), q.sort) == kSortKeys.end())
      throw_bad_input("sort '{}' is not one of id, date, device, model, quant, prefill, decode",
                      one_line(q.sort, 40));
  }
  if (req.has_param("order")) {
    const std::string order = req.get_param_value("order");
    if (order != "asc" && order != "desc")
      throw_bad_input("order is asc or desc, not '{}'", one_line(order, 40));
    q.descending = order == "desc";
  }
  if (req.has_param("page")) {
    const auto page = small_number(req.get_param_value("page"), 1000000);
    if (!page) throw_bad_input("page is a number from 1");
    q.page = *page;
  }
  if (req.has_param("per_page")) {
    const auto per = small_number(req.get_param_value("per_page"), kMaxPerPage);
    if (!per) throw_bad_input("per_page is a number from 1 to {}", kMaxPerPage);
    q.per_page = *per;
  }
  return q;
}

int64_t run_param(const httplib::Request& req, const char* name) {
  if (!req.has_param(name)) throw_bad_input("give two runs: ?a=RUN&b=RUN");
  const auto id = small_number(req.get_param_value(name), static_cast<size_t>(INT64_MAX));
  if (!id) throw_bad_input("{} is a run id", name);
  return static_cast<int64_t>(*id);
}

int64_t path_run(const httplib::Request& req) {
  const auto id = small_number(req.matches[1].str(), static_cast<size_t>(INT64_MAX));
  if (!id) throw_bad_input("no such run");
  return static_cast<int64_t>(*id);
}

// Turns the errors a handler may throw into answers: bad input (an unknown run, a refused
// filter) is the client's; anything else is the hub's, said without its details.
template <typename F>
void answer(const httplib::Request& req, httplib::Response& res, F&& handle) {
  try {
    handle();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::kBadInput) return send_error(res, 400, e.what(), is_api(req));
    send_error(res, 500, "the hub could not answer this request", is_api(req));
  } catch (const json::exception& e) {
    send_error(res, 400,
               fmt::format("a run's document holds a field edgeprobe never writes there ({})", e.what()),
               is_api(req));
  }
}

// A submission the checks refused, with the reason the submitter reads.
struct Refused {
  std::string why;
};

class Hub {
 public:
  Hub(const HubOptions& o, std::function<void(const std::string&)> log)
      : o_(o),
        log_(std::move(log)),
        state_(store::open_store(o.db.empty() ? store::default_db_path() : o.db,
                                 o.token_file.empty() ? store::Mode::kMustExist : store::Mode::kCreate),
               o.token_file) {}

  HubState& state() { return state_; }

  void routes(httplib::Server& s) {
    s.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_redirect("/runs"); });
    s.Get("/healthz",
          [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
    // Each page and its JSON twin under /api: one handler, told which to answer.
    using Handler = void (Hub::*)(const httplib::Request&, httplib::Response&, bool);
    const auto page_and_api = [&](const std::string& path, Handler handler) {
      for (const bool api : {false, true})
        s.Get((api ? "/api" : "") + path,
              [this, handler, api](const httplib::Request& req, httplib::Response& res) {
                answer(req, res, [&] { (this->*handler)(req, res, api); });
              });
    };
    page_and_api("/runs", &Hub::runs);
    page_and_api(R"(/runs/(\d+))", &Hub::run);
    page_and_api("/leaderboards", &Hub::boards);
    page_and_api("/leaderboard", &Hub::board);
    page_and_api("/devices", &Hub::device_list);
    page_and_api("/device", &Hub::device);
    page_and_api("/compare", &Hub::compare);
    s.Post("/api/submit",
           [this](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& r) {
             answer(req, res, [&] { submit(req, res, r); });
           });
  }

 private:
  void runs(const httplib::Request& req, httplib::Response& res, bool api) {
    const RunQuery q = parse_query(req);
    const RunPage page = state_.with_rows([&](const auto& rows) { return query_runs(rows, q); });
    if (!api) return send_html(res, runs_page(page, q));
    json list = json::array();
    for (const RunRow& r : page.rows) list.push_back(to_json(r));
    send_json(res, {{"total", page.total}, {"page", q.page}, {"per_page", q.per_page}, {"runs", list}});
  }

  void run(const httplib::Request& req, httplib::Response& res, bool api) {
    const int64_t id = path_run(req);
    if (!state_.has(id)) return send_error(res, 404, fmt::format("no run {} in this hub", id), api);
    const json doc = state_.document(id);
    if (api) return send_json(res, doc);
    const std::string label = fmt::format("run {}", id);
    std::string page = with_hub_nav(report::render_html_report({{label, doc}}));
    if (const auto row = state_.row(id)) {  // the device, linked, and the run's flags, before the report
      const auto nav = page.find("</nav>");
      if (nav != std::string::npos) page.insert(nav + 6, run_header(*row));
    }
    send_html(res, page, kReportCsp);
  }

  void device_list(const httplib::Request&, httplib::Response& res, bool api) {
    const auto list = state_.with_rows([](const auto& rows) { return devices(rows); });
    if (!api) return send_html(res, devices_page(list));
    json out = json::array();
    for (const DeviceKey& d : list)
      out.push_back({{"id", d.id},
                     {"name", d.name},
                     {"chip", d.chip},
                     {"runs", d.runs},
                     {"last_run_at", d.last_run_at}});
    send_json(res, out);
  }

  void device(const httplib::Request& req, httplib::Response& res, bool api) {
    if (!req.has_param("id")) throw_bad_input("give ?id=DEVICE (the runs list names each run's device)");
    const std::string id = req.get_param_value("id").substr(0, 200);
    const DeviceView view = state_.with_rows([&](const auto& rows) { return device_view(rows, id); });
    if (view.runs.empty())
      return send_error(res, 404, fmt::format("no run of device '{}' in this hub", id), api);
    if (api) return send_json(res, to_json(view));
    send_html(res, device_page(view));
  }

  void boards(const httplib::Request&, httplib::Response& res, bool api) {
    const auto keys = state_.with_rows([](const auto& rows) { return leaderboards(rows); });
    if (!api) return send_html(res, leaderboards_page(keys));
    json list = json::array();
    for (const BoardKey& k : keys)
      list.push_back({{"model", k.model}, {"quant", k.quant}, {"devices", k.devices}, {"runs", k.runs}});
    send_json(res, list);
  }

  void board(const httplib::Request& req, httplib::Response& res, bool api) {
    if (!req.has_param("model") || !req.has_param("quant")) throw_bad_input("give ?model=NAME&quant=QUANT");
    const std::string model = req.get_param_value("model").substr(0, 200);
    const std::string quant = req.get_param_value("quant").substr(0, 40);
    const Leaderboard b = state_.with_rows([&](const auto& rows) { return leaderboard(rows, model, quant); });
    if (api) return send_json(res, to_json(b));
    send_html(res, leaderboard_page(b));
  }

  // Both runs side by side (the report's own comparison), then compare's table and
  // explain's account of the difference as text.
  void compare(const httplib::Request& req, httplib::Response& res, bool api) {
    const int64_t a = run_param(req, "a"), b = run_param(req, "b");
    for (const int64_t id : {a, b})
      if (!state_.has(id)) return send_error(res, 404, fmt::format("no run {} in this hub", id), api);
    const json da = state_.document(a), db = state_.document(b);
    const std::string la = fmt::format("run {}", a), lb = fmt::format("run {}", b);
    const analysis::CompareReport cmp = analysis::compare_documents(da, db);
    if (api) return send_json(res, json::parse(report::compare_report(cmp, "json", la, lb)));
    std::string text = report::compare_report(cmp, "md", la, lb);
    try {
      std::ostringstream explained;
      const auto e = analysis::explain(analysis::explain_side(da, la), analysis::explain_side(db, lb));
      report::write_explain_report(analysis::to_json(e), "md", explained);
      text += "\n" + explained.str();
    } catch (const Error& e) {
      text += fmt::format("\nexplain: {}\n", e.what());
    }
    std::string page = with_hub_nav(report::render_html_report({{la, da}, {lb, db}}));
    // The text goes in escaped, before the report's own sections.
    const auto main = page.find("</nav>");
    page.insert(main == std::string::npos ? 0 : main + 6,
                "<section id=\"hub-compare\"><h2>compare and explain</h2><pre>" + html_escape(text) +
                    "</pre></section>");
    send_html(res, page, kReportCsp);
  }

  void submit(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    if (!state_.tokens().writable())
      return send_error(res, 403, "this hub is read-only: it has no write tokens", true);
    const auto admission = state_.tokens().admit(req.get_header_value("Authorization"));
    using V = TokenBook::Verdict;
    if (admission.verdict == V::kMissing) {
      res.set_header("WWW-Authenticate", "Bearer");
      return send_error(res, 401, "a submission needs a write token: Authorization: Bearer TOKEN", true);
    }
    if (admission.verdict == V::kUnknown) return send_error(res, 403, "unknown or revoked write token", true);
    if (admission.verdict == V::kRateLimited) {
      res.set_header("Retry-After", "60");
      return send_error(res, 429,
                        fmt::format("token '{}': more than {} submissions a minute", admission.entry.name,
                                    admission.entry.per_minute),
                        true);
    }
    const size_t limit = std::min(admission.entry.max_bytes, o_.max_body_bytes);
    std::string body;
    if (!read_body(req, reader, limit, body, res)) return;
    try {
      accept(res, admission.entry.name, body);
    } catch (const Refused& r) {  // well-formed HTTP, a document the hub does not take: 422
      send_error(res, 422, r.why, true);
    }
  }

  void accept(httplib::Response& res, const std::string& submitter, const std::string& body) {
    Checked checked = [&] {
      try {
        return check_submission(body);
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kBadInput) throw;
        log_(fmt::format("refused a submission from '{}': {}", submitter, one_line(e.what(), 300)));
        throw Refused{e.what()};
      }
    }();
    const json facts = {{"key", checked.key},
                        {"submitter", submitter},
                        {"received_at", utc_now_rfc3339()},
                        {"ceilings", checked.ceilings}};
    const auto [id, duplicate] = state_.submit(checked, facts);
    json flags = json::array();
    std::string codes;
    for (const Flag& f : state_.flags(id)) {
      flags.push_back({{"code", f.code}, {"reason", f.reason}});
      codes += (codes.empty() ? ", flagged " : " ") + f.code;
    }
    log_(fmt::format("{} run {} from '{}' ({} bytes, ceilings {}{})", duplicate ? "already had" : "accepted",
                     id, submitter, body.size(), checked.ceilings, codes));
    send_json(res,
              {{"run", id},
               {"duplicate", duplicate},
               {"ceilings", checked.ceilings},
               {"flags", flags},
               {"url", fmt::format("/runs/{}", id)}},
              duplicate ? 200 : 201);
  }

  // The body within `limit` bytes and body_deadline_s; false (the answer set) when not.
  bool read_body(const httplib::Request& req, const httplib::ContentReader& reader, size_t limit,
                 std::string& body, httplib::Response& res) {
    auto too_big = [&] {
      res.set_header("Connection", "close");  // the rest of the body is not read
      send_error(res, 413, fmt::format("a submission is at most {} bytes for this token", limit), true);
      return false;
    };
    if (req.has_header("Content-Length")) {
      const auto declared = small_number(req.get_header_value("Content-Length"), SIZE_MAX);
      if (declared && *declared > limit) return too_big();
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o_.body_deadline_s);
    bool over = false, late = false;
    reader([&](const char* data, size_t n) {
      if (body.size() + n > limit) return !(over = true);
      if (std::chrono::steady_clock::now() > deadline) return !(late = true);
      body.append(data, n);
      return true;
    });
    if (over) return too_big();
    if (late) {
      res.set_header("Connection", "close");
      send_error(res, 408, fmt::format("the body took longer than {} s to arrive", o_.body_deadline_s), true);
      return false;
    }
    return true;
  }

  HubOptions o_;
  std::function<void(const std::string&)> log_;
  HubState state_;
};

// httplib bounds each read and write of a connection, not the connection: a client that
// sends its request a byte every few seconds keeps a worker forever. Every second this
// finds the process's accepted sockets (those whose local port is the hub's) and shuts
// down any that has lived longer than `limit`; the worker's read then ends and the
// connection closes. A socket is known by its descriptor and its peer, so a descriptor
// reused by a new connection starts a new clock.
class ConnectionReaper {
 public:
  explicit ConnectionReaper(int port) : port_(port) {}

  // Closes connections older than `limit`, the oldest first, at most `max_cut` of them
  // (while every worker is busy the limit is short, and the oldest are the ones that
  // trickle; a request queued behind them is younger).
  size_t sweep(std::chrono::seconds limit, size_t max_cut) {
    const auto now = std::chrono::steady_clock::now();
    std::map<std::pair<int, std::string>, std::chrono::steady_clock::time_point> alive;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
      int fd = -1;
      try {
        fd = std::stoi(entry.path().filename().string());
      } catch (const std::exception&) {
        continue;
      }
      const std::string peer = client_peer(fd);
      if (peer.empty()) continue;
      const auto key = std::make_pair(fd, peer);
      const auto it = seen_.find(key);
      alive[key] = it == seen_.end() ? now : it->second;
    }
    std::vector<std::pair<std::chrono::steady_clock::time_point, int>> old;
    for (const auto& [key, since] : alive)
      if (now - since > limit) old.emplace_back(since, key.first);
    std::sort(old.begin(), old.end());
    for (size_t i = 0; i < old.size() && i < max_cut; ++i) ::shutdown(old[i].second, SHUT_RDWR);
    seen_ = std::move(alive);
    return std::min(old.size(), max_cut);
  }

 private:
  // "ADDR:PORT" of a connection accepted on the hub's port; "" for any other descriptor.
  std::string client_peer(int fd) const {
    sockaddr_storage local{}, peer{};
    socklen_t ll = sizeof local, pl = sizeof peer;
    int listening = 0;
    socklen_t il = sizeof listening;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &ll) != 0) return "";
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &il) != 0 || listening) return "";
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0) return "";
    char host[INET6_ADDRSTRLEN] = {};
    int local_port = -1, peer_port = -1;
    if (local.ss_family == AF_INET) {
      local_port = ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port);
      const auto* p = reinterpret_cast<sockaddr_in*>(&peer);
      peer_port = ntohs(p->sin_port);
      ::inet_ntop(AF_INET, &p->sin_addr, host, sizeof host);
    } else if (local.ss_family == AF_INET6) {
      local_port = ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port);
      const auto* p = reinterpret_cast<sockaddr_in6*>(&peer);
      peer_port = ntohs(p->sin6_port);
      ::inet_ntop(AF_INET6, &p->sin6_addr, host, sizeof host);
    }
    if (local_port != port_) return "";
    return fmt::format("{}:{}", host, peer_port);
  }

  int port_;
  std::map<std::pair<int, std::string>, std::chrono::steady_clock::time_point> seen_;
};

void write_port_file(const std::string& path, int port) {
  if (path.empty()) return;
  { std::ofstream(path + ".tmp") << port << "\n"; }
  std::rename((path + ".tmp").c_str(), path.c_str());
}

void configure(httplib::Server& s, const HubOptions& o, const std::function<void(const std::string&)>& log,
               std::atomic<BoundedPool*>& pool) {
  const auto threads = static_cast<size_t>(std::max(1, o.threads));
  const size_t queue = std::max<size_t>(1, o.queue);
  s.new_task_queue = [threads, queue, &pool] {
    auto* p = new BoundedPool(threads, queue);  // httplib owns it, until listen returns
    pool = p;
    return p;
  };
  // A response's head and body go out in two writes: with Nagle's algorithm the second
  // waits for the client's delayed ACK (40 ms a request on Linux loopback, measured).
  s.set_tcp_nodelay(true);
  // httplib's default also sets SO_REUSEPORT, with which a second hub on a port in use
  // starts and shares its connections instead of failing: only SO_REUSEADDR here.
  s.set_socket_options([](int fd) {
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  s.set_read_timeout(o.io_timeout_s, 0);
  s.set_write_timeout(o.io_timeout_s, 0);
  s.set_keep_alive_timeout(o.io_timeout_s);
  s.set_keep_alive_max_count(100);
  s.set_payload_max_length(o.max_body_bytes);
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string why = res.status == 404   ? "no such page"
                            : res.status == 413 ? "the body is too large"
                                                : "refused";
    send_error(res, res.status, why, is_api(req));
  });
  s.set_exception_handler([log](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      log(fmt::format("{} {}: {}", req.method, one_line(req.path, 120), one_line(e.what(), 300)));
    } catch (...) {
    }
    send_error(res, 500, "the hub could not answer this request", is_api(req));
  });
}

}  // namespace

void serve(const HubOptions& o, const std::function<bool()>& stop,
           const std::function<void(const std::string&)>& log) {
  Hub hub(o, log);
  hub.state().refresh(log);
  httplib::Server server;
  std::atomic<BoundedPool*> pool_ptr{nullptr};
  configure(server, o, log, pool_ptr);
  hub.routes(server);
  const int port =
      o.port == 0 ? server.bind_to_any_port(o.host) : (server.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port <= 0)
    throw_environment("cannot listen on {}:{} (in use, or not an address of this machine)", o.host, o.port);
  std::atomic<bool> listener_ended{false};
  std::thread listener([&] {
    server.listen_after_bind();
    pool_ptr = nullptr;  // httplib has deleted it
    listener_ended = true;
  });
  log(fmt::format("listening on http://{}:{} ({}, {})", o.host, port, hub.state().location(),
                  o.token_file.empty() ? "read-only" : "accepting submissions"));
  write_port_file(o.port_file, port);
  auto last_refresh = std::chrono::steady_clock::now(), last_sweep = last_refresh;
  ConnectionReaper reaper(port);
  while (!stop() && !listener_ended) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (std::chrono::steady_clock::now() - last_sweep > std::chrono::seconds(1)) {
      BoundedPool* pool = pool_ptr.load();
      // While every worker is busy, a connection older than two reads' timeouts is likely one
      // that trickles (a page takes milliseconds): the oldest go first, half the workers'
      // worth a second. Under a legitimate overload this cuts requests that waited that
      // long too (bench/hub-load.sh counts them as errors).
      const bool saturated = pool && pool->saturated();
      const int limit = saturated ? 2 * o.io_timeout_s : o.connection_limit_s;
      const size_t max_cut = saturated ? static_cast<size_t>(std::max(1, o.threads / 2)) : SIZE_MAX;
      if (const size_t cut = reaper.sweep(std::chrono::seconds(limit), max_cut); cut > 0)
        log(fmt::format("closed {} connection(s) open longer than {} s{}", cut, limit,
                        saturated ? " (every worker was busy)" : ""));
      last_sweep = std::chrono::steady_clock::now();
    }
    if (std::chrono::steady_clock::now() - last_refresh > std::chrono::duration<double>(o.refresh_s)) {
      try {
        hub.state().refresh(log);
      } catch (const std::exception& e) {  // a store gone away for a while: the pages still serve the index
        log(fmt::format("refreshing the runs failed: {}", one_line(e.what(), 300)));
      }
      last_refresh = std::chrono::steady_clock::now();
    }
  }
  server.stop();
  listener.join();
}

}  // namespace edgeprobe::hub
