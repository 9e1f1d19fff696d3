// `edgeprobe lab submit --engine lava` and `lab import` through the real binary, without
// a LAVA server: jobs rendered and checked by LAVA's own schema (lava-common), a real
// device stream (`run --plan -o lava`) taken from a job log as LAVA's dispatcher writes
// it, imported twice without a unit twice, and the devices that did not finish
// resubmitted with their stored units marked done. Two jobs fetching into one work
// directory at once; and `lab receive` against a stand-in for LAVA's REST API that calls
// back before it saves the job's end, as LAVA does. The dispatcher itself runs the jobs
// in lava_dispatcher_test.cpp.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/digest.h"
#include "core/text.h"
#include "edgeprobe_version.h"
#include "support/run_process.h"

using namespace edgeprobe;
using namespace edgeprobe::test_support;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kBundle = x86_64_bundle_name();
const char* kLavaSchema = "/usr/share/lava-common/lava-schema.py";

// A LAVA job log of `target` output as the dispatcher writes it: quotes escaped, each
// line a double-quoted YAML record; `result` closes it as the lava/job result does.
std::string as_lava_log(const std::string& target, const std::string& result) {
  std::string log = "- {\"dt\": \"2026-12-05T10:00:00.1\", \"lvl\": \"info\", \"msg\": \"start: 3 lava-test-retry\"}\n";
  std::istringstream in(target);
  for (std::string line; std::getline(in, line);) {
    std::string msg;
    for (const char c : line) msg += c == '"' ? std::string("\\\\\\\"") : std::string(1, c);
    log += "- {\"dt\": \"2026-12-05T10:00:01.2\", \"lvl\": \"target\", \"msg\": \"" + msg + "\"}\n";
  }
  if (!result.empty()) log += "- {\"dt\": \"2026-12-05T10:00:02\", \"lvl\": \"results\", \"msg\": " + result + "}\n";
  return log;
}


// ---- a stand-in for LAVA's REST API, on loopback --------------------------------------

int listen_loopback(int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 16) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("cannot listen on loopback");
  *port = ntohs(a.sin_port);
  return fd;
}

// A port nothing listens on (for the receiver to bind).
int free_port() {
  int port = 0;
  close(listen_loopback(&port));
  return port;
}

// One HTTP request off `fd`: "METHOD PATH" (the body is read and dropped).
std::string read_request(int fd) {
  std::string head;
  char c = 0;
  while (head.find("\r\n\r\n") == std::string::npos && read(fd, &c, 1) == 1) head += c;
  std::string lower = head;
  for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower.find("expect: 100-continue") != std::string::npos) (void)!write(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
  size_t length = 0;
  if (const auto at = lower.find("content-length:"); at != std::string::npos)
    length = std::strtoull(lower.c_str() + at + 15, nullptr, 10);
  for (std::string body(4096, '\0'); length > 0;) {
    const ssize_t n = read(fd, body.data(), std::min(length, body.size()));
    if (n <= 0) break;
    length -= static_cast<size_t>(n);
  }
  const std::string line = head.substr(0, head.find("\r\n"));
  return line.substr(0, line.rfind(' '));
}

class FakeLava {
 public:
  using Handler = std::function<std::pair<int, std::string>(const std::string& request)>;
  FakeLava() : fd_(listen_loopback(&port_)), thread_([this] { serve(); }) {}
  ~FakeLava() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void handle(Handler h) {
    std::lock_guard<std::mutex> lock(mutex_);
    handler_ = std::move(h);
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 100) != 1) continue;
      const int peer = accept(fd_, nullptr, nullptr);
      if (peer < 0) continue;
      const std::string request = read_request(peer);
      std::pair<int, std::string> answer{404, R"({"detail":"Not found."})"};
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (handler_) answer = handler_(request);
      }
      const std::string text = "HTTP/1.1 " + std::to_string(answer.first) +
                               " X\r\nContent-Type: application/json\r\nContent-Length: " +
                               std::to_string(answer.second.size()) + "\r\nConnection: close\r\n\r\n" + answer.second;
      (void)!write(peer, text.data(), text.size());
      close(peer);
    }
  }
  int port_ = 0;
  int fd_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  Handler handler_;
  std::thread thread_;
};

