// edgeprobe on a whole LAVA 2023.01 (Debian's lava-server, its scheduler and two workers
// standing for two sites, on a private PostgreSQL; tests/lab/lava/lava-lab.sh), with two
// `ssh` devices on one loopback sshd. Started once for the suite and stopped after it:
// both devices complete; one device's connection dies mid-plan (that device lost with the
// units it sent, the other complete); a job cancelled mid-run (cancelled, units kept); a
// device in maintenance past the queue deadline (not scheduled), then --resume reruns
// only that device. Every import is taken while jobs run too: no unit is stored twice.
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/digest.h"
#include "edgeprobe_version.h"
#include "support/run_process.h"

using namespace edgeprobe;
using namespace edgeprobe::test_support;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kLavaLab = std::string(EDGEPROBE_SOURCE_DIR) + "/tests/lab/lava/lava-lab.sh";

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class LavaServer : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (geteuid() != 0) return;
    dir_ = new TempDir;
    // The cluster runs as postgres and the server as lavaserver: they must reach DIR.
    fs::permissions(dir_->path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                      fs::perms::others_read | fs::perms::others_exec);
    const double t0 = now_s();
    // Pings every 5 s instead of 20: a job starts and ends on a worker's ping.
    const auto r = run_process({"/bin/bash", kLavaLab, "start", dir_->file("lava")}, 900,
                               {{"EP_LAVA_PING_INTERVAL", "5"}, {"EP_LAVA_INITIAL_HEALTH", "GOOD"}});
    start_error_ = r.exit_code == 0 ? "" : "lava-lab.sh start failed: " + r.err.substr(r.err.size() > 3000 ? r.err.size() - 3000 : 0);
    std::istringstream out(r.out);
    for (std::string line; std::getline(out, line);) {
      if (line.rfind("LAVA_URL=", 0) == 0) url_ = line.substr(9);
      if (line.rfind("LAVA_TOKEN=", 0) == 0) token_ = line.substr(11);
    }
    std::cerr << "[lava] started in " << now_s() - t0 << " s\n";
    write_stand_in_bundle(dir_->file("dist"));
    write_file(dir_->file("lab.yml"),
               "all:\n  hosts:\n    dut-01: {transport: ssh, host: 127.0.0.1, arch: x86_64, workdir: " +
                   dir_->file("dev1") + "}\n    dut-02: {transport: ssh, host: 127.0.0.2, arch: x86_64, workdir: " +
                   dir_->file("dev2") + "}\n");
  }
  static void TearDownTestSuite() {
    if (!dir_) return;
    const auto r = run_process({"/bin/bash", kLavaLab, "stop", dir_->file("lava")}, 300);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "LAVA's services and its ssh device's overlay need root";
    ASSERT_EQ(start_error_, "");
    ASSERT_FALSE(url_.empty() || token_.empty());
  }

  static std::string file(const std::string& name) { return dir_->file(name); }

  ProcessResult ep(std::vector<std::string> args, int timeout_s = 300) {
    args.insert(args.begin(), EDGEPROBE_BINARY);
    return run_process(args, timeout_s, {{"LAVA_URL", url_}, {"LAVA_TOKEN", token_}});
  }

  // A bench plan of `tests` tests of two repetitions, `delay_s` before each test.
  std::string plan(const std::string& name, int tests, double delay_s) {
    json p = {{"kind", "bench"},
              {"sweep", {{"models", {tiny_model()}}, {"n_prompt", json::array()}, {"n_gen", {0}}, {"threads", {1}}}},
              {"repetitions", 2},
              {"delay_s", delay_s},
              {"ceilings", "off"},
              {"env", {{"sample_hz", 0}}}};
    for (int i = 0; i < tests; ++i) p["sweep"]["n_prompt"].push_back(16 + i);
    write_file(file(name), p.dump());
    return file(name);
  }

  json submit(const std::string& db, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"lab", "submit", "-i", file("lab.yml"), "--dist", file("dist"),
                                     "--artifacts-dir", file("artifacts"), "--artifacts-url",
                                     "file://" + file("artifacts"), "--db", file(db), "-o", "json", "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = ep(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }

  json import(const std::string& db, int64_t lab_run) {
    const auto r = ep({"lab", "import", std::to_string(lab_run), "--db", file(db), "-o", "json", "-q"});
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.err;
    return json::parse(r.out, nullptr, false);
  }

  static const json* row(const json& jobs, const std::string& device) {
    for (const auto& j : jobs["jobs"])
      if (j["device"] == device) return &j;
    return nullptr;
  }

  // Imports every few seconds until `done` says so (or the time is up); returns the last
  // answer. Units committed over all imports are summed per device.
  json import_until(const std::string& db, int64_t lab_run, const std::function<bool(const json&)>& done,
                    std::map<std::string, size_t>& units, double limit_s = 300) {
    const double t0 = now_s();
    json last;
    while (now_s() - t0 < limit_s) {
      last = import(db, lab_run);
      if (!last.is_object()) break;
      for (const auto& j : last["jobs"]) units[j["device"]] += j["units"].get<size_t>();
      if (done(last)) return last;
      std::this_thread::sleep_for(std::chrono::seconds(3));
    }
    ADD_FAILURE() << "lab import did not reach the expected state in " << limit_s << " s: " << last.dump();
    return last;
  }

  static bool all_finished(const json& jobs) {
    for (const auto& j : jobs["jobs"]) {
      const std::string s = j["status"];
      if (s == "submitted" || s == "queued" || s == "running") return false;
    }
    return true;
  }

  // The sshd session that carries a device's job: the parent sshd of its `run --plan`.
  static pid_t session_of(const std::string& plan_fragment) {
    for (const auto& p : fs::directory_iterator("/proc")) {
      const std::string pid = p.path().filename();
      if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
      std::string cmd = read_file_quiet("/proc/" + pid + "/cmdline");
      std::replace(cmd.begin(), cmd.end(), '\0', ' ');
      if (cmd.find(plan_fragment) == std::string::npos || cmd.find(" run --plan ") == std::string::npos) continue;
      for (pid_t at = std::stoi(pid); at > 1;) {
        std::istringstream stat(read_file_quiet("/proc/" + std::to_string(at) + "/stat"));
        std::string self, comm, state;
        pid_t parent = 0;
        stat >> self >> comm >> state >> parent;
        if (comm == "(sshd)") return at;
        at = parent;
      }
    }
    return 0;
  }
  static std::string read_file_quiet(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  ProcessResult lavacli(const std::vector<std::string>& args) {
    std::string cmd = ". '" + file("lava") + "/env' && lavacli";
    for (const auto& a : args) cmd += " '" + a + "'";
    return run_process({"/bin/bash", "-c", cmd}, 60);
  }

  static TempDir* dir_;
  static std::string url_, token_, start_error_;
};
TempDir* LavaServer::dir_ = nullptr;
std::string LavaServer::url_, LavaServer::token_, LavaServer::start_error_;

}  // namespace

