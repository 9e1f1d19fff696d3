// A real `edgeprobe serve` on loopback, real submissions with `edgeprobe submit` of a real
// bench run, and raw HTTP for what no well-behaved client sends: the hub takes what it
// should, once, refuses the rest with its reason, and stays up and bounded.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "support/pg_server.h"
#include "support/run_process.h"

using namespace edgeprobe;
using nlohmann::json;
using test_support::run_edgeprobe;

namespace {

// One `edgeprobe serve` on 127.0.0.1, any free port, for one test.
class Hub {
 public:
  Hub(const std::string& db, const std::string& tokens, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {EDGEPROBE_BINARY, "serve",       "--db",        db,
                                     "--listen",       "127.0.0.1:0", "--port-file", dir_.file("port")};
    if (!tokens.empty()) argv.insert(argv.end(), {"--tokens", tokens});
    argv.insert(argv.end(), extra.begin(), extra.end());
    process_ = std::make_unique<test_support::BackgroundProcess>(argv, dir_.file("stderr"));
    for (int i = 0; i < 300 && !std::filesystem::exists(dir_.file("port")); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (std::filesystem::exists(dir_.file("port")))
      port_ = std::stoi(test_support::read_file(dir_.file("port")));
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log() const { return test_support::read_file(dir_.file("stderr")); }
  bool running() { return process_->running(); }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(30, 0);
    return c;
  }
  json get_json(const std::string& path) const {
    auto r = client().Get(path.c_str());
    if (!r || r->status != 200) return nullptr;
    return json::parse(r->body);
  }
  std::string get(const std::string& path) const {
    auto r = client().Get(path.c_str());
    return r ? r->body : "";
  }

 private:
  test_support::TempDir dir_;
  std::unique_ptr<test_support::BackgroundProcess> process_;
  int port_ = 0;
};

json read_json(const std::string& path) { return json::parse(test_support::read_file(path)); }

// The run's median rate of a phase, from its summary.
double median_rate(const json& test, const char* phase) {
  return test[phase].is_object() ? test[phase]["tokens_per_s"]["median"].get<double>() : 0;
}

// Made once for the binary: a real bench run of the tiny model, stored and as a file. On
// a machine busy with other work the probe keeps its contended ceilings out (the run then
// carries none, and the hub says "unchecked"), so the file the efficiency tests submit
// carries ceilings of its own: 1.5 x each measured rate, a device the run used 67 % of.
struct Fixture {
  test_support::TempDir dir;
  std::string local_db = dir.file("local.db"), bench = dir.file("bench.json");
  Fixture() {
    const auto r = run_edgeprobe({"bench", "-m", test_support::tiny_model(), "-p", "16", "-n", "8", "-r", "2",
                                  "--db", local_db, "-o", "json", "--output", bench, "-q"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    json doc = read_json(bench);
    for (auto& t : doc["results"]) {
      if (!t["roofline"].is_object()) t["roofline"] = json::object();
      if (const double p = median_rate(t, "prefill"); p > 0)
        t["roofline"]["prefill_ceiling_tokens_per_s"] = 1.5 * p;
      if (const double d = median_rate(t, "decode"); d > 0)
        t["roofline"]["decode_ceiling_tokens_per_s"] = 1.5 * d;
    }
    test_support::write_file(bench, doc.dump());
  }
};
Fixture& fixture() {
  static Fixture f;
  return f;
}

std::string add_token(const std::string& tokens, const std::string& name, const std::string& dir,
                      std::vector<std::string> limits = {}) {
  std::vector<std::string> args = {"serve", "--tokens", tokens, "--add-token", name};
  args.insert(args.end(), limits.begin(), limits.end());
  const auto r = run_edgeprobe(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string file = dir + "/" + name + ".token";
  test_support::write_file(file, r.out);
  return file;
}

// Every string in a document with markup and script appended.
json poisoned(const json& j) {
  if (j.is_object()) {
    json out = json::object();
    for (const auto& [k, v] : j.items()) out[k] = poisoned(v);
    return out;
  }
  if (j.is_array()) {
    json out = json::array();
    for (const auto& v : j) out.push_back(poisoned(v));
    return out;
  }
  if (j.is_string())
    return j.get<std::string>() + "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>";
  return j;
}

std::string url_encode(const std::string& text) {
  std::string out;
  for (unsigned char c : text)
    out += std::isalnum(c) ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
  return out;
}

int connect_to(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

// Sends `head`, then `chunks` chunks of 1 MiB (chunked encoding) while the hub reads
// them, and returns what it answered.
std::string raw_request(int port, const std::string& head, int chunks) {
  const int fd = connect_to(port);
  (void)!::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
  const std::string chunk = "100000\r\n" + std::string(1u << 20, ' ') + "\r\n";
  for (int i = 0; i < chunks; ++i)
    if (::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL) < 0) break;
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string answer(4096, '\0');
  const ssize_t n = ::recv(fd, answer.data(), answer.size(), 0);
  ::close(fd);
  return answer.substr(0, n > 0 ? static_cast<size_t>(n) : 0);
}

std::string first_line(const std::string& text) { return text.substr(0, text.find("\r\n")); }

size_t total_runs(const Hub& hub) {
  const json j = hub.get_json("/api/runs");
  return j.is_object() ? j["total"].get<size_t>() : 9999;
}

}  // namespace

// Issue 48: a run submitted appears on the list and its leaderboard; the same run twice,
// from its file or from its id in the store it came from, is one run.
void submissions_end_to_end(const std::string& db) {
  test_support::TempDir dir;
  const std::string tokens = dir.file("tokens");
  const std::string token = add_token(tokens, "phone-1", dir.path());
  Hub hub(db, tokens);
  ASSERT_GT(hub.port(), 0) << hub.log();
  EXPECT_EQ(total_runs(hub), 0u);

  auto r = run_edgeprobe({"submit", hub.url(), fixture().bench, "--token-file", token});
  ASSERT_EQ(r.exit_code, 0) << r.err << hub.log();
  EXPECT_NE(r.out.find("submitted: run 1"), std::string::npos) << r.out;
  r = run_edgeprobe({"submit", hub.url(), fixture().bench, "--token-file", token});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("already there: run 1"), std::string::npos) << r.out;
  r = run_edgeprobe({"submit", hub.url(), "1", "--db", fixture().local_db, "--token-file", token});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("already there: run 1"), std::string::npos) << r.out;
  EXPECT_EQ(total_runs(hub), 1u);