// What LAVA's callback does: a POST to the receiver; its status line.
std::string post_callback(int port, const std::string& path, const std::string& body) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return "";
  }
  const std::string text = "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  (void)!write(fd, text.data(), text.size());
  std::string answer;
  char buf[512];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) answer.append(buf, static_cast<size_t>(n));
  close(fd);
  return answer.substr(0, answer.find("\r\n"));
}

class LavaCli : public ::testing::Test {
 protected:
  void SetUp() override {
    write_stand_in_bundle(dir_.file("dist"));
    write_file(dir_.file("lab.yml"),
               "all:\n  hosts:\n    dut-01: {transport: ssh, host: 127.0.0.1, arch: x86_64, lava_tags: site-a}\n"
               "    dut-02: {transport: ssh, host: 127.0.0.2, arch: x86_64}\n");
  }

  ProcessResult ep(std::vector<std::string> args, int timeout_s = 300) {
    return run_edgeprobe(args, timeout_s);
  }

  // lab submit --no-submit: the lab run is stored and each job rendered into `render`.
  json submit(const std::string& render, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"lab", "submit", "-i", dir_.file("lab.yml"), "--dist", dir_.file("dist"),
                                     "--artifacts-dir", dir_.file("artifacts"), "--artifacts-url",
                                     "file://" + dir_.file("artifacts"), "--render", render, "--no-submit",
                                     "--db", dir_.file("lab.db"), "-o", "json", "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = ep(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }

  std::vector<std::string> bench_plan() {
    const json plan = {{"kind", "bench"},
                       {"sweep", {{"models", {tiny_model()}}, {"n_prompt", {16}}, {"n_gen", {4}}, {"threads", {1}}}},
                       {"repetitions", 2},
                       {"ceilings", "off"},
                       {"env", {{"sample_hz", 0}}}};
    write_file(dir_.file("plan.json"), plan.dump());
    return {dir_.file("plan.json")};
  }

  // The plan a rendered job carries, as the device decodes it.
  static json job_plan(const std::string& definition) {
    const std::string yaml = read_file(definition);
    const json job = json::parse(yaml.substr(yaml.find('{')));
    return json::parse(*base64_decode(
        job["actions"][2]["test"]["definitions"][0]["parameters"]["EP_PLAN_B64"].get<std::string>()));
  }

  // What the job's `run --plan -o lava` prints, in a work directory laid out as the job
  // lays it out (models/ holding what it fetched).
  ProcessResult run_on_device(const json& plan) {
    const std::string dev = dir_.file("device");
    fs::create_directories(dev);
    if (!fs::exists(dev + "/models")) fs::create_directory_symlink(dir_.file("artifacts"), dev + "/models");
    write_file(dev + "/plan.json", plan.dump());
    return run_process({"/bin/sh", "-c", "cd '" + dev + "' && exec '" + EDGEPROBE_BINARY + "' run --plan plan.json -o lava"},
                       300);
  }

  TempDir dir_;
};

}  // namespace