TEST_F(LavaServer, BothDevicesCompleteAndLavaShowsTheHeadlineFiguresWithUnits) {
  const double t0 = now_s();
  const json sub = submit("s1.db", {plan("short.json", 1, 0)});
  ASSERT_EQ(sub["jobs"].size(), 2u) << sub.dump();
  for (const auto& j : sub["jobs"]) EXPECT_EQ(j["status"], "submitted");
  std::map<std::string, size_t> units;
  const json done = import_until("s1.db", sub["lab_run"], all_finished, units);
  for (const char* d : {"dut-01", "dut-02"}) {
    ASSERT_NE(row(done, d), nullptr);
    EXPECT_EQ((*row(done, d))["status"], "ok") << done.dump();
    EXPECT_EQ(units[d], 2u) << d << ": one test of two repetitions, each stored once";
  }
  EXPECT_EQ(done["exit_code"], 0);
  // LAVA's own results carry the figure and its unit.
  const auto tests = run_process({"/usr/bin/curl", "-fsS", "-H", "Authorization: Token " + token_,
                                  url_ + "/api/v0.2/jobs/" + std::to_string((*row(sub, "dut-01"))["lava_job"].get<int64_t>()) +
                                      "/tests/?limit=500"},
                                 60);
  EXPECT_NE(tests.out.find("\"name\":\"pp16-t1-prefill\""), std::string::npos) << tests.out.substr(0, 2000);
  EXPECT_NE(tests.out.find("\"unit\":\"tok/s\""), std::string::npos);
  std::cerr << "[lava] two devices complete in " << now_s() - t0 << " s\n";
}

