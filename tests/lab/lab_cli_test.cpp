// `edgeprobe lab` end to end on this machine: the local transport against `bench`
// directly, and the adb transport against fake-adb (a stand-in client whose "device" is
// a directory): deploy, run, a device lost mid-run, --resume, and bad inventories.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "edgeprobe_version.h"
#include "store/store.h"
#include "support/run_process.h"

using namespace edgeprobe;
using namespace edgeprobe::test_support;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kBundle = x86_64_bundle_name();

class LabCli : public ::testing::Test {
 protected:
  void SetUp() override {
    device_root_ = dir_.file("phone");
    fs::create_directories(device_root_);
  }

  ProcessResult lab(std::vector<std::string> args, int timeout_s = 300) {
    args.insert(args.begin(), {EDGEPROBE_BINARY, "lab"});
    std::vector<std::pair<std::string, std::string>> env = {
        {"EDGEPROBE_ADB", EDGEPROBE_FAKE_ADB},
        {"FAKE_ADB_ROOT", device_root_},
        {"FAKE_ADB_LOG", dir_.file("adb.log")},
        {"XDG_CACHE_HOME", std::string(EDGEPROBE_BUILD_DIR) + "/test-home/cache"},
        {"XDG_DATA_HOME", dir_.file("data")}};
    env.insert(env.end(), extra_env_.begin(), extra_env_.end());
    return run_process(args, timeout_s, env);
  }

  std::string fake_dist() { return write_stand_in_bundle(dir_.file("dist")); }

  std::string inventory(const std::string& hosts) {
    write_file(dir_.file("lab.yml"), "all:\n  hosts:\n" + hosts);
    return dir_.file("lab.yml");
  }

  std::string phone_dir() const { return device_root_ + "/data/local/tmp/edgeprobe"; }

  // The bench flags of every run here: two tests (pp16, tg4), tiny, no probing.
  std::vector<std::string> bench_flags(int reps) const {
    return {"-m", tiny_model(),         "-p",         "16",  "-n",          "4", "-t", "1",
            "-r", std::to_string(reps), "--ceilings", "off", "--sample-hz", "0"};
  }

  std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) const {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }

  TempDir dir_;
  std::string device_root_;
  std::vector<std::pair<std::string, std::string>> extra_env_;
};

size_t repetitions(const json& run) {
  size_t n = 0;
  for (const auto& c : run["configurations"]) n += c["repetitions"].size();
  return n;
}

std::vector<std::string> test_names(const json& run) {
  std::vector<std::string> out;
  for (const auto& c : run["configurations"]) out.push_back(c["config"]["test"]);
  return out;
}

// The device runs of a lab store, by the device name the controller gave them.
std::map<std::string, store::RunId> device_runs(const store::Store& s) {
  std::map<std::string, store::RunId> out;
  for (const auto& r : s.list_runs({}))
    if (r.kind != "lab") out[s.get_run(r.id).provenance["extra"]["lab"]["device"]] = r.id;
  return out;
}

}  // namespace