TEST_F(LavaCli, JobsAreRenderedPerDeviceAndLavasOwnSchemaAcceptsThem) {
  const json out = submit(dir_.file("jobs"), bench_plan());
  ASSERT_EQ(out["jobs"].size(), 2u) << out.dump();
  for (const auto& j : out["jobs"]) {
    EXPECT_EQ(j["status"], "rendered");
    const std::string yaml = read_file(j["definition"].get<std::string>());
    const json job = json::parse(yaml.substr(yaml.find('{')));
    EXPECT_EQ(job["tags"][0], "ep-" + j["device"].get<std::string>());
    // The plan the device runs names the model by its place under the job's directory,
    // and the model is staged under a name its content fixes.
    const json& params = job["actions"][2]["test"]["definitions"][0]["parameters"];
    const json plan = json::parse(*base64_decode(params["EP_PLAN_B64"].get<std::string>()));
    EXPECT_EQ(plan["sweep"]["models"][0], params["EP_MODEL_1_PATH"]);
    EXPECT_EQ(params["EP_MODEL_1_SHA256"], sha256_file(tiny_model()));
    EXPECT_TRUE(fs::exists(dir_.file("artifacts") + "/" + fs::path(params["EP_MODEL_1_PATH"].get<std::string>()).filename().string()));
    EXPECT_EQ(params["EP_BUNDLE_SHA256"], sha256_file(dir_.file("dist") + "/" + kBundle + ".tar.gz"));
    if (!fs::exists(kLavaSchema)) {
      ADD_FAILURE() << kLavaSchema << " is missing: scripts/setup.sh installs lava-common";
      continue;
    }
    const auto check = run_process({"/usr/bin/python3", kLavaSchema, "job", j["definition"].get<std::string>()}, 120);
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  }
  EXPECT_NE(out["jobs"][0]["definition"].get<std::string>().find("dut-01"), std::string::npos);
  const std::string first = read_file(out["jobs"][0]["definition"].get<std::string>());
  EXPECT_NE(first.find("\"site-a\""), std::string::npos) << "the inventory's lava_tags";

  // Without --render, --no-submit has nothing to do; without artifacts the devices could fetch nothing.
  const auto bare = ep({"lab", "submit", "-i", dir_.file("lab.yml"), "--no-submit", "--db", dir_.file("x.db"),
                        bench_plan()[0]});
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_NE(bare.err.find("--render DIR"), std::string::npos) << bare.err;
  const auto no_art = ep({"lab", "submit", "-i", dir_.file("lab.yml"), "--render", dir_.file("j2"), "--no-submit",
                          "--db", dir_.file("x.db"), bench_plan()[0]});
  EXPECT_EQ(no_art.exit_code, 2);
  EXPECT_NE(no_art.err.find("--artifacts-dir DIR and --artifacts-url URL"), std::string::npos) << no_art.err;
  // No server configured: one line naming both places, and no lab run stored.
  const auto no_server = run_process({EDGEPROBE_BINARY, "lab", "submit", "-i", dir_.file("lab.yml"), "--dist",
                                      dir_.file("dist"), "--artifacts-dir", dir_.file("a3"), "--artifacts-url",
                                      "http://127.0.0.1:9/", "--db", dir_.file("y.db"), bench_plan()[0]},
                                     60, {{"HOME", dir_.file("nohome")}, {"LAVA_URL", ""}, {"LAVA_TOKEN", ""}});
  EXPECT_EQ(no_server.exit_code, 2) << no_server.err;
  EXPECT_NE(no_server.err.find("set LAVA_URL and LAVA_TOKEN"), std::string::npos) << no_server.err;
  EXPECT_FALSE(fs::exists(dir_.file("y.db")));
}