TEST_F(LavaServer, AConnectionThatDiesLosesThatDeviceAloneWithTheUnitsItSent) {
  const double t0 = now_s();
  const json sub = submit("s2.db", {plan("long.json", 8, 2)});
  const int64_t lab = sub["lab_run"];
  std::map<std::string, size_t> units;
  // Wait until dut-02 has sent a few units, then cut its ssh session.
  import_until("s2.db", lab, [&](const json&) { return units["dut-02"] >= 4; }, units);
  const pid_t session = session_of("lab" + std::to_string(lab) + "-dut-02-");
  ASSERT_GT(session, 0) << "no sshd session runs dut-02's job";
  ASSERT_EQ(kill(session, SIGKILL), 0);
  const json done = import_until("s2.db", lab, all_finished, units);
  EXPECT_EQ((*row(done, "dut-02"))["status"], "lost") << done.dump();
  EXPECT_NE((*row(done, "dut-02"))["error"].get<std::string>().find("Infrastructure"), std::string::npos) << done.dump();
  EXPECT_EQ((*row(done, "dut-01"))["status"], "ok") << done.dump();
  EXPECT_EQ(units["dut-01"], 16u);
  EXPECT_GE(units["dut-02"], 4u);
  EXPECT_LT(units["dut-02"], 16u);
  EXPECT_EQ(done["exit_code"], 3);
  // The lost device's run keeps its units, marked failed; nothing was stored twice.
  const auto runs = ep({"runs", "-o", "json", "--db", file("s2.db")});
  const json list = json::parse(runs.out, nullptr, false);
  ASSERT_TRUE(list.is_array()) << runs.err;
  for (const auto& r : list) {
    if (r["id"] == (*row(done, "dut-02"))["run_id"]) {
      EXPECT_EQ(r["status"], "failed");
      EXPECT_EQ(r["repetitions"].get<size_t>(), units["dut-02"]);
    }
    if (r["id"] == (*row(done, "dut-01"))["run_id"]) {
      EXPECT_EQ(r["repetitions"], 16);
    }
  }
  std::cerr << "[lava] lost device scenario in " << now_s() - t0 << " s\n";
}

TEST_F(LavaServer, ACancelledJobIsCancelledAndKeepsWhatItSent) {
  const json sub = submit("s3.db", {"--devices", "dut-01", plan("long3.json", 8, 2)});
  const int64_t lab = sub["lab_run"];
  std::map<std::string, size_t> units;
  import_until("s3.db", lab, [&](const json&) { return units["dut-01"] >= 2; }, units);
  const auto cancel = lavacli({"jobs", "cancel", std::to_string((*row(sub, "dut-01"))["lava_job"].get<int64_t>())});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  const json done = import_until("s3.db", lab, all_finished, units);
  EXPECT_EQ((*row(done, "dut-01"))["status"], "cancelled") << done.dump();
  EXPECT_GE(units["dut-01"], 2u);
  EXPECT_LT(units["dut-01"], 16u);
}

TEST_F(LavaServer, ADeviceInMaintenanceIsNotScheduledAndResumeRerunsOnlyIt) {
  ASSERT_EQ(lavacli({"devices", "update", "--health", "MAINTENANCE", "dut-02"}).exit_code, 0);
  // LAVA's scheduler passes every 20 s or so: a fresh instance's first job can wait that
  // long for a device that is free, so the deadline leaves it three passes.
  const json sub = submit("s4.db", {"--queue-deadline", "60", plan("short4.json", 1, 0)});
  const int64_t lab = sub["lab_run"];
  std::map<std::string, size_t> units;
  const json first = import_until("s4.db", lab, all_finished, units);
  EXPECT_EQ((*row(first, "dut-01"))["status"], "ok") << first.dump();
  EXPECT_EQ((*row(first, "dut-02"))["status"], "not_scheduled") << first.dump();
  EXPECT_EQ(units["dut-02"], 0u);
  ASSERT_EQ(lavacli({"devices", "update", "--health", "GOOD", "dut-02"}).exit_code, 0);
  // `lab run --resume` of a LAVA lab run resubmits, and only what did not finish.
  const auto resume = ep({"lab", "run", "--resume", std::to_string(lab), "--dist", file("dist"), "--artifacts-dir",
                          file("artifacts"), "--artifacts-url", "file://" + file("artifacts"), "--db", file("s4.db"),
                          "-o", "json", "-q"});
  ASSERT_EQ(resume.exit_code, 0) << resume.err;
  const json again = json::parse(resume.out);
  ASSERT_EQ(again["jobs"].size(), 1u) << again.dump();
  EXPECT_EQ(again["jobs"][0]["device"], "dut-02");
  EXPECT_EQ(again["jobs"][0]["attempt"], 2);
  const json done = import_until("s4.db", lab, all_finished, units);
  EXPECT_EQ((*row(done, "dut-02"))["status"], "ok") << done.dump();
  EXPECT_EQ(units["dut-01"], 2u) << "dut-01 ran once";
  EXPECT_EQ(units["dut-02"], 2u);
  EXPECT_EQ(done["exit_code"], 0);
}