  const json runs = hub.get_json("/api/runs?model=synth&kind=bench");
  ASSERT_TRUE(runs.is_object());
  ASSERT_EQ(runs["runs"].size(), 1u);
  const json& row = runs["runs"][0];
  EXPECT_EQ(row["submitter"], "phone-1");
  EXPECT_EQ(row["ceilings_check"], "checked");
  EXPECT_GT(row["decode"]["tokens_per_s"].get<double>(), 0);
  const json board = hub.get_json("/api/leaderboard?model=" + row["model"]["name"].get<std::string>() +
                                  "&quant=" + row["model"]["quant"].get<std::string>());
  ASSERT_TRUE(board.is_object());
  ASSERT_EQ(board["decode"].size(), 1u);
  EXPECT_EQ(board["decode"][0]["run"]["id"], 1);
  // The run page is report's page of the same document.
  const std::string page = hub.get("/runs/1");
  EXPECT_NE(page.find("<script type=\"application/json\""), std::string::npos);
  EXPECT_EQ(hub.get_json("/api/runs/1")["kind"], "bench");
  for (const char* missing : {"/runs/99", "/api/runs/99", "/compare?a=1&b=99", "/no-such-page"}) {
    auto res = hub.client().Get(missing);
    ASSERT_TRUE(res) << missing;
    EXPECT_EQ(res->status, 404) << missing;
  }
  auto bad = hub.client().Get("/api/runs?sort=evil");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("sort 'evil' is not one of"), std::string::npos) << bad->body;
}

TEST(HubServer, SubmissionsEndToEndOnSqlite) {
  test_support::TempDir dir;
  submissions_end_to_end(dir.file("hub.db"));
}

TEST(HubServer, SubmissionsEndToEndOnPostgresql) {
  test_support::PgServer pg;
  if (!pg.skip_reason().empty()) GTEST_SKIP() << pg.skip_reason();
  ASSERT_EQ(pg.error(), "");
  submissions_end_to_end(pg.create_database("hub"));
}

// Issue 48: bench --submit sends the run it just stored through the same path as submit;
// the same run sent again (by id from the local store) is one run; a submission that
// fails keeps the measured run and says, in one line, how to send it again.
TEST(HubServer, BenchSubmitIntoAHub) {
  test_support::TempDir dir;
  const std::string tokens = dir.file("tokens");
  const std::string token = add_token(tokens, "board-1", dir.path());
  Hub hub(dir.file("hub.db"), tokens);
  ASSERT_GT(hub.port(), 0) << hub.log();
  const std::vector<std::string> bench = {
      "bench", "-m", test_support::tiny_model(), "-p", "16", "-n", "8", "-r", "2", "-q"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = bench;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_edgeprobe(args);
  };

  auto r = with({"--db", dir.file("local.db"), "-o", "json", "--submit", hub.url(), "--token-file", token});
  ASSERT_EQ(r.exit_code, 0) << r.err << hub.log();
  EXPECT_NE(r.err.find("submitted: run 1 at " + hub.url() + "/runs/1"), std::string::npos) << r.err;
  EXPECT_EQ(json::parse(r.out)["kind"], "bench");  // stdout is still the result alone
  r = run_edgeprobe({"submit", hub.url(), "1", "--db", dir.file("local.db"), "--token-file", token});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("already there: run 1"), std::string::npos) << r.out;
  EXPECT_EQ(total_runs(hub), 1u);
  const json row = hub.get_json("/api/runs")["runs"][0];
  EXPECT_EQ(row["submitter"], "board-1");
  EXPECT_EQ(row["kind"], "bench");

