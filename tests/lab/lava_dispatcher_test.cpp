// The real LAVA dispatcher (lava-run, Debian's lava-dispatcher 2023.01) runs the jobs that
// `lab submit --engine lava` renders, against a throwaway sshd on loopback (an `ssh`
// device, as a lab's boards are), with no server: the job fetches and checks the bundle
// and the model, runs the plan, streams it framed into the job log, and gives LAVA its
// headline figures; `lab import` then takes the log into the store.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "edgeprobe_version.h"
#include "support/run_process.h"

using namespace edgeprobe;
using namespace edgeprobe::test_support;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kBundle = x86_64_bundle_name();
const std::string kLavaLab = std::string(EDGEPROBE_SOURCE_DIR) + "/tests/lab/lava/lava-lab.sh";

class LavaDispatcher : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "LAVA's ssh device unpacks its overlay into / of the device: needs root";
    ASSERT_TRUE(fs::exists("/usr/bin/lava-run")) << "lava-dispatcher is missing: scripts/setup.sh installs it";
    const std::string dist = write_stand_in_bundle(dir_.file("dist"));
    write_file(dir_.file("lab.yml"), "all:\n  hosts:\n    dut-01: {transport: ssh, host: 127.0.0.1, arch: x86_64, "
                                     "workdir: " + dir_.file("device") + "}\n");
    const json plan = {{"kind", "bench"},
                       {"sweep", {{"models", {tiny_model()}}, {"n_prompt", {16}}, {"n_gen", {4}}, {"threads", {1}}}},
                       {"repetitions", 2},
                       {"ceilings", "off"},
                       {"env", {{"sample_hz", 0}}}};
    write_file(dir_.file("plan.json"), plan.dump());
    const auto r = run_edgeprobe({"lab", "submit", "-i", dir_.file("lab.yml"), "--dist", dist, "--artifacts-dir",
                                  dir_.file("artifacts"), "--artifacts-url", "file://" + dir_.file("artifacts"),
                                  "--render", dir_.file("jobs"), "--no-submit", "--db", dir_.file("lab.db"), "-o",
                                  "json", "-q", dir_.file("plan.json")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json out = json::parse(r.out);
    lab_run_ = std::to_string(out["lab_run"].get<int64_t>());
    job_ = out["jobs"][0]["definition"];
  }

  // lava-run on the job against a fresh sshd; the job id is this process's, so that the
  // overlay it unpacks (/lava-ID) is this test's alone (lava-lab.sh removes it).
  ProcessResult dispatch(const std::string& log) {
    return run_process({"/bin/bash", kLavaLab, "dispatch", dir_.file("lava"), job_, log}, 600,
                       {{"EP_LAVA_JOB_ID", std::to_string(800000 + getpid() % 100000)}});
  }

  json import(const std::string& log) {
    const auto r = run_edgeprobe({"lab", "import", lab_run_, "--device", "dut-01", "--lava-log", log, "--db",
                                  dir_.file("lab.db"), "-o", "json", "-q"});
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.err;
    return json::parse(r.out, nullptr, false);
  }

  TempDir dir_;
  std::string lab_run_, job_;
};

}  // namespace

TEST_F(LavaDispatcher, ARenderedJobRunsUnderLavaAndItsLogImportsEveryUnit) {
  const std::string log = dir_.file("job.log");
  const auto run = dispatch(log);
  const std::string text = read_file(log);
  ASSERT_EQ(run.exit_code, 0) << run.err << text.substr(text.size() > 4000 ? text.size() - 4000 : 0);
  // LAVA's own records: the bundle and model fetched and checked, and the headline figures with units.
  for (const char* c : {"TEST_CASE_ID=ep-fetch-bundle RESULT=pass", "TEST_CASE_ID=ep-fetch-model-1 RESULT=pass",
                        "TEST_CASE_ID=pp16-t1-prefill RESULT=pass UNITS=tok/s",
                        "TEST_CASE_ID=tg4-t1-decode RESULT=pass UNITS=tok/s"})
    EXPECT_NE(text.find(c), std::string::npos) << c;
  const json first = import(log);
  ASSERT_TRUE(first.is_object());
  EXPECT_EQ(first["jobs"][0]["status"], "ok") << first.dump();
  EXPECT_EQ(first["jobs"][0]["units"], 4);
  EXPECT_EQ(first["exit_code"], 0);
  const auto runs = run_edgeprobe({"runs", "--db", dir_.file("lab.db"), "-o", "json"});
  const json list = json::parse(runs.out);
  ASSERT_EQ(list.size(), 2u) << runs.out;  // the lab run and the device's bench run
  for (const auto& r : list) EXPECT_EQ(r["status"], "complete") << r.dump();
  // The device's run carries the lab's words: which lab run, device and LAVA job.
  const json device_run = json::parse(run_edgeprobe({"export", std::to_string(first["jobs"][0]["run_id"].get<int64_t>()),
                                                     "-o", "json", "--db", dir_.file("lab.db")})
                                          .out);
  EXPECT_EQ(device_run["provenance"]["extra"]["lab"]["device"], "dut-01") << device_run["provenance"].dump();
  EXPECT_EQ(device_run["provenance"]["extra"]["lab"]["transport"], "lava");
  EXPECT_EQ(import(log)["jobs"][0]["units"], 0) << "imported again: nothing twice";
}