TEST_F(LabCli, LocalTransportStoresTheSameUnitsAsBench) {
  const auto bench =
      run_process(with({EDGEPROBE_BINARY, "bench", "-q", "--db", dir_.file("bench.db")}, bench_flags(2)), 300,
                  {{"XDG_CACHE_HOME", std::string(EDGEPROBE_BUILD_DIR) + "/test-home/cache"}});
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const auto r =
      lab(with({"run", "-i", inventory("    pc: {transport: local, workdir: " + dir_.file("pc") + "}\n"),
                "--db", dir_.file("lab.db"), "-o", "json"},
               bench_flags(2)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out);
  EXPECT_EQ(out["devices"][0]["ok"], true);
  EXPECT_EQ(out["devices"][0]["jobs"][0]["committed"], 4);
  EXPECT_NE(r.err.find("[pc] job 1/1 done: 4 units committed"), std::string::npos) << r.err;

  auto direct = store::open_store(dir_.file("bench.db"), store::Mode::kMustExist);
  auto labdb = store::open_store(dir_.file("lab.db"), store::Mode::kMustExist);
  const json want = direct->load_run(direct->list_runs({})[0].id);
  const store::RunId run = device_runs(*labdb).at("pc");
  const json got = labdb->load_run(run);
  EXPECT_EQ(test_names(got), test_names(want));
  EXPECT_EQ(repetitions(got), repetitions(want));
  EXPECT_EQ(labdb->get_run(run).status, "complete");
  EXPECT_EQ(labdb->get_run(run).device_id, direct->get_run(1).device_id);  // the device's own identity
  // The device's state around the job is part of its run.
  bool lab_state = false;
  for (const auto& t : got["telemetry"])
    if (t["phase"] == "lab") {
      lab_state = true;
      EXPECT_TRUE(t["summary"]["before"]["reachable"].get<bool>());
      EXPECT_TRUE(t["summary"].contains("throttled"));
      EXPECT_TRUE(t["summary"]["after"].contains("cpufreq"));
    }
  EXPECT_TRUE(lab_state);
  const auto lab_run = labdb->get_run(out["lab_run"]);
  EXPECT_EQ(lab_run.kind, "lab");
  EXPECT_EQ(lab_run.status, "complete");
}

// A bench plan with load levels (in-process completion requests) run through the lab
// stores its serving table, as the same plan run by bench does: the lab once wrote
// test-level data with its own field list, which left the table out.
TEST_F(LabCli, APlanWithLoadLevelsKeepsItsServingTableInTheLabStore) {
  const json plan = {
      {"kind", "bench"},
      {"sweep", {{"models", {tiny_model()}}, {"n_prompt", {8}}, {"n_gen", {4}}, {"threads", {1}}}},
      {"repetitions", 1},
      {"ceilings", "off"},
      {"env", {{"sample_hz", 0}, {"api", "completions"}}},
      {"load", {{"concurrency", {1, 2}}, {"num_requests", 4}}}};
  write_file(dir_.file("load.json"), plan.dump());
  const auto direct = run_process({EDGEPROBE_BINARY, "run", "--plan", dir_.file("load.json"), "--db",
                                   dir_.file("bench.db")},
                                  300, {{"XDG_CACHE_HOME", std::string(EDGEPROBE_BUILD_DIR) + "/test-home/cache"}});
  ASSERT_EQ(direct.exit_code, 0) << direct.err;
  const auto r = lab({"run", "-i", inventory("    pc: {transport: local, workdir: " + dir_.file("pc") + "}\n"),
                      dir_.file("load.json"), "--db", dir_.file("lab.db"), "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto labdb = store::open_store(dir_.file("lab.db"), store::Mode::kMustExist);
  const store::RunId run = device_runs(*labdb).at("pc");
  auto exported = [&](const std::string& db, store::RunId id) {
    const auto e = run_process({EDGEPROBE_BINARY, "export", std::to_string(id), "-o", "json", "--db", db}, 60);
    EXPECT_EQ(e.exit_code, 0) << e.err;
    return json::parse(e.out)["results"][0];
  };
  const json got = exported(dir_.file("lab.db"), run), want = exported(dir_.file("bench.db"), 1);
  ASSERT_TRUE(want["serving"].is_array()) << want.dump().substr(0, 400);
  ASSERT_TRUE(got.contains("serving")) << "the lab store lost the serving table";
  ASSERT_EQ(got["serving"].size(), 2u) << got["serving"].dump();
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(got["serving"][i]["concurrency"], want["serving"][i]["concurrency"]);
    EXPECT_EQ(got["serving"][i]["completed"], 4);
  }
  // The markdown export has the Serving table too.
  const auto md = run_process({EDGEPROBE_BINARY, "export", std::to_string(run), "-o", "md", "--db", dir_.file("lab.db")}, 60);
  EXPECT_NE(md.out.find("Serving"), std::string::npos) << md.out;
}

TEST_F(LabCli, AdbStandInDeploysVerifiesAndSkipsWhatIsThere) {
  const std::string dist = fake_dist();
  const std::string inv = inventory("    phone: {transport: adb, serial: emulator-5554}\n");
  auto r = lab({"deploy", "-i", inv, "--dist", dist, "-m", tiny_model()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("bundle /data/local/tmp/edgeprobe/" + kBundle + " (copied, SHA-256 verified)"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(fs::exists(phone_dir() + "/" + kBundle + "/.complete"));
  EXPECT_FALSE(fs::exists(phone_dir() + "/" + kBundle + ".tar.gz"));  // unpacked, then removed
  size_t models = 0, parts = 0;
  for (const auto& e : fs::recursive_directory_iterator(phone_dir())) {
    models += e.path().extension() == ".gguf";
    parts += e.path().extension() == ".part";
  }
  EXPECT_EQ(models, 1u);
  EXPECT_EQ(parts, 0u);
  const std::string log = read_file(dir_.file("adb.log"));
  EXPECT_NE(log.find("-s emulator-5554 push " + dist + "/" + kBundle + ".tar.gz /data/local/tmp/edgeprobe/" +
                     kBundle + ".tar.gz.part"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("-s emulator-5554 shell sha256sum"), std::string::npos) << log;

  r = lab({"deploy", "-i", inv, "--dist", dist, "-m", tiny_model()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("copied"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(already there)"), std::string::npos) << r.out;

  r = lab({"check", "-i", inv, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json check = json::parse(r.out);
  EXPECT_EQ(check[0]["state"]["reachable"], true);
  EXPECT_EQ(check[0]["bundle"]["present"], true);
  EXPECT_EQ(check[0]["state"]["target"], "x86_64-linux-gnu");

  r = lab(with({"run", "-i", inv, "--dist", dist, "--db", dir_.file("lab.db"), "-q"}, bench_flags(2)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto s = store::open_store(dir_.file("lab.db"), store::Mode::kMustExist);
  const json run = s->load_run(device_runs(*s).at("phone"));
  EXPECT_EQ(repetitions(run), 4u);
  EXPECT_TRUE(run["run"]["plan"]["cases"][0]["model_path"].get<std::string>().starts_with(
      "/data/local/tmp/edgeprobe/models/"));
}

TEST_F(LabCli, ADeviceLostMidRunFailsAloneAndResumeFinishesIt) {
  const std::string dist = fake_dist();
  const std::string inv = inventory("    pc: {transport: local, workdir: " + dir_.file("pc") +
                                    "}\n    phone: {transport: adb, serial: 10.0.0.7:5555}\n");
  extra_env_ = {{"FAKE_ADB_DROP_AFTER", "14"}};  // after the second repetition (docs/wire-format.md order)
  auto r = lab(
      with({"run", "-i", inv, "--dist", dist, "--db", dir_.file("lab.db"), "-o", "json"}, bench_flags(3)));
  ASSERT_EQ(r.exit_code, 3) << r.err;
  json out = json::parse(r.out);
  EXPECT_EQ(out["devices"][0]["ok"], true);
  EXPECT_EQ(out["devices"][1]["ok"], false);
  EXPECT_NE(out["devices"][1]["error"].get<std::string>().find("offline"), std::string::npos) << out.dump();
  EXPECT_NE(r.err.find("edgeprobe lab run --resume " + std::to_string(out["lab_run"].get<int>())),
            std::string::npos);
  size_t before = 0;
  {
    auto s = store::open_store(dir_.file("lab.db"), store::Mode::kMustExist);
    const auto runs = device_runs(*s);
    EXPECT_EQ(repetitions(s->load_run(runs.at("pc"))), 6u);
    EXPECT_EQ(s->get_run(runs.at("phone")).status, "failed");
    before = repetitions(s->load_run(runs.at("phone")));
    EXPECT_GE(before, 1u);  // the drop came mid-run: some units were committed, not all
    EXPECT_LT(before, 6u);
    EXPECT_EQ(s->get_run(out["lab_run"]).status, "failed");
  }

  fs::remove(device_root_ + "/offline");  // the phone is back
  r = lab({"run", "--resume", std::to_string(out["lab_run"].get<int>()), "--db", dir_.file("lab.db"),
           "--dist", dist, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  out = json::parse(r.out);
  ASSERT_EQ(out["devices"].size(), 1u);  // only the phone had anything left
  EXPECT_EQ(out["devices"][0]["jobs"][0]["committed"], 6 - before);
  auto s = store::open_store(dir_.file("lab.db"), store::Mode::kMustExist);
  const auto runs = device_runs(*s);
  EXPECT_EQ(runs.size(), 2u);  // resumed in place, not a new run
  EXPECT_EQ(repetitions(s->load_run(runs.at("phone"))), 6u);
  EXPECT_EQ(repetitions(s->load_run(runs.at("pc"))), 6u);
  EXPECT_EQ(s->get_run(runs.at("phone")).status, "complete");
  EXPECT_EQ(s->get_run(out["lab_run"]).status, "complete");
  // Each test's own record (load times, telemetry), though the drop split test 0, and no
  // test data among the run's summaries.
  const json phone = s->load_run(runs.at("phone"));
  ASSERT_EQ(phone["configurations"].size(), 2u);
  for (const auto& c : phone["configurations"]) EXPECT_TRUE(c["test"].is_object()) << c["ordinal"];
  for (const auto& t : phone["telemetry"])
    EXPECT_FALSE(t["phase"].get<std::string>().starts_with("test")) << t;
}

TEST_F(LabCli, BadInventoryExitsTwoNamingFileAndLine) {
  const std::string inv = inventory("    a: {transport: telnet}\n");
  auto r = lab({"check", "-i", inv});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "edgeprobe: error: " + inv + ":3: host 'a': transport 'telnet': use local, ssh or adb\n");
  r = lab({"check", "-i", dir_.file("missing.yml")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("missing.yml: cannot read the inventory"), std::string::npos) << r.err;
  r = lab({"run", "-i", inventory("    pc: {transport: local}\n"), "--devices", "nope", "-m", tiny_model()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("no device 'nope'"), std::string::npos) << r.err;
}

TEST_F(LabCli, CheckSaysWhyADeviceIsUnreachable) {
  write_file(device_root_ + "/offline", "");
  const auto r = lab({"check", "-i", inventory("    phone: {transport: adb, serial: R58M123}\n")});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.out.find("| phone | adb R58M123 | no: adb R58M123: adb: error: device 'R58M123' offline |"),
            std::string::npos)
      << r.out;
}

TEST_F(LabCli, DeviceRunsAreListedComparedAndUsableAsADoctorBaseline) {
  const std::string inv = inventory("    a: {transport: local, workdir: " + dir_.file("a") +
                                    "}\n    b: {transport: local, workdir: " + dir_.file("b") + "}\n");
  const std::string db = dir_.file("lab.db");
  auto r = lab(with({"run", "-i", inv, "--db", db, "-q"}, bench_flags(3)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Device b again, on a different model file (same shape, q8_0).
  auto flags = bench_flags(3);
  flags[1] = tiny_model("q8_0");
  r = lab(with({"run", "-i", inv, "--devices", "b", "--db", db, "-q"}, flags));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto s = store::open_store(db, store::Mode::kMustExist);
  std::vector<store::RunId> runs;
  for (const auto& run : s->list_runs({}))
    if (run.kind == "bench") runs.push_back(run.id);
  ASSERT_EQ(runs.size(), 3u);
  const std::string device = s->get_run(runs[0]).device_id;
  ASSERT_FALSE(device.empty());

  const auto listed =
      run_process({EDGEPROBE_BINARY, "runs", "--db", db, "--device", device, "--kind", "bench"}, 60);
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  for (auto id : runs)
    EXPECT_NE(listed.out.find(" " + std::to_string(id) + "  "), std::string::npos) << listed.out;

  const auto same = run_process({EDGEPROBE_BINARY, "compare", std::to_string(runs[0]),
                                 std::to_string(runs[1]), "--db", db, "-o", "json"},
                                60);
  ASSERT_EQ(same.exit_code, 0) << same.err;
  EXPECT_TRUE(json::parse(same.out)["comparable"].get<bool>());
  const auto other = run_process(
      {EDGEPROBE_BINARY, "compare", std::to_string(runs[0]), std::to_string(runs[2]), "--db", db}, 60);
  // The same model in another quantization: a frontier comparison, not refused.
  EXPECT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(other.out.find("frontier comparison: the same model in q4_0 (A) and q8_0 (B)"), std::string::npos)
      << other.out;

  // doctor reads another device's stored run as its baseline: here the q8_0 one, so the
  // model it diagnoses is not the baseline's and says so.
  const auto doctor = run_process(
      {EDGEPROBE_BINARY, "doctor", "-m", tiny_model(), "--baseline", std::to_string(runs[2]), "--db", db,
       "--no-experiments", "-p", "16", "-n", "4", "-r", "1", "--no-store", "-o", "json"},
      300, {{"XDG_CACHE_HOME", std::string(EDGEPROBE_BUILD_DIR) + "/test-home/cache"}});
  ASSERT_EQ(doctor.exit_code, 0) << doctor.err;
  std::vector<std::string> ids;
  const json diagnosis = json::parse(doctor.out);
  for (const auto& f : diagnosis["doctor"]["findings"]) ids.push_back(f["id"]);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "identity.baseline_mismatch"), ids.end()) << json(ids).dump();
  const auto missing =
      run_process({EDGEPROBE_BINARY, "doctor", "-m", tiny_model(), "--baseline", "999", "--db", db}, 60);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no run 999"), std::string::npos) << missing.err;
}

TEST_F(LabCli, ExplainTakesALabRunDeviceByDeviceAgainstABaseline) {
  const std::string inv = inventory("    a: {transport: local, workdir: " + dir_.file("a") +
                                    "}\n    b: {transport: local, workdir: " + dir_.file("b") + "}\n");
  const std::string db = dir_.file("lab.db");
  const auto r = lab(with({"run", "-i", inv, "--db", db, "-q"}, bench_flags(3)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  store::RunId lab_run = 0, bench_run = 0;
  {
    auto s = store::open_store(db, store::Mode::kMustExist);
    for (const auto& run : s->list_runs({})) (run.kind == "lab" ? lab_run : bench_run) = run.id;
  }
  ASSERT_GT(lab_run, 0);
  const auto j = run_process({EDGEPROBE_BINARY, "explain", "--lab", std::to_string(lab_run), "--baseline", "a", "--db", db,
                              "-o", "json"}, 60);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json e = json::parse(j.out);
  EXPECT_EQ(e["kind"], "explain-lab");
  ASSERT_EQ(e["rows"].size(), 1u) << e.dump(1);
  const json& row = e["rows"][0];
  EXPECT_EQ(row["device"], "b");
  ASSERT_TRUE(row.contains("explanation")) << row.dump(1);
  for (const auto& p : row["explanation"]["phases"]) {
    // Both local devices are this machine: the hardware is the same.
    EXPECT_EQ(p["factors"][0]["basis"], "same device") << p.dump(1);
    double product = 1;
    for (const auto& f : p["factors"]) product *= f["factor"].get<double>();
    EXPECT_NEAR(product / p["ratio"].get<double>(), 1, 1e-9);
  }
  // jsonl: one object per device and phase, its figures as numbers.
  const auto jl = run_process({EDGEPROBE_BINARY, "explain", "--lab", std::to_string(lab_run), "--baseline", "a", "--db", db,
                               "-o", "jsonl"}, 60);
  ASSERT_EQ(jl.exit_code, 0) << jl.err;
  size_t lines = 0;
  for (size_t at = 0, end; (end = jl.out.find('\n', at)) != std::string::npos; at = end + 1, ++lines) {
    const json line = json::parse(jl.out.substr(at, end - at));
    EXPECT_EQ(line["device"], "b") << line.dump();
    EXPECT_TRUE(line["ratio"].is_number() && line["hardware"].is_number() && line["unexplained"].is_number()) << line.dump();
  }
  EXPECT_EQ(lines, row["explanation"]["phases"].size()) << jl.out;
  const auto md = run_process({EDGEPROBE_BINARY, "explain", "--lab", std::to_string(lab_run), "--baseline", "a", "--db", db}, 60);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| b | 0 | decode |"), std::string::npos) << md.out;
  const auto unknown = run_process({EDGEPROBE_BINARY, "explain", "--lab", std::to_string(lab_run), "--baseline", "zz", "--db", db}, 60);
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("its devices: a, b"), std::string::npos) << unknown.err;
  const auto not_lab = run_process({EDGEPROBE_BINARY, "explain", "--lab", std::to_string(bench_run), "--baseline", "a", "--db", db}, 60);
  EXPECT_EQ(not_lab.exit_code, 2);
  EXPECT_NE(not_lab.err.find("not a lab run"), std::string::npos) << not_lab.err;
}

TEST_F(LabCli, PlansRunInOrderOnEachDeviceWithACooldownBeforeEach) {
  write_file(dir_.file("prompts.jsonl"),
             "{\"id\": \"a\", \"lang\": \"en\", \"turns\": [\"Hello there.\", \"And again.\"]}\n");
  const json session = {{"kind", "session"},
                        {"models", {tiny_model()}},
                        {"max_tokens", {8}},
                        {"threads", {1}},
                        {"rounds", 1},
                        {"conversations", 1},
                        {"prompts", dir_.file("prompts.jsonl")},
                        {"env", {{"sample_hz", 0}}}};
  const json bench = {
      {"kind", "bench"},
      {"sweep", {{"models", {tiny_model()}}, {"n_prompt", {16}}, {"n_gen", {0}}, {"threads", {1}}}},
      {"repetitions", 2},
      {"ceilings", "off"},
      {"env", {{"sample_hz", 0}}}};
  write_file(dir_.file("session.json"), session.dump());
  write_file(dir_.file("bench.json"), bench.dump());
  const auto r =
      lab({"run", "-i", inventory("    pc: {transport: local, workdir: " + dir_.file("pc") + "}\n"),
           dir_.file("session.json"), dir_.file("bench.json"), "--db", dir_.file("lab.db"), "--cooldown", "1",
           "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out);
  ASSERT_EQ(out["devices"][0]["jobs"].size(), 2u);
  EXPECT_EQ(out["devices"][0]["jobs"][0]["committed"], 2);  // two turns
  EXPECT_EQ(out["devices"][0]["jobs"][1]["committed"], 2);  // two repetitions
  auto s = store::open_store(dir_.file("lab.db"), store::Mode::kMustExist);
  const store::RunId session_run = out["devices"][0]["jobs"][0]["run_id"],
                     bench_run = out["devices"][0]["jobs"][1]["run_id"];
  EXPECT_EQ(s->get_run(session_run).kind, "session");
  EXPECT_EQ(s->get_run(bench_run).kind, "bench");
  EXPECT_LT(session_run, bench_run);  // in the order given
  const json doc = s->load_run(session_run);
  EXPECT_EQ(doc["turns"].size(), 2u);
  bool hygiene = false;
  for (const auto& t : doc["telemetry"])
    if (t["phase"] == "lab") {
      hygiene = true;
      EXPECT_GE(t["summary"]["hygiene"]["waited_s"].get<double>(), 1.0);
    }
  EXPECT_TRUE(hygiene);
}

// A doctor plan runs on every device like a bench: each diagnosis is stored whole as a
// doctor run with the device's identity, and serves as another run's baseline.
TEST_F(LabCli, DoctorPlansRunOnEveryDeviceAndEachDiagnosisIsStored) {
  const std::string dist = fake_dist();
  const json plan = {{"kind", "doctor"}, {"model", tiny_model()}, {"config", {{"threads", 1}}}, {"n_prompt", 16},
                     {"n_gen", 4},       {"repetitions", 1},      {"experiments", false}};
  write_file(dir_.file("doctor.json"), plan.dump());
  const std::string db = dir_.file("lab.db");
  const auto r = lab({"run", "-i",
                      inventory("    pc: {transport: local, workdir: " + dir_.file("pc") +
                                "}\n    phone: {transport: adb, serial: emulator-5554}\n"),
                      dir_.file("doctor.json"), "--dist", dist, "--db", db, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out);
  auto s = store::open_store(db, store::Mode::kMustExist);
  for (const auto& d : out["devices"]) {
    ASSERT_EQ(d["jobs"].size(), 1u) << d.dump();
    EXPECT_EQ(d["jobs"][0]["status"], "complete") << d.dump();
    EXPECT_EQ(d["jobs"][0]["committed"], 1) << d.dump();
    const store::RunId run = d["jobs"][0]["run_id"];
    EXPECT_EQ(s->get_run(run).kind, "doctor");
    EXPECT_EQ(s->get_run(run).provenance["extra"]["lab"]["device"], d["device"]);
    EXPECT_EQ(s->get_run(run).plan["kind"], "doctor");
    EXPECT_FALSE(s->get_run(run).device_id.empty());
  }
  // The phone's diagnosis as this machine's baseline, read from the store: diagnosing the
  // q8_0 file against it names the model mismatch, so the stored diagnosis was read.
  const auto runs = device_runs(*s);
  const auto doctor = run_process({EDGEPROBE_BINARY, "doctor", "-m", tiny_model("q8_0"), "--baseline",
                                   std::to_string(runs.at("phone")), "--db", db, "--no-experiments", "-p", "16",
                                   "-n", "4", "-r", "1", "-t", "1", "--no-store", "-o", "json"},
                                  300, {{"XDG_CACHE_HOME", std::string(EDGEPROBE_BUILD_DIR) + "/test-home/cache"}});
  ASSERT_EQ(doctor.exit_code, 0) << doctor.err;
  EXPECT_NE(doctor.out.find("identity.baseline_mismatch"), std::string::npos) << doctor.out.substr(0, 400);
  // A doctor plan with a key doctor does not know is refused before any device runs it.
  write_file(dir_.file("bad.json"), json({{"kind", "doctor"}, {"n_promt", 16}}).dump());
  const auto bad = lab({"run", "-i", inventory("    pc: {transport: local, workdir: " + dir_.file("pc") + "}\n"),
                        dir_.file("bad.json"), "--db", db});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("doctor plan: unknown key 'n_promt'"), std::string::npos) << bad.err;
}

TEST_F(LabCli, ARelativeModelPathIsTheControllersNotTheDevices) {
  const std::string inv = inventory("    pc: {transport: local, workdir: " + dir_.file("pc") + "}\n");
  const fs::path model = tiny_model();
  const auto r =
      run_process({"/bin/sh", "-c",
                   "cd " + model.parent_path().string() + " && " + EDGEPROBE_BINARY + " lab run -q -i " +
                       inv + " --db " + dir_.file("lab.db") + " -m " + model.filename().string() +
                       " -p 16 -n 0 -t 1 -r 1 --ceilings off --sample-hz 0"},
                  300);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  auto s = store::open_store(dir_.file("lab.db"), store::Mode::kMustExist);
  const json run = s->load_run(device_runs(*s).at("pc"));
  EXPECT_EQ(run["configurations"][0]["config"]["model_path"], model.string());
}

namespace {

TEST_F(LabCli, AnOptionLikeHostIsRefusedAtLoadAndRunsNothing) {
  const std::string marker = dir_.file("pwned");
  for (const std::string& entry : {"    a: {ansible_host: \"-oProxyCommand=touch " + marker + "\"}\n",
                                   "    \"-oProxyCommand=touch " + marker + "\": {}\n"}) {
    const auto r = lab({"check", "-i", inventory(entry)});
    SCOPED_TRACE(r.err);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
    EXPECT_NE(r.err.find("begin"), std::string::npos);
    EXPECT_FALSE(fs::exists(marker));
  }
}

TEST_F(LabCli, ShellMetacharactersInNamesAndLabelsAreNeverRun) {
  // Run from a directory of its own: a name that reached a shell unquoted would touch ./pwned.
  const std::string cwd = dir_.file("cwd");
  fs::create_directories(cwd);
  const std::string inv = inventory("    \"pc;touch pwned\":\n      transport: local\n      workdir: " + dir_.file("pc") +
                                    "\n      labels: {soc: \"$(touch pwned)`touch pwned`\"}\n"
                                    "    \"$(touch pwned)\": {transport: local, workdir: " + dir_.file("w") + "}\n");
  const auto r = run_process({"/bin/sh", "-c",
                              "cd '" + cwd + "' && exec " + EDGEPROBE_BINARY + " lab check -o json -i '" + inv + "'"},
                             120, {{"XDG_CACHE_HOME", dir_.file("cache")}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(cwd + "/pwned"));
  EXPECT_FALSE(fs::exists(dir_.file("pwned")));
  const json rows = json::parse(r.out);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["device"], "pc;touch pwned");
  EXPECT_EQ(rows[0]["labels"]["soc"], "$(touch pwned)`touch pwned`");
  EXPECT_TRUE(rows[1]["state"]["reachable"].get<bool>()) << rows[1].dump();
}

TEST_F(LabCli, HostileInventoriesAreOneLineAndExitTwo) {
  std::string bomb = "x0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 9; ++i) {
    bomb += "x" + std::to_string(i) + ": &x" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) bomb += (k ? ", *x" : "*x") + std::to_string(i - 1);
    bomb += "]\n";
  }
  const std::vector<std::pair<std::string, std::string>> cases = {
      {bomb + "all:\n  hosts:\n    a: {labels: {l: *x9}}\n", "expands to over"},
      {"all: " + std::string(50000, '[') + std::string(50000, ']') + "\n", "nested deeper than 64"},
      {"all:\n  hosts:\n    a: {transport: local}\n    a: {transport: local}\n", "appears twice"},
      {"all:\n  hosts:\n    \"a\\nb\\e[2J\": {transport: local}\n", "control character"},
  };
  for (const auto& [yaml, message] : cases) {
    write_file(dir_.file("bad.yml"), yaml);
    const auto r = lab({"check", "-i", dir_.file("bad.yml")}, 60);
    SCOPED_TRACE(r.err);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
    EXPECT_EQ(r.err.find('\x1b'), std::string::npos);
    EXPECT_NE(r.err.find(message), std::string::npos);
  }
}

}  // namespace

namespace {

TEST_F(LabCli, AJobTimeoutMustBePositive) {
  const std::string inv = inventory("    pc: {transport: local, workdir: " + dir_.file("pc") + "}\n");
  for (const char* bad : {"-5", "0", "nan"}) {
    const auto r = lab(with({"run", "-i", inv, "--db", dir_.file("lab.db"), "--job-timeout", bad}, bench_flags(1)));
    SCOPED_TRACE(r.err);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
    EXPECT_NE(r.err.find("--job-timeout"), std::string::npos);
  }
  EXPECT_FALSE(fs::exists(dir_.file("lab.db"))) << "refused before a store was made";
}

// A mask naming CPUs this machine lacks is refused where the job runs, before anything is
// measured: bench directly, and a lab device running a plan that carries it.
TEST_F(LabCli, ACpuMaskNamingAbsentCpusIsRefusedNotRecordedAsOk) {
  const std::string absent = "0x1" + std::string(127, '0');  // CPU 508
  const auto r = run_edgeprobe({"bench", "-m", tiny_model(), "-p", "16", "-n", "0", "-r", "1", "--ceilings", "off",
                                "--sample-hz", "0", "--no-store", "-q", "-C", absent},
                               120);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("names CPU 508, which this process cannot run on"), std::string::npos) << r.err;
  if (sysconf(_SC_NPROCESSORS_ONLN) < 9) {
    const auto small = run_edgeprobe({"bench", "-m", tiny_model(), "-p", "16", "-n", "0", "-r", "1", "--ceilings",
                                      "off", "--sample-hz", "0", "--no-store", "-q", "-C", "0x100"},
                                     120);
    EXPECT_EQ(small.exit_code, 2) << small.err;
    EXPECT_NE(small.err.find("names CPU 8"), std::string::npos) << small.err;
  }
  write_file(dir_.file("plan.json"),
             json({{"kind", "bench"},
                   {"plan_version", 1},
                   {"sweep",
                    {{"models", {tiny_model()}}, {"n_prompt", {16}}, {"n_gen", {0}}, {"threads", {1}}, {"cpu_masks", {absent}}}},
                   {"repetitions", 1},
                   {"ceilings", "off"},
                   {"env", {{"sample_hz", 0}}}})
                 .dump());
  const std::string inv = inventory("    pc: {transport: local, workdir: " + dir_.file("pc") + "}\n");
  const auto lr = lab({"run", "-i", inv, dir_.file("plan.json"), "--db", dir_.file("lab.db"), "-q", "-o", "json"});
  EXPECT_NE(lr.exit_code, 0) << lr.err;
  const json out = json::parse(lr.out);
  ASSERT_EQ(out["devices"].size(), 1u) << lr.out;
  EXPECT_FALSE(out["devices"][0]["ok"].get<bool>());
  EXPECT_NE((lr.out + lr.err).find("names CPU 508"), std::string::npos) << lr.out << lr.err;
}

}  // namespace
