// `explain` on real runs with faults injected for real: a weaker device (one CPU of two)
// must come out as hardware alone, and a stack of three faults on one run (a forced lower
// CPU variant, two threads confined to one CPU, a cgroup CPU quota) must be attributed
// fault by fault near what each costs when measured alone. The model (~60 MB q4_0) is large
// enough that its matmuls, more than per-token overheads, set its speed: a one-CPU device is
// then about as much slower as its kernels are, and the faults multiply rather than hide
// each other (on a 20 MB model decode barely scales with cores; docs/explain.md says why
// that shows as unexplained), and small enough that doctor settles its pairs on the
// stacked device, twenty times slower, within its budget. These tests run serially, since another test's CPU use would be a
// fault of its own, with a probe cache of their own, since ceilings that parallel tests
// probed while contending with each other would not be ceilings.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "support/run_process.h"

using namespace edgeprobe::test_support;
using nlohmann::json;

namespace {

// The variant forced as the fault: lower than any x86-64 CPU of the last decade runs, and
// present in every all-variants build.
constexpr const char* kLowVariant = "sse42";

// The weaker-device test's model (~210 MB q4_0): its decode is bound by the matvec kernels,
// so one CPU against two costs what the kernel ceilings say (on the 60 MB model decode
// still scales a fifth less than its kernels: the per-step work).
std::string large_model() {
  return synth_model("explain-hardware-q4_0", {"--shape", "tiny", "--n-embd", "2048", "--n-layer", "8", "--n-ff", "5632",
                                               "--n-head", "32", "--n-head-kv", "4", "--n-vocab", "8192", "-q", "q4_0"});
}

std::string mid_model() {
  return synth_model("explain-faults-q4_0", {"--shape", "tiny", "--n-embd", "1024", "--n-layer", "8", "--n-ff", "2816", "--n-head", "16",
                                  "--n-head-kv", "4", "--n-vocab", "8192", "-q", "q4_0"});
}

// One probe cache for this binary's tests, measured while nothing else runs.
std::string test_home() {
  static const TempDir home;
  return home.path();
}

// `edgeprobe ARGS -o json -q` after a shell prefix (cgroups); the parsed result, and the
// file it was saved to for explain.
json edgeprobe_json(const std::vector<std::string>& args, const std::string& prefix, const std::string& save_as) {
  std::string cmd = prefix + std::string(EDGEPROBE_BINARY);
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " -o json -q";
  const auto r = run_process({"/bin/sh", "-c", cmd}, 900,
                             {{"XDG_CACHE_HOME", test_home() + "/cache"}, {"XDG_DATA_HOME", test_home() + "/data"}});
  EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.err;
  if (r.exit_code != 0) return nullptr;
  write_file(save_as, r.out);
  return json::parse(r.out);
}

std::vector<std::string> bench_args(const std::string& threads, int reps, const std::vector<std::string>& extra = {},
                                    const std::string& model = mid_model()) {
  std::vector<std::string> args{"bench", "-m", model, "-p", "128", "-n", "32", "-r", std::to_string(reps),
                                "-t", threads, "--no-store"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// Each device's ceilings as the best of three probes (a first bench, then two refreshes,
// which keep the higher figure), the devices taken in turn: on a host whose speed swings
// one probe can land in a slow stretch, and the hardware factor is the ratio of the two
// devices' ceilings, which one device probed only in a slow stretch would move (12-05: x0.74
// from the ceilings where one CPU alone measured x0.56, the two probed one after the other).
struct ProbedDevice {
  std::string threads, prefix;
  std::vector<std::string> args = {};  // e.g. a --cpu-variant: that variant's ceilings
};
void settle_ceilings(const std::vector<ProbedDevice>& devices, const TempDir& dir, const std::string& model = mid_model()) {
  for (int i = 0; i < 3; ++i)
    for (const auto& d : devices) {
      auto args = d.args;
      args.insert(args.end(), {"--ceilings", i == 0 ? "auto" : "refresh"});
      edgeprobe_json(bench_args(d.threads, 1, args, model), d.prefix, dir.file("settle.json"));
    }
}

// The tokens/s of a bench report's test of `phase` at `threads`, per repetition.
std::vector<double> rates(const json& bench, const std::string& phase, int threads) {
  const std::string key = phase + "_tokens_per_s";
  std::vector<double> v;
  for (const auto& r : bench["results"]) {
    if (r["config"].value("n_threads", 0) != threads) continue;
    if (r["config"].value(phase == "prefill" ? "n_prompt" : "n_gen", 0) <= 0) continue;
    for (const auto& rep : r["repetitions"]) v.push_back(rep.value(key, 0.0));
  }
  if (v.empty()) ADD_FAILURE() << "no " << phase << " test at -t " << threads;
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 1 : v[v.size() / 2];
}

// The best repetition over runs of one configuration made in interleaved rounds: this
// host's noise only slows a run, so the best is the stable figure of each configuration.
double best(const std::vector<json>& runs, const std::string& phase, int threads) {
  double top = 0;
  for (const auto& run : runs)
    for (double x : rates(run, phase, threads)) top = std::max(top, x);
  return top > 0 ? top : 1;
}

json explain(const std::string& a, const std::string& b) {
  const auto r = run_edgeprobe({"explain", a, b, "-o", "json"}, 60);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? json::parse(r.out) : json::object();
}

const json& phase_of(const json& e, const std::string& phase) {
  for (const auto& p : e["phases"])
    if (p["phase"] == phase) return p;
  static const json kNone = json::object();
  ADD_FAILURE() << "no " << phase << " in " << e.dump(1);
  return kNone;
}

std::map<std::string, double> factors_of(const json& p) {
  std::map<std::string, double> out;
  for (const auto& f : p.value("factors", json::array())) out[f["id"]] = f["factor"].get<double>();
  return out;
}

// The product of the factors is the measured ratio: an identity, whatever the noise.
void expect_identity(const json& p) {
  double product = 1;
  for (const auto& f : p["factors"]) product *= f["factor"].get<double>();
  EXPECT_NEAR(product / p["ratio"].get<double>(), 1.0, 1e-9) << p.dump(1);
}

std::string miss_text(const std::string& phase, const std::string& id, double attributed, double isolated) {
  return phase + " " + id + ": attributed x" + std::to_string(attributed) + ", measured alone x" + std::to_string(isolated);
}

}  // namespace

TEST(ExplainFaults, AWeakerDeviceIsItsHardwareAndNoFixIsNamed) {
  const CpusetCgroup one_cpu("0");
  if (!one_cpu.error().empty()) GTEST_SKIP() << one_cpu.error();
  TempDir dir;
  const std::string model = large_model();
  settle_ceilings({{"2", ""}, {"1", one_cpu.enter_prefix()}}, dir, model);
  // A, B, A, B: each device twice, interleaved. Where A's speed moved by more than the
  // tolerance between its two runs the ratio would be the host's, not the devices': not
  // judged. Else each side is its less slowed run (this host's noise only slows).
  std::vector<json> runs;
  for (int round = 0; round < 2; ++round) {
    runs.push_back(edgeprobe_json(bench_args("2", 3, {}, model), "", dir.file("a" + std::to_string(round) + ".json")));
    runs.push_back(
        edgeprobe_json(bench_args("1", 3, {}, model), one_cpu.enter_prefix(), dir.file("b" + std::to_string(round) + ".json")));
  }
  for (const auto& run : runs) ASSERT_FALSE(run.is_null());
  auto speed = [&](size_t i, int threads) {
    return median(rates(runs[i], "prefill", threads)) * median(rates(runs[i], "decode", threads));
  };
  for (const char* phase : {"prefill", "decode"}) {
    const double r0 = median(rates(runs[0], phase, 2)), r1 = median(rates(runs[2], phase, 2));
    if (std::min(r0, r1) / std::max(r0, r1) < 0.85)
      GTEST_SKIP() << "this host's speed moved by " << static_cast<int>(100 * (1 - std::min(r0, r1) / std::max(r0, r1)))
                   << " % between two runs of A (" << phase << " " << r0 << " and " << r1 << " tok/s): not judged";
  }
  const std::string a_file = dir.file(speed(0, 2) >= speed(2, 2) ? "a0.json" : "a1.json");
  const std::string b_file = dir.file(speed(1, 1) >= speed(3, 1) ? "b0.json" : "b1.json");
  const json e = explain(a_file, b_file);
  ASSERT_TRUE(e.contains("phases")) << "explain failed";
  for (const char* phase : {"prefill", "decode"}) {
    const json& p = phase_of(e, phase);
    expect_identity(p);
    const auto f = factors_of(p);
    std::printf("%s: measured B/A %.3f = hardware %.3f x unexplained %.3f\n", phase, p["ratio"].get<double>(),
                f.count("hardware") ? f.at("hardware") : 0.0, f.count("unexplained") ? f.at("unexplained") : 0.0);
    EXPECT_EQ(f.size(), 2u) << "a cause was named: " << p["factors"].dump(1);
    ASSERT_TRUE(f.count("hardware") && f.count("unexplained"));
    EXPECT_LT(f.at("hardware"), 1.0) << "one CPU is the smaller device";
    // The hardware factor explains the gap within 25 %.
    EXPECT_GE(f.at("unexplained"), 0.8) << p.dump(1);
    EXPECT_LE(f.at("unexplained"), 1.25) << p.dump(1);
    for (const auto& s : p["steps"]) EXPECT_TRUE(s["fix"].is_null()) << s.dump();
  }
}

// The stacked gap of the seed's size. The variant and the oversubscribed threads overlap,
// and explain gives each its cost alone and the overlap a factor of its own. The figures
// compared are minutes apart on a host whose speed swings, so each fault alone is measured
// in three to five interleaved rounds, the two devices' ceilings are probed in turn, a run
// where A itself moved is not judged, and a diagnosis out of bounds is made once more: seven
// runs of 12-06 passed (two on their second diagnosis; docs/explain.md has the tables).
// bench/explain-stacked.sh runs it alone and prints the table.
TEST(ExplainFaults, StackedFaultsAreEachAttributedNearTheirIsolatedFactor) {
  const CpusetCgroup one_cpu("0");
  if (!one_cpu.error().empty()) GTEST_SKIP() << one_cpu.error();
  // Half a CPU in 10 ms periods: with docker's 100 ms, a decode of a few tens of ms runs
  // its first 50 ms unthrottled, and costs less than half (measured here: x0.67 alone
  // against the quota's x0.5), where a long run costs what the quota says.
  const QuotaCgroup half_cpu(5000, 10000);
  if (!half_cpu.error().empty()) GTEST_SKIP() << half_cpu.error();
  const std::string both = one_cpu.enter_command() + " && " + half_cpu.enter_command() + " && exec ";
  TempDir dir;
  // The ceilings of the two devices the hardware factor compares: this machine, and one CPU
  // of it (B's device without its fallback, which doctor's best-variant children read).
  settle_ceilings({{"2", ""}, {"1", one_cpu.enter_prefix()}}, dir);
  // A, healthy; then each fault alone, on the configuration it is a fault of; in three
  // interleaved rounds, each fault's factor from the best repetitions (in two rounds on
  // 12-05 the variant alone once measured x0.57 where every other run gave x0.36-0.47).
  // The rounds of A measure the host: the factors use each configuration's best, so where
  // A's two fastest rounds differ by more than the tolerance the host never held still
  // long enough to judge an attribution against isolated factors. Up to two more rounds
  // give it the chance (12-06's CI: A's two fastest of three differed by 15 %).
  constexpr int kRounds = 3, kMaxRounds = 5;
  std::vector<json> a, variant, cpu, quota;
  auto a_moved = [&]() -> std::string {
    for (const char* phase : {"prefill", "decode"}) {
      std::vector<double> r;
      for (const auto& run : a) r.push_back(best({run}, phase, 2));
      std::sort(r.rbegin(), r.rend());
      if (r[1] / r[0] < 0.85)
        return "this host's speed moved by " + std::to_string(static_cast<int>(100 * (1 - r[1] / r[0]))) +
               " % between the two fastest of " + std::to_string(a.size()) + " runs of A (" + phase + " " +
               std::to_string(r[0]) + " and " + std::to_string(r[1]) + " tok/s): not judged";
    }
    return {};
  };
  for (int round = 0; round < kMaxRounds; ++round) {
    const std::string n = std::to_string(round);
    a.push_back(edgeprobe_json(bench_args("2", 3), "", dir.file("a" + n + ".json")));
    variant.push_back(edgeprobe_json(bench_args("2", 3, {"--cpu-variant", kLowVariant}), "", dir.file("v" + n + ".json")));
    cpu.push_back(edgeprobe_json(bench_args("1,2", 3), one_cpu.enter_prefix(), dir.file("c" + n + ".json")));
    quota.push_back(edgeprobe_json(bench_args("1", 3), both, dir.file("q" + n + ".json")));
    for (const auto* runs : {&a, &variant, &cpu, &quota}) ASSERT_FALSE(runs->back().is_null());
    if (round + 1 >= kRounds && a_moved().empty()) break;
  }
  if (const std::string why = a_moved(); !why.empty()) GTEST_SKIP() << why;
  // A is the round whose medians were least slowed.
  int a_round = 0;
  auto a_speed = [&](int i) { return median(rates(a[i], "decode", 2)) * median(rates(a[i], "prefill", 2)); };
  for (int i = 1; i < static_cast<int>(a.size()); ++i)
    if (a_speed(i) > a_speed(a_round)) a_round = i;
  // The one-CPU device's ceilings with the low variant, measured outside the quota (the
  // first bench of a device and build measures them; a probe under a quota would measure
  // the quota).
  edgeprobe_json(bench_args("1,2", 1, {"--cpu-variant", kLowVariant}), one_cpu.enter_prefix(), dir.file("pre.json"));
  // B: every fault at once, diagnosed by doctor (which measures the fixes in pairs), then
  // judged: each factor against its isolated one, and the unexplained rest. What two
  // threads cost on one CPU under a quota swings between runs on this host (x0.57 in one,
  // x0.80 in the next, docs/explain.md) with no sign inside the machine, so a diagnosis out
  // of bounds is made once more against the same A and isolated runs, and the test fails
  // when neither is within them. The identity and the table's shape hold in every one.
  auto diagnose_and_judge = [&](int attempt) {
    std::vector<std::string> misses;
    const std::string b_file = dir.file("b" + std::to_string(attempt) + ".json");
    const json b = edgeprobe_json({"doctor", "-m", mid_model(), "-t", "2", "--cpu-variant", kLowVariant, "--budget", "300",
                                   "--no-store"},
                                  both, b_file);
    if (b.is_null()) return std::vector<std::string>{"doctor on B failed"};
    // The thread pairs ran the better variant when its pairs found it faster, and say so.
    for (const auto& c : b["doctor"]["comparisons"]) {
      if (c["what"] != "threads") continue;
      EXPECT_EQ(c["after"], json::array({"cpu variant"})) << c.dump();
    }
    const json e = explain(dir.file("a" + std::to_string(a_round) + ".json"), b_file);
    if (!e.contains("phases")) return std::vector<std::string>{"explain failed"};
    for (const char* phase : {"prefill", "decode"}) {
      const json& p = phase_of(e, phase);
      expect_identity(p);
      const auto f = factors_of(p);
      const std::map<std::string, double> isolated = {
          {"hardware", best(cpu, phase, 1) / best(a, phase, 2)},
          {"kernel.isa_fallback", best(variant, phase, 2) / best(a, phase, 2)},
          {"threads.oversubscribed", best(cpu, phase, 2) / best(cpu, phase, 1)},
          {"throttle.cgroup_quota", best(quota, phase, 1) / best(cpu, phase, 1)},
      };
      std::printf("%s: measured B/A %.3f\n", phase, p["ratio"].get<double>());
      for (const auto& [id, iso] : isolated) {
        char attributed[16] = "(none)";  // named without a factor: judged as 1 below
        if (f.count(id)) std::snprintf(attributed, sizeof attributed, "x%.3f", f.at(id));
        std::printf("  %-24s isolated x%.3f  attributed %s\n", id.c_str(), iso, attributed);
      }
      const double rest = f.count("unexplained") ? f.at("unexplained") : 0.0;
      if (f.count("interaction")) std::printf("  %-24s attributed x%.3f\n", "interaction", f.at("interaction"));
      std::printf("  %-24s attributed x%.3f\n", "unexplained", rest);
      // A fault named without a factor counts as 1: right where it costs little alone (two
      // threads on one CPU cost prefill next to nothing on a model this size).
      for (const auto& [id, iso] : isolated) {
        const double attributed = f.count(id) ? f.at(id) : 1.0;
        if (std::abs(attributed / iso - 1) > 0.25)
          misses.push_back(miss_text(phase, id, attributed, iso));
      }
      if (rest < 0.8 || rest > 1.25) misses.push_back(std::string(phase) + " unexplained x" + std::to_string(rest) + ", not in 0.8-1.25");
      // The table: B, one step per fault on B that has a factor, the hardware line (the
      // overlap of two faults is in their steps, not one of its own); or, where the rest
      // would carry B past its line (above 1.25), B and the line only, with the verdict
      // saying why. No row passes the line either way.
      if (p.value("chain_withheld", false)) {
        EXPECT_EQ(p["steps"].size(), 2u) << p["steps"].dump(1);
        EXPECT_GT(rest, 1.25);
        EXPECT_TRUE(p["verdict"].is_string()) << p.dump(1);
      } else {
        EXPECT_EQ(p["steps"].size(), f.size() - f.count("interaction")) << p["steps"].dump(1);
      }
      for (const auto& s : p["steps"])
        EXPECT_LE(s["tokens_per_s"].get<double>(), p["hardware_line_tokens_per_s"].get<double>() * (1 + 1e-9)) << s.dump();
    }
    return misses;
  };
  // Whether the host slowed while B was diagnosed: A once more, right after, against A's
  // best. A diagnosis made in a slow stretch (B's runs slowed, A's not) leaves a rest that
  // is the host's; it is made again rather than judged (12-07's suite: prefill unexplained
  // x0.69 in both diagnoses, and x1.0 when the test was rerun alone).
  auto host_slowed = [&](int attempt) -> std::string {
    const json control =
        edgeprobe_json(bench_args("2", 1), "", dir.file("control" + std::to_string(attempt) + ".json"));
    if (control.is_null()) return "A could not run after the diagnosis";
    for (const char* phase : {"prefill", "decode"}) {
      const double now = best({control}, phase, 2), before = best(a, phase, 2);
      if (now / before < 0.85)
        return std::string("A ran at ") + std::to_string(static_cast<int>(100 * now / before)) +
               " % of its best in " + phase + " right after diagnosis " + std::to_string(attempt);
    }
    return {};
  };
  // Up to three diagnoses: the test fails when two made on a steady host are out of bounds,
  // and is not judged when every miss came in a slow stretch.
  std::vector<std::string> misses;
  std::string slowed;
  int judged_misses = 0;
  for (int attempt = 1; attempt <= 3 && judged_misses < 2; ++attempt) {
    misses = diagnose_and_judge(attempt);
    if (misses.empty()) return;
    slowed = host_slowed(attempt);
    if (slowed.empty()) ++judged_misses;
    std::printf("out of bounds in diagnosis %d (%s)%s: diagnosing B again\n", attempt, misses.front().c_str(),
                slowed.empty() ? "" : (", " + slowed).c_str());
  }
  if (judged_misses < 2)
    GTEST_SKIP() << "three diagnoses out of bounds, " << 3 - judged_misses
                 << " of them while the host slowed (last: " << slowed << "): not judged";
  for (const auto& m : misses) ADD_FAILURE() << m << " (in two diagnoses on a steady host)";
}

namespace {

// Plain bench runs in interleaved rounds: A healthy at -t 2, then each configuration of
// `others` (prefix, args) in turn, `rounds` times. Each entry keeps every round's result.
struct Config {
  std::string name, prefix;
  std::vector<std::string> args;
  int threads = 2;
};
std::map<std::string, std::vector<json>> interleaved(const std::vector<Config>& configs, const TempDir& dir, int rounds) {
  std::map<std::string, std::vector<json>> runs;
  for (int round = 0; round < rounds; ++round)
    for (const auto& c : configs) {
      runs[c.name].push_back(edgeprobe_json(bench_args(std::to_string(c.threads), 3, c.args), c.prefix,
                                            dir.file(c.name + std::to_string(round) + ".json")));
      EXPECT_FALSE(runs[c.name].back().is_null());
    }
  return runs;
}

// The file of the run of `name` whose medians were least slowed.
std::string least_slowed(const std::map<std::string, std::vector<json>>& runs, const std::string& name, int threads,
                         const TempDir& dir) {
  size_t top = 0;
  auto speed = [&](size_t i) {
    return median(rates(runs.at(name)[i], "prefill", threads)) * median(rates(runs.at(name)[i], "decode", threads));
  };
  for (size_t i = 1; i < runs.at(name).size(); ++i)
    if (speed(i) > speed(top)) top = i;
  return dir.file(name + std::to_string(top) + ".json");
}

// Where A's two fastest rounds differ by more than 15 % the host moved: not judged.
std::string host_moved(const std::vector<json>& a, int threads = 2) {
  for (const char* phase : {"prefill", "decode"}) {
    std::vector<double> r;
    for (const auto& run : a) r.push_back(best({run}, phase, threads));
    std::sort(r.rbegin(), r.rend());
    if (r.size() > 1 && r[1] / r[0] < 0.85)
      return "this host's speed moved by " + std::to_string(static_cast<int>(100 * (1 - r[1] / r[0]))) + " % between runs of A (" +
             phase + "): not judged";
  }
  return {};
}

// Each fault's factor on B against its cost measured alone; the rest closes or says so.
// With `misses`, a factor off its cost alone is collected there instead of failing.
void expect_near_isolated(const json& p, const std::map<std::string, double>& isolated,
                          std::vector<std::string>* misses = nullptr) {
  expect_identity(p);
  const auto f = factors_of(p);
  for (const auto& [id, alone] : isolated) {
    std::printf("%s %s: attributed %s, alone x%.3f\n", p["phase"].get<std::string>().c_str(), id.c_str(),
                f.count(id) ? std::to_string(f.at(id)).c_str() : "(none)", alone);
    if (std::abs(1 - alone) < 0.15 && !f.count(id)) continue;  // costs its phase too little to be named
    ASSERT_TRUE(f.count(id)) << id << " not named: " << p.dump(1);
    if (misses && std::abs(f.at(id) / alone - 1) > 0.25)
      misses->push_back(miss_text(p["phase"], id, f.at(id), alone));
    else
      EXPECT_NEAR(f.at(id) / alone, 1.0, 0.25) << miss_text(p["phase"], id, f.at(id), alone);
  }
  const double u = f.count("unexplained") ? f.at("unexplained") : 1;
  if (p.value("closes", true)) {
    EXPECT_GE(u, 0.8) << p.dump(1);
    EXPECT_LE(u, 1.25) << p.dump(1);
  } else {
    EXPECT_TRUE(p["verdict"].is_string()) << p.dump(1);
  }
  for (const auto& s : p["steps"])
    EXPECT_LE(s["tokens_per_s"].get<double>(), p["hardware_line_tokens_per_s"].get<double>() * (1 + 1e-9)) << s.dump();
}

}  // namespace

// The founding user's evidence: two plain bench runs on one device, B at one thread of two.
// The thread count is a cause estimated from the device's ceilings at each count, near what
// it costs (here the whole measured gap, the hardware being the same).
TEST(ExplainFaults, APlainBenchAtFewerThreadsIsExplainedByItsThreadCount) {
  TempDir dir;
  settle_ceilings({{"2", ""}}, dir);
  const auto runs = interleaved({{"a", "", {}, 2}, {"t", "", {}, 1}}, dir, 2);
  if (const std::string why = host_moved(runs.at("a")); !why.empty()) GTEST_SKIP() << why;
  const json e = explain(least_slowed(runs, "a", 2, dir), least_slowed(runs, "t", 1, dir));
  ASSERT_TRUE(e.contains("phases")) << "explain failed";
  EXPECT_TRUE(e["same_device"].get<bool>());
  for (const char* phase : {"prefill", "decode"})
    expect_near_isolated(phase_of(e, phase), {{"threads.count", best(runs.at("t"), phase, 1) / best(runs.at("a"), phase, 2)}});
}

// B fell back to a lower CPU variant and runs under a cgroup quota of half a CPU for its one
// thread, with no doctor run on either side: the fallback from the device's ceilings with
// both variants (bench probes the best one when it falls back), the quota from B's
// provenance, each near its cost alone. One thread: two threads under a quota of one CPU
// cost x3.0-3.7 alone on 12-07 where the quota's need / quota says x2 (threads spinning at
// ggml's barriers burn the quota while one of them is throttled), which the estimate does
// not yet model (docs/explain.md, "Not yet").
TEST(ExplainFaults, APlainBenchWithAVariantFallbackAndAQuotaIsExplainedFromItsOwnEvidence) {
  // Half a CPU in 10 ms periods: a decode of tens of ms would run its first period
  // unthrottled under docker's 100 ms and cost less than the quota says.
  const QuotaCgroup half_cpu(5000, 10000);
  if (!half_cpu.error().empty()) GTEST_SKIP() << half_cpu.error();
  TempDir dir;
  // Both variants' ceilings settled in turn, outside the quota (a probe under a quota would
  // measure the quota): the fallback's estimate is their ratio, and one variant probed once
  // in a slow stretch moved it by a quarter (CI on 12-07: prefill x0.105 against x0.143 alone).
  // A miss is judged again once, after the ceilings are settled once more and two more
  // rounds run (a full suite on 12-08: decode fallback x0.467 against x0.339 alone, and
  // within bounds when the test ran alone minutes later): it fails when both miss.
  std::vector<std::string> misses;
  for (int attempt = 0; attempt < 2; ++attempt) {
    settle_ceilings({{"2", ""}, {"1", "", {"--cpu-variant", kLowVariant}}}, dir);
    const auto runs = interleaved({{"a", "", {}, 1},
                                   {"v", "", {"--cpu-variant", kLowVariant}, 1},
                                   {"q", half_cpu.enter_prefix(), {}, 1},
                                   {"b", half_cpu.enter_prefix(), {"--cpu-variant", kLowVariant}, 1}},
                                  dir, 2);
    if (const std::string why = host_moved(runs.at("a"), 1); !why.empty()) GTEST_SKIP() << why;
    const json e = explain(least_slowed(runs, "a", 1, dir), least_slowed(runs, "b", 1, dir));
    ASSERT_TRUE(e.contains("phases")) << "explain failed";
    misses.clear();
    for (const char* phase : {"prefill", "decode"}) {
      const double a = best(runs.at("a"), phase, 1);
      expect_near_isolated(phase_of(e, phase),
                           {{"kernel.isa_fallback", best(runs.at("v"), phase, 1) / a},
                            {"throttle.cgroup_quota", best(runs.at("q"), phase, 1) / a}},
                           &misses);
    }
    if (misses.empty()) return;
    std::printf("out of bounds (%s): settling the ceilings and measuring again\n", misses.front().c_str());
  }
  for (const auto& m : misses) ADD_FAILURE() << m << " (in two attempts)";
}