TEST_F(LavaDispatcher, AModelThatDoesNotMatchItsHashStopsTheJobAndTheDeviceIsAnError) {
  // The staged model changed after the job was rendered: the job's check refuses it.
  for (const auto& f : fs::directory_iterator(dir_.file("artifacts")))
    if (f.path().extension() == ".gguf") write_file(f.path().string(), "not the model the job was rendered with");
  const std::string log = dir_.file("job.log");
  const auto run = dispatch(log);
  EXPECT_NE(run.exit_code, 0);
  const std::string text = read_file(log);
  EXPECT_NE(text.find("TEST_CASE_ID=ep-fetch-model-1 RESULT=fail"), std::string::npos);
  const json out = import(log);
  ASSERT_TRUE(out.is_object());
  EXPECT_EQ(out["jobs"][0]["status"], "error") << out.dump();
  EXPECT_NE(out["jobs"][0]["error"].get<std::string>().find("ep-fetch-model-1"), std::string::npos) << out.dump();
  EXPECT_EQ(out["exit_code"], 3);
}

TEST_F(LavaDispatcher, TheShippedHealthCheckPassesOnAGoodDeviceAndRaisesOnABadBundle) {
  const std::string shipped = read_file(std::string(EDGEPROBE_SOURCE_DIR) + "/contrib/lava/health-check-ssh.yaml");
  const std::string tarball = dir_.file("dist") + "/" + kBundle + ".tar.gz";
  auto filled = [&](const std::string& sha) {
    std::string job = shipped;
    auto set = [&](const std::string& from, const std::string& to) {
      const auto at = job.find(from);
      ASSERT_NE(at, std::string::npos) << from;
      job.replace(at, from.size(), to);
    };
    set("http://artifacts.example/edgeprobe-0.1.0-linux-aarch64-linux-gnu.tar.gz", "file://" + tarball);
    set(std::string(64, '0'), sha);
    set("\"edgeprobe-0.1.0-linux-aarch64-linux-gnu\"", "\"" + kBundle + "\"");
    set("\"edgeprobe-health\"", "\"" + dir_.file("health") + "\"");
    job_ = dir_.file("health.yaml");
    write_file(job_, job);
  };
  const auto sha = run_process({"/usr/bin/sha256sum", tarball}, 60).out.substr(0, 64);
  filled(sha);
  const auto good = dispatch(dir_.file("good.log"));
  const std::string good_log = read_file(dir_.file("good.log"));
  EXPECT_EQ(good.exit_code, 0) << good_log.substr(good_log.size() > 4000 ? good_log.size() - 4000 : 0);
  EXPECT_NE(good_log.find("TEST_CASE_ID=ep-health-inference RESULT=pass"), std::string::npos);
  filled(std::string(64, 'f'));  // a bundle that is not the one the check names
  const auto bad = dispatch(dir_.file("bad.log"));
  const std::string bad_log = read_file(dir_.file("bad.log"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad_log.find("TEST_CASE_ID=ep-health-sha256 RESULT=fail"), std::string::npos);
  EXPECT_NE(bad_log.find("\"error_msg\": \"ep-health-sha256\""), std::string::npos) << "lava-test-raise names the step";
}

TEST_F(LavaDispatcher, ASessionPlanWithItsOwnConversationsRunsAndItsTurnsImport) {
  write_file(dir_.file("prompts.jsonl"),
             "{\"id\": \"a\", \"lang\": \"en\", \"turns\": [\"Hello there.\", \"And \\\"again\\\".\"]}\n");
  const json plan = {{"kind", "session"},          {"models", {tiny_model()}}, {"max_tokens", {8}},
                     {"threads", {1}},             {"rounds", 1},              {"conversations", 1},
                     {"prompts", dir_.file("prompts.jsonl")}, {"env", {{"sample_hz", 0}}}};
  write_file(dir_.file("session.json"), plan.dump());
  const auto r = run_edgeprobe({"lab", "submit", "-i", dir_.file("lab.yml"), "--dist", dir_.file("dist"),
                                "--artifacts-dir", dir_.file("artifacts"), "--artifacts-url",
                                "file://" + dir_.file("artifacts"), "--render", dir_.file("jobs-s"), "--no-submit",
                                "--db", dir_.file("lab.db"), "-o", "json", "-q", dir_.file("session.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out);
  lab_run_ = std::to_string(out["lab_run"].get<int64_t>());
  job_ = out["jobs"][0]["definition"];
  const std::string log = dir_.file("session.log");
  const auto run = dispatch(log);
  const std::string text = read_file(log);
  ASSERT_EQ(run.exit_code, 0) << text.substr(text.size() > 4000 ? text.size() - 4000 : 0);
  // The conversations file travels as the models do: fetched and checked.
  EXPECT_NE(text.find("TEST_CASE_ID=ep-fetch-model-2 RESULT=pass"), std::string::npos);
  EXPECT_NE(text.find("TEST_CASE_ID=session-turns RESULT=pass UNITS=turns MEASUREMENT=2"), std::string::npos);
  const json imported = import(log);
  ASSERT_TRUE(imported.is_object());
  EXPECT_EQ(imported["jobs"][0]["status"], "ok") << imported.dump();
  EXPECT_EQ(imported["jobs"][0]["units"], 2) << "two turns";
}
