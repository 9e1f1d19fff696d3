// `edgeprobe lab run` over real SSH: three sshd "devices" in network namespaces
// (tests/lab/support/ssh_hosts.h), host keys checked, one of them aarch64 under qemu-user
// when binfmt_misc allows. One sshd is killed mid-run: that device fails alone, the others
// complete, and `--resume` finishes it once sshd is back, with exactly the expected units.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "edgeprobe_version.h"
#include "lab/support/ssh_hosts.h"
#include "store/store.h"
#include "support/run_process.h"

using namespace edgeprobe;
using namespace edgeprobe::test_support;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string bundle(const std::string& target) {
  return std::string(EDGEPROBE_DIST_DIR) + "/edgeprobe-" + kVersion + "-linux-" + target + ".tar.gz";
}

// The x86_64 bundle of the edgeprobe under test: the sshd users cannot read root's
// llama.cpp cache, so the devices run a self-contained bundle like a real board does.
std::string ensure_x86_bundle(const std::string& dist) {
  const auto r = run_process(
      {std::string(EDGEPROBE_SOURCE_DIR) + "/scripts/package.sh", "--build-dir", EDGEPROBE_BUILD_DIR}, 900);
  if (r.exit_code != 0) return "scripts/package.sh --build-dir failed: " + r.err;
  return fs::exists(dist + "/edgeprobe-" + kVersion + "-linux-x86_64-linux-gnu.tar.gz")
             ? ""
             : "no x86_64 bundle in " + dist;
}

// Repetitions per device run name in the store, by the controller's device name.
std::map<std::string, std::pair<store::RunId, size_t>> device_units(const std::string& db) {
  std::map<std::string, std::pair<store::RunId, size_t>> out;
  auto s = store::open_store(db, store::Mode::kMustExist);
  for (const auto& r : s->list_runs({}))
    if (r.kind != "lab")
      out[s->get_run(r.id).provenance["extra"]["lab"]["device"]] = {r.id, static_cast<size_t>(r.repetitions)};
  return out;
}

}  // namespace

TEST(LabSsh, ThreeDevicesOneKilledMidRunThenResumed) {
  if (auto why = SshHosts::unavailable()) GTEST_SKIP() << *why;
  const std::string dist = EDGEPROBE_DIST_DIR;
  const std::string problem = ensure_x86_bundle(dist);
  ASSERT_EQ(problem, "");
  std::string arm_skip;
  if (auto why = SshHosts::aarch64_unavailable())
    arm_skip = *why;
  else if (!fs::exists(bundle("aarch64-linux-gnu")))
    arm_skip = "no arm64 bundle (scripts/setup-arm.sh builds it)";
  if (!arm_skip.empty()) std::cerr << "the aarch64 device runs as x86_64: " << arm_skip << "\n";
  SshHosts hosts({{"dev-a"}, {"dev-b"}, {"dev-arm", arm_skip.empty()}});

  TempDir dir;
  std::string inv = "all:\n  hosts:\n";
  for (const auto& n : hosts.names())
    inv += "    " + n + ": {transport: ssh, workdir: " + hosts.host(n).workdir + "}\n";
  write_file(dir.file("lab.yml"), inv);
  // Four tests of three repetitions; a second's delay before each test keeps dev-b's job
  // running long enough to lose it in the middle.
  const json plan = {
      {"kind", "bench"},
      {"sweep", {{"models", {tiny_model()}}, {"n_prompt", {16, 32}}, {"n_gen", {4, 8}}, {"threads", {1}}}},
      {"repetitions", 3},
      {"delay_s", 1},
      {"ceilings", "off"},
      {"env", {{"sample_hz", 0}}}};
  write_file(dir.file("plan.json"), plan.dump());
  const size_t expected = 4 * 3;
  const std::string db = dir.file("lab.db");
  auto lab = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = hosts.client_prefix();
    argv.insert(argv.end(), {EDGEPROBE_BINARY, "lab"});
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, 600,
                       {{"XDG_CACHE_HOME", std::string(EDGEPROBE_BUILD_DIR) + "/test-home/cache"}});
  };

  auto first = std::async(std::launch::async, [&] {
    return lab(
        {"run", "-i", dir.file("lab.yml"), dir.file("plan.json"), "--db", db, "--dist", dist, "-o", "json"});
  });
  // Kill dev-b's sshd once its first repetition is committed (bounded: 5 minutes).
  bool killed = false;
  for (int i = 0; i < 3000 && !killed; ++i) {
    if (first.wait_for(std::chrono::milliseconds(100)) == std::future_status::ready) break;
    if (!fs::exists(db)) continue;
    try {
      const auto units = device_units(db);
      if (units.contains("dev-b") && units.at("dev-b").second >= 1) {
        hosts.kill_sshd("dev-b");
        killed = true;
      }
    } catch (const std::exception&) {  // the store is being created: try again
    }
  }
  const auto r = first.get();
  ASSERT_TRUE(killed) << "dev-b finished before it could be killed: " << r.err;
  ASSERT_EQ(r.exit_code, 3) << r.err;
  const json out = json::parse(r.out);
  for (const auto& d : out["devices"]) {
    if (d["device"] == "dev-b") {
      EXPECT_FALSE(d["ok"].get<bool>());
      EXPECT_NE(d["error"].get<std::string>().find("ssh dev-b"), std::string::npos) << d.dump();
    } else {
      EXPECT_TRUE(d["ok"].get<bool>()) << d.dump();
    }
  }
  auto units = device_units(db);
  EXPECT_EQ(units.at("dev-a").second, expected);
  EXPECT_EQ(units.at("dev-arm").second, expected);
  const size_t before = units.at("dev-b").second;
  EXPECT_GE(before, 1u);
  EXPECT_LT(before, expected);

  hosts.restart_sshd("dev-b");
  const auto again = lab({"run", "--resume", std::to_string(out["lab_run"].get<int>()), "--db", db, "--dist",
                          dist, "-o", "json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const json out2 = json::parse(again.out);
  ASSERT_EQ(out2["devices"].size(), 1u);
  EXPECT_EQ(out2["devices"][0]["jobs"][0]["committed"], expected - before);
  units = device_units(db);
  EXPECT_EQ(units.size(), 3u);
  for (const auto& [name, u] : units) EXPECT_EQ(u.second, expected) << name;
  auto s = store::open_store(db, store::Mode::kMustExist);
  EXPECT_EQ(s->get_run(out["lab_run"]).status, "complete");
  if (arm_skip.empty()) {  // the aarch64 device's identity arrived with its units
    const auto run = s->get_run(units.at("dev-arm").first);
    EXPECT_EQ(run.provenance["device"]["arch"], "aarch64") << run.provenance["device"].dump();
  }
}