  // session and doctor take it too; a doctor run is on its device's page, findings and all.
  r = run_edgeprobe({"session", "-m", test_support::tiny_model(), "--rounds", "1", "--conversations", "1",
                     "--max-tokens", "8", "--db", dir.file("local.db"), "-q", "--submit", hub.url(),
                     "--token-file", token});
  ASSERT_EQ(r.exit_code, 0) << r.err << hub.log();
  EXPECT_NE(r.err.find("submitted: run 2 at "), std::string::npos) << r.err;
  r = run_edgeprobe({"doctor", "-m", test_support::tiny_model(), "--no-experiments", "-p", "16", "-n", "8",
                     "-r", "2", "--db", dir.file("local.db"), "-q", "--submit", hub.url(), "--token-file",
                     token});
  ASSERT_EQ(r.exit_code, 0) << r.err << hub.log();
  EXPECT_NE(r.err.find("submitted: run 3 at "), std::string::npos) << r.err;
  r = run_edgeprobe({"submit", hub.url(), "3", "--db", dir.file("local.db"), "--token-file", token});
  EXPECT_NE(r.out.find("already there: run 3"), std::string::npos) << r.out << r.err;
  const json device = hub.get_json("/api/device?id=" + url_encode(row["device"]["id"].get<std::string>()));
  ASSERT_TRUE(device.is_object());
  EXPECT_EQ(device["runs"].size(), 3u);  // bench, session and doctor, on the device that ran them

  // Refused by the hub (a token it does not know): the run is stored locally all the same,
  // exit 2, one line naming the problem and the command that sends it again.
  test_support::write_file(dir.file("wrong.token"), "ept_0000\n");
  r = with({"--db", dir.file("second.db"), "--submit", hub.url(), "--token-file", dir.file("wrong.token")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(
      r.err.find("edgeprobe: error: --submit: the hub refused the run (403): unknown or revoked write token; "
                 "the result is kept (run 1 in "),
      std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("send it again with: edgeprobe submit " + hub.url() + " 1 --db "), std::string::npos)
      << r.err;
  r = run_edgeprobe({"submit", hub.url(), "1", "--db", dir.file("second.db"), "--token-file", token});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("submitted: run 4"), std::string::npos) << r.out;

  // No hub there: exit 3, the run kept.
  r = with({"--db", dir.file("third.db"), "--submit", "http://127.0.0.1:9", "--token-file", token});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("--submit: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the result is kept (run 1 in "), std::string::npos) << r.err;