TEST_F(LavaCli, AJobLogIsImportedUnitByUnitAgainWithoutDuplicatesAndTheRestResubmitted) {
  const json out = submit(dir_.file("jobs"), bench_plan());
  const std::string lab_run = std::to_string(out["lab_run"].get<int64_t>());
  // What the device prints in its job: the real stream of its plan, framed.
  const auto run = run_on_device(job_plan(out["jobs"][0]["definition"]));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string pass = R"({"case": "job", "definition": "lava", "result": "pass"})";
  write_file(dir_.file("job1.yaml"), as_lava_log(run.out, pass));
  auto import = [&](const std::string& log, const std::string& device) {
    const auto r = ep({"lab", "import", lab_run, "--device", device, "--lava-log", log, "--db", dir_.file("lab.db"),
                       "-o", "json", "-q"});
    return std::make_pair(r, json::parse(r.out, nullptr, false));
  };
  auto [r1, j1] = import(dir_.file("job1.yaml"), "dut-01");
  ASSERT_TRUE(j1.is_object()) << r1.err;
  EXPECT_EQ(j1["jobs"][0]["status"], "ok") << j1.dump();
  EXPECT_EQ(j1["jobs"][0]["units"], 4) << "two tests of two repetitions";
  EXPECT_EQ(j1["exit_code"], 0) << "dut-02 has not reported: the lab run is not finished";
  auto [r2, j2] = import(dir_.file("job1.yaml"), "dut-01");
  EXPECT_EQ(j2["jobs"][0]["units"], 0) << "imported again: nothing twice";
  EXPECT_EQ(j2["jobs"][0]["status"], "ok") << j2.dump();

  // dut-02's connection died halfway: lost, its units kept, the lab run failed.
  // Cut after the first test's result: its repetitions arrived, the second test's did not.
  std::string cut;
  {
    std::istringstream in(run.out);
    for (std::string line; std::getline(in, line);) {
      cut += line + "\n";
      const auto bytes = base64_decode(line.substr(line.rfind(' ') + 1));
      if (bytes && bytes->find("\"event\":\"test\"") != std::string::npos) break;
    }
  }
  write_file(dir_.file("job2.yaml"),
             as_lava_log(cut, R"({"case": "job", "definition": "lava", "result": "fail", "error_type": "Infrastructure", "error_msg": "Connection closed"})"));
  auto [r3, j3] = import(dir_.file("job2.yaml"), "dut-02");
  EXPECT_EQ(r3.exit_code, 3) << r3.err;
  EXPECT_EQ(j3["jobs"][1]["status"], "lost") << j3.dump();
  EXPECT_NE(j3["jobs"][1]["error"].get<std::string>().find("Connection closed"), std::string::npos);
  const int64_t lost_run = j3["jobs"][1]["run_id"];
  const size_t kept = j3["jobs"][1]["units"];
  EXPECT_EQ(kept, 2u) << "the first test's two repetitions";
  const auto runs = ep({"runs", "--kind", "lab", "-o", "json", "--db", dir_.file("lab.db")});
  EXPECT_NE(runs.out.find("\"failed\""), std::string::npos) << runs.out;

  // --resume resubmits only dut-02, attempt 2, its stored units marked done.
  const json again = submit(dir_.file("jobs2"), {"--resume", lab_run});
  ASSERT_EQ(again["jobs"].size(), 1u) << again.dump();
  EXPECT_EQ(again["jobs"][0]["device"], "dut-02");
  EXPECT_EQ(again["jobs"][0]["attempt"], 2);
  const json plan = job_plan(again["jobs"][0]["definition"]);
  EXPECT_EQ(plan["completed"].size(), kept) << plan.dump();
  // The device runs the rest and the import continues the same stored run.
  const auto rest = run_on_device(plan);
  ASSERT_EQ(rest.exit_code, 0) << rest.err;
  write_file(dir_.file("job3.yaml"), as_lava_log(rest.out, pass));
  auto [r4, j4] = import(dir_.file("job3.yaml"), "dut-02");
  EXPECT_EQ(r4.exit_code, 0) << r4.err;
  EXPECT_EQ(j4["jobs"][1]["status"], "ok") << j4.dump();
  EXPECT_EQ(j4["jobs"][1]["run_id"], lost_run);
  EXPECT_EQ(j4["jobs"][1]["units"].get<size_t>(), 4u - kept);
}