TEST_F(LavaServer, LavasCallbacksBringTheResultsWithoutAnImportByHand) {
  // A free port for the receiver, named in the jobs' notify block.
  const auto port_probe = run_process({"/usr/bin/python3", "-c",
                                       "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); "
                                       "print(s.getsockname()[1])"},
                                      30);
  const std::string port = port_probe.out.substr(0, port_probe.out.find('\n'));
  const json sub = submit("s5.db", {"--notify-url", "http://127.0.0.1:" + port + "/lava", plan("short5.json", 1, 0)});
  const int64_t lab = sub["lab_run"];
  // No periodic import: only LAVA's POSTs prompt one.
  const double t0 = now_s();
  const auto r = ep({"lab", "receive", std::to_string(lab), "--listen", "127.0.0.1:" + port, "--poll", "100000",
                     "--timeout", "400", "--db", file("s5.db"), "-o", "json"},
                    450);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const json done = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(done.is_object()) << r.out << r.err;
  for (const char* d : {"dut-01", "dut-02"}) EXPECT_EQ((*row(done, d))["status"], "ok") << done.dump();
  EXPECT_GE(count_of(r.err, "LAVA's callback (POST /lava)"), 2u) << r.err;
  std::cerr << "[lava] callbacks brought both devices in " << now_s() - t0 << " s\n";
}

TEST_F(LavaServer, APoolsJobsRunOnDevicesLavaPicksAndSayWhich) {
  // A pool's jobs work in ~/edgeprobe-lab of the login, and both devices here are one host
  // and one login (root on lava-lab.sh's sshd): the two jobs share that directory, which
  // outlives the test. What they fetch and unpack there is removed before and after, so
  // that in every run both jobs fetch and unpack at once, as on a fresh machine (where the
  // two once wrote one NAME.part together and one job failed at ep-fetch-model-1).
  const std::string work = std::string(getpwuid(0)->pw_dir) + "/edgeprobe-lab";
  const std::string bundle = x86_64_bundle_name() + ".tar.gz", model = tiny_model();
  const std::vector<std::string> fetched = {
      work + "/bundles/" + bundle, work + "/bundles/" + sha256_file(file("dist") + "/" + bundle),
      work + "/models/" + sha256_file(model).substr(0, 12) + "-" + fs::path(model).filename().string()};
  auto remove_fetched = [&](const std::vector<std::string>& more) {
    for (const auto& list : {fetched, more})
      for (const auto& f : list) fs::remove_all(f);
  };
  remove_fetched({});
  const json sub = submit("s6.db", {"--pool", "ssh", "--count", "2", "--arch", "x86_64", plan("short6.json", 1, 0)});
  ASSERT_EQ(sub["jobs"].size(), 2u) << sub.dump();
  std::map<std::string, size_t> units;
  const json done = import_until("s6.db", sub["lab_run"], all_finished, units);
  std::vector<std::string> written;
  for (const auto& j : done["jobs"]) {
    EXPECT_EQ(j["status"], "ok") << done.dump();
    const std::string device = j["lava_device"].is_string() ? j["lava_device"].get<std::string>() : "";
    EXPECT_TRUE(device == "dut-01" || device == "dut-02") << done.dump();
    const std::string run = "lab" + std::to_string(sub["lab_run"].get<int64_t>()) + "-" + j["device"].get<std::string>() + "-job0-a1";
    for (const std::string& f : {"/plans/" + run + ".json", "/" + run + ".lava", "/" + run + ".cases"}) written.push_back(work + f);
  }
  remove_fetched(written);
}