  // What can be known before measuring is refused before measuring: no run is made.
  r = with({"--db", dir.file("fourth.db"), "--submit", hub.url()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("needs a write token"), std::string::npos) << r.err;
  r = with({"--db", dir.file("fourth.db"), "--submit", "hub:8080", "--token-file", token});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is not a hub URL"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("fourth.db")));
  EXPECT_EQ(total_runs(hub), 4u);
}

// Issue 48: a model whose SHA another file of the same name already holds, a malformed SHA,
// and a rate far outside its device class are kept and shown with their flags and reasons.
TEST(HubServer, FlagsAreShownNotHidden) {
  test_support::TempDir dir;
  const std::string tokens = dir.file("tokens");
  const std::string token = add_token(tokens, "lab", dir.path());
  Hub hub(dir.file("hub.db"), tokens);
  ASSERT_GT(hub.port(), 0) << hub.log();
  const json base = read_json(fixture().bench);
  int n = 0;
  // Another run of the same document: a new start time, rates scaled, the SHA as given.
  auto submit = [&](double scale, const std::string& sha, bool ceilings) {
    json doc = base;
    doc["provenance"]["started_at_utc"] = fmt::format("2026-01-01T00:00:{:02}Z", ++n);
    for (auto& m : doc["provenance"]["models"]) m["sha256"] = sha;
    for (auto& t : doc["results"]) {
      if (!ceilings)
        t["roofline"] = nullptr;
      else
        t["roofline"]["bandwidth_gb_per_s"] = 12.5;  // the device's read bandwidth, for its page
      for (auto& rep : t["repetitions"])
        for (const char* k : {"prefill_tokens_per_s", "decode_tokens_per_s"})
          if (rep[k].is_number()) rep[k] = rep[k].get<double>() * scale;
    }
    const std::string file = dir.file(fmt::format("run{}.json", n));
    test_support::write_file(file, doc.dump());
    return run_edgeprobe({"submit", hub.url(), file, "--token-file", token});
  };
  const std::string sha = base["provenance"]["models"][0]["sha256"];
  ASSERT_EQ(sha.size(), 64u);
  for (double scale : {1.0, 1.05, 0.95}) ASSERT_EQ(submit(scale, sha, true).exit_code, 0);
  auto r = submit(5, sha, false);  // 5x its class: past its own ceilings, so sent without them
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("submitted: run 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(flagged: outlier: prefill"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("; outlier: decode tg8 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("5.0x above the median"), std::string::npos) << r.out;
  r = submit(1, std::string(64, 'f'), true);
  EXPECT_NE(r.out.find("is also in this hub as another file"), std::string::npos) << r.out;
  r = submit(1, "<script>alert(1)</script>", true);
  EXPECT_NE(r.out.find("is not 64 hex digits"), std::string::npos) << r.out;
  EXPECT_EQ(total_runs(hub), 6u);

  auto flag_codes = [&](int run) {
    std::set<std::string> out;
    const json runs = hub.get_json("/api/runs?per_page=200")["runs"];
    for (const auto& row : runs)
      if (row["id"] == run)
        for (const auto& f : row["flags"]) out.insert(f["code"].get<std::string>());
    return out;
  };
  EXPECT_EQ(flag_codes(4), (std::set<std::string>{"outlier-decode", "outlier-prefill", "sha-conflict"}));
  EXPECT_EQ(flag_codes(1), std::set<std::string>{"sha-conflict"});
  EXPECT_EQ(flag_codes(5), std::set<std::string>{"sha-conflict"});
  EXPECT_EQ(flag_codes(6), std::set<std::string>{"sha-malformed"});
  EXPECT_EQ(hub.get_json("/api/runs?flag=outlier")["total"], 1);
  // On the run's page and in the list, as text.
  const std::string page = hub.get("/runs/4");
  EXPECT_NE(page.find("id=\"hub-run\""), std::string::npos);
  EXPECT_NE(page.find("⚑ outlier-decode: outlier: decode"), std::string::npos);
  EXPECT_NE(hub.get("/runs").find("⚑ "), std::string::npos);
  EXPECT_EQ(hub.get("/runs/6").find("<script>alert"), std::string::npos);
  EXPECT_EQ(hub.get("/runs?flag=sha").find("<script>alert"), std::string::npos);
  // The device page: its runs over time, its ceilings, linked from the run.
  const json row = hub.get_json("/api/runs")["runs"][0];
  const std::string device = row["device"]["id"];
  const json view = hub.get_json("/api/device?id=" + url_encode(device));
  ASSERT_TRUE(view.is_object());
  EXPECT_EQ(view["runs"].size(), 6u);
  EXPECT_EQ(view["ceilings"].size(), 5u);  // every run but the one sent without ceilings
  EXPECT_NE(page.find("href=\"/device?id=" + device + "\""), std::string::npos);  // dev- and hex: as they are
  EXPECT_NE(hub.get("/device?id=" + url_encode(device)).find("<table id=\"ceilings\">"), std::string::npos);
  auto missing = hub.client().Get("/device?id=nobody");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
}

TEST(HubServer, RefusalsSayWhy) {
  test_support::TempDir dir;
  const std::string tokens = dir.file("tokens");
  const std::string token = add_token(tokens, "lab", dir.path(), {"--token-max-bytes", "2000000"});
  Hub hub(dir.file("hub.db"), tokens);
  ASSERT_GT(hub.port(), 0) << hub.log();

  // A forged run: every rate x5, past the ceilings its own document carries.
  json forged = read_json(fixture().bench);
  for (auto& t : forged["results"])
    for (auto& rep : t["repetitions"])
      for (const char* k : {"prefill_tokens_per_s", "decode_tokens_per_s"})
        if (rep[k].is_number()) rep[k] = rep[k].get<double>() * 5;
  test_support::write_file(dir.file("forged.json"), forged.dump());
  auto r = run_edgeprobe({"submit", hub.url(), dir.file("forged.json"), "--token-file", token});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("(422)"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("of the device's own ceiling"), std::string::npos) << r.err;

  test_support::write_file(dir.file("wrong.token"), "ept_0000\n");
  r = run_edgeprobe({"submit", hub.url(), fixture().bench, "--token-file", dir.file("wrong.token")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown or revoked write token"), std::string::npos) << r.err;
  r = run_edgeprobe({"submit", hub.url(), fixture().bench});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("needs a write token"), std::string::npos) << r.err;
  auto raw = hub.client().Post("/api/submit", test_support::read_file(fixture().bench), "application/json");
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->status, 401);

  // Revoked while the hub runs: refused from the next request on.
  ASSERT_EQ(run_edgeprobe({"serve", "--tokens", tokens, "--revoke-token", "lab"}).exit_code, 0);
  r = run_edgeprobe({"submit", hub.url(), fixture().bench, "--token-file", token});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown or revoked"), std::string::npos) << r.err;
  EXPECT_EQ(total_runs(hub), 0u);

  // A second hub on a port in use says so instead of sharing it.
  const auto second = run_edgeprobe(
      {"serve", "--db", dir.file("hub.db"), "--listen", "127.0.0.1:" + std::to_string(hub.port())}, 30);
  EXPECT_EQ(second.exit_code, 3);
  EXPECT_NE(second.err.find("cannot listen on 127.0.0.1:"), std::string::npos) << second.err;

  // A read-only hub takes nothing.
  Hub read_only(dir.file("hub.db"), "");
  const std::string other = add_token(dir.file("other-tokens"), "x", dir.path());
  r = run_edgeprobe({"submit", read_only.url(), fixture().bench, "--token-file", other});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("read-only"), std::string::npos) << r.err;
}

TEST(HubServer, HostileInputIsBoundedRefusedAndInert) {
  std::signal(SIGPIPE, SIG_IGN);  // the hub closes on a client still sending its 100 MB
  test_support::TempDir dir;
  const std::string tokens = dir.file("tokens");
  const std::string token_file = add_token(tokens, "t", dir.path(), {"--token-max-bytes", "4000000"});
  const std::string token = test_support::read_file(token_file).substr(0, 68);
  Hub hub(dir.file("hub.db"), tokens, {"--threads", "4"});
  ASSERT_GT(hub.port(), 0) << hub.log();
  httplib::Headers auth = {{"Authorization", "Bearer " + token}};

  // Script in every string field: stored, and shown as text on every page.
  json evil = poisoned(read_json(fixture().bench));
  evil["kind"] = "bench";
  evil["results"][0]["status"] = "ok";
  evil["results"][1]["status"] = "ok";
  test_support::write_file(dir.file("evil.json"), evil.dump());
  auto r = run_edgeprobe({"submit", hub.url(), dir.file("evil.json"), "--token-file", token_file});
  ASSERT_EQ(r.exit_code, 0) << r.err << hub.log();
  const json row = hub.get_json("/api/runs")["runs"][0];
  for (const std::string& path :
       {std::string("/runs"), std::string("/runs/1"), std::string("/leaderboards"), std::string("/devices"),
        "/device?id=" + url_encode(row["device"]["id"].get<std::string>()),
        "/leaderboard?model=" + url_encode(row["model"]["name"].get<std::string>()) +
            "&quant=" + url_encode(row["model"]["quant"].get<std::string>()),
        std::string("/runs?device=%3Cscript%3E")}) {
    const std::string page = hub.get(path);
    EXPECT_GT(page.size(), 500u) << path;
    EXPECT_EQ(page.find("<script>alert"), std::string::npos) << path;
    EXPECT_EQ(page.find("<img src=x"), std::string::npos) << path;
  }

  // 100 MB: refused from its Content-Length, before it is read; sent without one
  // (chunked), cut once past the token's limit.
  const std::string head = "POST /api/submit HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer " + token +
                           "\r\nContent-Type: application/json\r\n";
  EXPECT_EQ(first_line(raw_request(hub.port(), head + "Content-Length: 104857600\r\n\r\n", 0)),
            "HTTP/1.1 413 Payload Too Large");
  EXPECT_EQ(first_line(raw_request(hub.port(), head + "Transfer-Encoding: chunked\r\n\r\n", 100)),
            "HTTP/1.1 413 Payload Too Large");
  // Nested 10^5 deep: refused by the bounded parser.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto res = hub.client().Post("/api/submit", auth, deep, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 422);
  EXPECT_NE(res->body.find("nested deeper"), std::string::npos) << res->body;

  // Clients that trickle a byte a second hold every worker: the hub closes them and
  // still answers.
  std::vector<int> slow;
  for (int i = 0; i < 12; ++i) slow.push_back(connect_to(hub.port()));
  std::atomic<bool> done{false};
  std::thread trickle([&] {
    while (!done) {
      for (int fd : slow) (void)!::send(fd, "G", 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(total_runs(hub), 1u);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(waited, 30) << hub.log();
  done = true;
  trickle.join();
  for (int fd : slow) ::close(fd);

  // 10^5 tiny requests from 4 keep-alive clients: every one answered, the hub still up.
  const auto tiny_start = std::chrono::steady_clock::now();
  std::atomic<int> ok{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c)
    clients.emplace_back([&] {
      auto cl = hub.client();
      cl.set_keep_alive(true);
      for (int i = 0; i < 25000; ++i)
        if (auto res = cl.Get("/healthz"); res && res->status == 200) ++ok;
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(ok.load(), 100000);
  std::cerr << fmt::format(
      "10^5 requests in {:.1f} s; a request behind 12 trickling clients waited {:.1f} s\n",
      std::chrono::duration<double>(std::chrono::steady_clock::now() - tiny_start).count(), waited);
  EXPECT_TRUE(hub.running()) << hub.log();
  EXPECT_EQ(total_runs(hub), 1u);
}