TEST_F(LavaCli, ALogThatIsNotAJobLogOrNamesNoDeviceIsRefusedInOneLine) {
  const json out = submit(dir_.file("jobs"), bench_plan());
  const std::string lab_run = std::to_string(out["lab_run"].get<int64_t>());
  const auto missing = ep({"lab", "import", lab_run, "--device", "dut-01", "--lava-log", dir_.file("none.yaml"),
                           "--db", dir_.file("lab.db")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(count_of(missing.err, "\n"), 1u) << missing.err;
  const auto alone = ep({"lab", "import", lab_run, "--lava-log", dir_.file("none.yaml"), "--db", dir_.file("lab.db")});
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_NE(alone.err.find("--lava-log and --device go together"), std::string::npos) << alone.err;
  const auto stranger = ep({"lab", "import", lab_run, "--device", "pixel", "--lava-log", dir_.file("none.yaml"),
                            "--db", dir_.file("lab.db")});
  EXPECT_NE(stranger.err.find("has no device 'pixel'"), std::string::npos) << stranger.err;
  // Random bytes as a log: no stream in it, the job not finished, nothing stored.
  write_file(dir_.file("junk.yaml"), std::string("\x01\x02{[\n- {\"lvl\": \n", 14));
  const auto junk = ep({"lab", "import", lab_run, "--device", "dut-01", "--lava-log", dir_.file("junk.yaml"),
                        "--db", dir_.file("lab.db"), "-o", "json"});
  EXPECT_EQ(junk.exit_code, 0) << junk.err;
  EXPECT_EQ(json::parse(junk.out)["jobs"][0]["status"], "running");
  const auto bench = ep({"bench", "-q", "-m", tiny_model(), "-p", "8", "-n", "0", "-r", "1", "-t", "1", "--ceilings",
                         "off", "--sample-hz", "0", "--db", dir_.file("lab.db")});
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const auto not_lab = ep({"lab", "import", std::to_string(out["lab_run"].get<int64_t>() + 1), "--db", dir_.file("lab.db")});
  EXPECT_EQ(not_lab.exit_code, 2);
  EXPECT_NE(not_lab.err.find("is not a LAVA lab run"), std::string::npos) << not_lab.err;
}

namespace {

// The part of a rendered job's inline test that fetches and unpacks (every step before
// the plan's), as one sh script with the job's parameters set.
std::string fetch_script(const std::string& definition) {
  const std::string yaml = read_file(definition);
  const json def = json::parse(yaml.substr(yaml.find('{')))["actions"][2]["test"]["definitions"][0];
  std::string script;
  for (const auto& [key, value] : def["parameters"].items())
    script += key + "=" + shell_quote(value.get<std::string>()) + "; export " + key + "\n";
  for (const auto& step : def["repository"]["run"]["steps"]) {
    if (step.get<std::string>().find("EP_PLAN_B64") != std::string::npos) break;
    script += step.get<std::string>() + "\n";
  }
  return script + "sh \"$EP_BIN\" --version\n";
}

// Waits (up to 20 s) until both jobs have reached this point for NAME.
const char* kBarrier =
    "#!/bin/sh\nb=\"$EP_BARRIER/$1\"; mkdir -p \"$b\"; : > \"$b/$$\"; i=0\n"
    "while [ \"$(ls \"$b\" | wc -l)\" -lt 2 ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done\n";

// `lab receive` of a lab run of dut-01 alone, submitted to `lava` (a stand-in) whose job
// 41 ends only when `ended` says so; LAVA's callback is posted once the receiver has read
// the job (it listens by then). Returns receive's result; `reads_after` counts the job's
// reads after the callback.
struct Received {
  ProcessResult result;
  std::string callback_answer;
  int reads_after = 0;
};

class LavaReceive : public LavaCli {
 protected:
  Received receive(const std::function<bool(int reads_after)>& ended, const std::vector<std::string>& flags) {
    FakeLava lava;
    lava.handle([](const std::string& request) -> std::pair<int, std::string> {
      if (request == "POST /api/v0.2/jobs/") return {201, R"({"job_ids": [41]})"};
      return {404, R"({"detail":"Not found."})"};
    });
    const int port = free_port();
    const std::vector<std::pair<std::string, std::string>> env = {{"LAVA_URL", lava.url()}, {"LAVA_TOKEN", "t"}};
    std::vector<std::string> args = {EDGEPROBE_BINARY, "lab", "submit", "-i", dir_.file("lab.yml"), "--devices", "dut-01",
                                     "--dist", dir_.file("dist"), "--artifacts-dir", dir_.file("artifacts"),
                                     "--artifacts-url", "file://" + dir_.file("artifacts"), "--render", dir_.file("jobs"),
                                     "--notify-url", "http://127.0.0.1:" + std::to_string(port) + "/lava", "--db",
                                     dir_.file("lab.db"), "-o", "json", "-q"};
    args.push_back(bench_plan()[0]);
    const auto sub = run_process(args, 300, env);
    EXPECT_EQ(sub.exit_code, 0) << sub.err;
    const json out = json::parse(sub.out, nullptr, false);
    if (!out.is_object()) return {};
    EXPECT_EQ(out["jobs"][0]["lava_job"], 41);
    // The job's log: the device's whole stream, the job's lava/job result at its end.
    const auto run = run_on_device(job_plan(out["jobs"][0]["definition"]));
    EXPECT_EQ(run.exit_code, 0) << run.err;
    const std::string log = as_lava_log(run.out, R"({"case": "job", "definition": "lava", "result": "pass"})");
    std::atomic<bool> called_back{false};
    std::atomic<int> reads{0}, reads_after{0};
    lava.handle([&, log](const std::string& request) -> std::pair<int, std::string> {
      if (request == "GET /api/v0.2/jobs/41/logs/") return {200, log};
      if (request != "GET /api/v0.2/jobs/41/") return {404, R"({"detail":"Not found."})"};
      ++reads;
      const bool end = called_back && ended(++reads_after);
      return {200, json{{"id", 41}, {"state", end ? "Finished" : "Running"}, {"health", end ? "Complete" : "Unknown"},
                        {"actual_device", "dut-01"}, {"failure_comment", nullptr}}
                       .dump()};
    });
    Received r;
    std::thread lava_side([&] {
      for (int i = 0; i < 1200 && reads == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      called_back = true;
      r.callback_answer = post_callback(port, "/lava", R"({"id": 41, "status": "Complete"})");
    });
    std::vector<std::string> rec = {EDGEPROBE_BINARY, "lab", "receive", std::to_string(out["lab_run"].get<int64_t>()),
                                    "--listen", "127.0.0.1:" + std::to_string(port), "--poll", "100000",
                                    "--db", dir_.file("lab.db"), "-o", "json"};
    rec.insert(rec.end(), flags.begin(), flags.end());
    r.result = run_process(rec, 120, env);
    lava_side.join();
    lava.handle(nullptr);  // its state goes with this function
    r.reads_after = reads_after;
    return r;
  }
};

}  // namespace

TEST_F(LavaCli, TwoJobsSharingAWorkDirectoryFetchAndUnpackAtOnceAndBothSucceed) {
  // Two LAVA devices on one host with one login (lava_server_test's two ssh devices, a
  // pool's jobs) share the work directory. Stand-ins for curl and tar let each job
  // finish its copy and then wait for the other's, so both check and rename at once.
  const json out = submit(dir_.file("jobs"), bench_plan());
  ASSERT_EQ(out["jobs"].size(), 2u) << out.dump();
  const std::string bin = dir_.file("bin");
  fs::create_directories(bin);
  write_file(bin + "/barrier", kBarrier);
  write_file(bin + "/curl",
             "#!/bin/sh\n# curl -fsSL -o OUT file://PATH\n"
             "while [ $# -gt 0 ]; do case \"$1\" in -o) out=$2; shift ;; -*) ;; *) url=$1 ;; esac; shift; done\n"
             "cp \"${url#file://}\" \"$out\" || exit 22\n\"$(dirname \"$0\")/barrier\" \"$(basename \"$url\")\"\n");
  write_file(bin + "/tar", "#!/bin/sh\n/bin/tar \"$@\" || exit $?\n\"$(dirname \"$0\")/barrier\" tar\n");
  write_file(bin + "/lava-test-case", "#!/bin/sh\necho \"$*\" >> \"$EP_CASES\"\n");
  write_file(bin + "/lava-test-raise", "#!/bin/sh\necho \"raise $*\" >> \"$EP_CASES\"\n");
  for (const char* f : {"barrier", "curl", "tar", "lava-test-case", "lava-test-raise"})
    fs::permissions(bin + "/" + f, fs::perms::owner_all);
  const std::string home = dir_.file("home");
  fs::create_directories(home);
  ProcessResult results[2];
  std::thread jobs[2];
  for (int i = 0; i < 2; ++i) {
    write_file(dir_.file("job" + std::to_string(i) + ".sh"), fetch_script(out["jobs"][i]["definition"]));
    jobs[i] = std::thread([&, i] {
      results[i] = run_process({"/bin/sh", dir_.file("job" + std::to_string(i) + ".sh")}, 120,
                               {{"PATH", bin + ":" + std::getenv("PATH")}, {"HOME", home},
                                {"EP_BARRIER", dir_.file("barrier")}, {"EP_CASES", dir_.file("cases" + std::to_string(i))}});
    });
  }
  for (auto& t : jobs) t.join();
  for (int i = 0; i < 2; ++i) {
    const std::string cases = read_file(dir_.file("cases" + std::to_string(i)));
    EXPECT_EQ(results[i].exit_code, 0) << "job " << i << ": " << cases << results[i].err;
    EXPECT_NE(cases.find("ep-fetch-bundle --result pass"), std::string::npos) << cases;
    EXPECT_NE(cases.find("ep-fetch-model-1 --result pass"), std::string::npos) << cases;
    EXPECT_EQ(cases.find("raise"), std::string::npos) << cases;
    EXPECT_NE(results[i].out.find(kVersion), std::string::npos) << "the unpacked bundle runs: " << results[i].out;
  }
  // Each file whole under its final name, and nothing half-made left beside it.
  const std::string work = home + "/edgeprobe-lab";
  for (const auto& e : fs::recursive_directory_iterator(work)) {
    const std::string name = e.path().filename();
    EXPECT_TRUE(name.find(".part") == std::string::npos && name.find(".unpack") == std::string::npos) << e.path();
  }
  const std::string yaml = read_file(out["jobs"][0]["definition"]);
  const json params = json::parse(yaml.substr(yaml.find('{')))["actions"][2]["test"]["definitions"][0]["parameters"];
  EXPECT_EQ(sha256_file(work + "/" + params["EP_MODEL_1_PATH"].get<std::string>()), sha256_file(tiny_model()));
}

TEST_F(LavaReceive, ACallbackThatComesBeforeLavaSavesTheJobsEndIsFollowedByReadingTheJobAgain) {
  // LAVA posts the callback from inside the transaction that saves the job as finished
  // (lava_scheduler_app/signals.py: a pre_save signal; Celery runs the task eagerly), so
  // the read right after it still says Running; the next says Finished.
  const auto t0 = std::chrono::steady_clock::now();
  const Received r = receive([](int reads_after) { return reads_after >= 2; }, {"--timeout", "30"});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.callback_answer, "HTTP/1.1 204 No Content");
  EXPECT_EQ(r.result.exit_code, 0) << r.result.err;
  const json done = json::parse(r.result.out, nullptr, false);
  ASSERT_TRUE(done.is_object()) << r.result.out << r.result.err;
  EXPECT_EQ(done["jobs"][0]["status"], "ok") << done.dump();
  EXPECT_EQ(r.reads_after, 2) << "read once at the callback, once again after the first pause";
  EXPECT_NE(r.result.err.find("1 callback(s) whose job does not read as ended yet"), std::string::npos) << r.result.err;
  EXPECT_NE(r.result.err.find("reads as ended"), std::string::npos) << r.result.err;
  EXPECT_LT(took, 25) << "the job's end was read within a second of its callback, not at --timeout";
}

TEST_F(LavaReceive, ReadingAgainAfterACallbackBacksOffAndStopsAtTheSettleLimit) {
  // A callback whose job never reads as ended (a forged one, or a LAVA that never
  // commits): read at 0, 0.25, 0.75 and 1.75 s, then not again before --timeout.
  const Received r = receive([](int) { return false; }, {"--settle", "2", "--timeout", "8"});
  EXPECT_EQ(r.result.exit_code, 3) << r.result.err;
  EXPECT_NE(r.result.err.find("1 callback(s) still without an ended job after 2 s of reading again"), std::string::npos)
      << r.result.err;
  EXPECT_GE(r.reads_after, 2) << r.result.err;
  EXPECT_LE(r.reads_after, 4) << r.result.err;
}
