// explain on result documents built here: every factor kind, the identity (the product of
// the factors is the measured B/A), the table of fixes and the refusals.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "analysis/explain.h"
#include "core/error.h"
#include "report/explain_reporters.h"

using namespace edgeprobe;
using namespace edgeprobe::analysis;
using nlohmann::json;

namespace {

struct Device {
  std::string id = "dev-a";
  std::string variant = "haswell";
  std::string best = "haswell";
  int threads = 2;
  double decode_ceiling = 100, prefill_ceiling = 1000;
  std::string decode_bound = "kernel";
  std::string sha = "ab12";
  bool emulated = false;
};

// Three repetitions around each rate: the median is the rate itself.
json repetitions(double prefill, double decode) {
  json out = json::array();
  for (double f : {0.9, 1.0, 1.1})
    out.push_back({{"index", out.size()}, {"prefill_tokens_per_s", prefill * f}, {"decode_tokens_per_s", decode * f}});
  return out;
}

// A test's config as bench writes it: every setting, not only the ones explain reads.
json test_config(int n_prompt, int n_gen, int threads) {
  workload::TestCase c;
  c.n_prompt = n_prompt;
  c.n_gen = n_gen;
  c.n_threads = threads;
  return result::to_json(c);
}

json bench(const Device& d, double prefill, double decode) {
  json roof = {{"decode_ceiling_tokens_per_s", d.decode_ceiling},
               {"decode_bound", d.decode_bound},
               {"prefill_ceiling_tokens_per_s", d.prefill_ceiling}};
  json prov = {{"device", {{"id", d.id}, {"cpu_model", "CPU " + d.id}, {"hostname", "host-" + d.id}}},
               {"engine", {{"name", "llama.cpp"}, {"commit", "80fb11a"}, {"cpu_variant", d.variant}}},
               {"models", json::array({{{"sha256", d.sha}, {"quant", "Q4_0"}, {"architecture", "llama"}, {"n_params", 1000}}})},
               {"isa_gap", {{"fallback", d.variant != d.best}, {"loaded_variant", d.variant}, {"best_variant", d.best}}},
               {"ceilings", {{"threads", d.threads}}},
               {"usable_cpus", d.threads}};
  if (d.emulated) {
    prov["emulated"] = true;
    prov["cpu_features"] = {{"emulated", true}, {"emulation_sign", "qemu-user"}};
  }
  json results = json::array();
  results.push_back({{"test", "pp128"}, {"status", "ok"},
                     {"config", test_config(128, 0, d.threads)},
                     {"repetitions", repetitions(prefill, 0)}, {"roofline", roof}});
  results.push_back({{"test", "tg32"}, {"status", "ok"},
                     {"config", test_config(0, 32, d.threads)},
                     {"repetitions", repetitions(0, decode)}, {"roofline", roof}});
  return {{"schema_version", 2}, {"kind", "bench"}, {"provenance", prov}, {"results", results}};
}

json doctor(const json& primary, const json& findings, bool emulated = false) {
  return {{"schema_version", 2},
          {"kind", "doctor"},
          {"doctor", {{"findings", findings}, {"primary", primary}, {"emulated", emulated ? json("qemu-user") : json(nullptr)}}}};
}

// A finding as doctor::to_json writes it; `phases` are the per-phase paired medians.
json finding(const std::string& id, std::optional<double> speedup, const std::string& basis, json phases = nullptr,
             const std::string& affects = "prefill+decode") {
  json f = {{"id", id},
            {"severity", "warning"},
            {"title", id + " title"},
            {"evidence", json::array({"evidence of " + id})},
            {"affects", affects},
            {"speedup", speedup ? json(*speedup) : json(nullptr)},
            {"speedup_basis", basis},
            {"speedup_detail", basis + ": how " + id + " was found"},
            {"fix", "fix " + id},
            {"data", json::object()}};
  if (!phases.is_null()) f["data"]["measured"] = {{"phases", phases}};
  return f;
}

// A per-phase estimate as doctor::to_json(PairedEstimate) writes it.
json phase(double median) {
  return {{"median_ratio", median}, {"pairs", 4}, {"low", median * 0.9}, {"high", median * 1.1}, {"coverage", 0.875}};
}

const PhaseExplanation& phase_of(const Explanation& e, const std::string& name) {
  for (const auto& p : e.phases)
    if (p.phase == name) return p;
  throw std::runtime_error("no phase " + name);
}

const ExplainFactor* factor_of(const PhaseExplanation& p, const std::string& id) {
  for (const auto& f : p.factors)
    if (f.id == id) return &f;
  return nullptr;
}

Explanation run(const json& a, const json& b, ExplainOptions options = {}) {
  return explain(explain_side(a, "A.json"), explain_side(b, "B.json"), options);
}

std::string error_of(const json& a, const json& b, ExplainOptions options = {}) {
  try {
    run(a, b, options);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Explain, AWeakerDeviceIsHardwareAloneAndNoFixIsNamed) {
  Device fast, slow;
  slow.id = "dev-b";
  slow.threads = 1;
  slow.decode_ceiling = 50;
  slow.prefill_ceiling = 400;
  const auto e = run(bench(fast, 800, 80), bench(slow, 320, 40));
  const auto& d = phase_of(e, "decode");
  EXPECT_DOUBLE_EQ(d.ratio, 0.5);
  ASSERT_EQ(d.factors.size(), 2u);  // hardware, unexplained
  EXPECT_EQ(d.factors[0].id, "hardware");
  EXPECT_DOUBLE_EQ(d.factors[0].factor, 0.5);
  EXPECT_NEAR(d.factors[1].factor, 1.0, 1e-12);
  const auto& p = phase_of(e, "prefill");
  EXPECT_DOUBLE_EQ(factor_of(p, "hardware")->factor, 0.4);
  for (const auto& f : p.factors) EXPECT_TRUE(f.fix.empty()) << f.id;
  // The table: B as measured, then the hardware line (B's ceiling at A's efficiency).
  ASSERT_EQ(d.steps.size(), 2u);
  EXPECT_DOUBLE_EQ(d.steps[0].tokens_per_s, 40);
  EXPECT_DOUBLE_EQ(d.hardware_line_tokens_per_s, 40);
  EXPECT_FALSE(e.same_device);
}

TEST(Explain, StackedCausesOnBMultiplyToTheMeasuredRatioWithTheRestUnexplained) {
  Device a, b;
  b.id = "dev-b";
  b.variant = "sse42";
  b.decode_bound = "bandwidth";  // the variant does not lower a bandwidth ceiling
  b.prefill_ceiling = 400;       // probed with the fallback: 1000 with the best variant
  const json findings = json::array({
      finding("kernel.isa_fallback", 1.6, "measured", {{"prefill", phase(2.5)}, {"decode", phase(1.5)}}),
      finding("threads.oversubscribed", 1.8, "measured", {{"prefill", phase(1.7)}, {"decode", phase(2.0)}}),
      finding("throttle.cgroup_quota", 2.0, "estimated"),
      finding("identity.build_differs", std::nullopt, "none"),  // not a cause of slowness
      finding("ceiling.efficiency", 3.0, "estimated"),          // restates the efficiency
  });
  const json da = bench(a, 1000, 100), db = doctor(bench(b, 1000 / (2.5 * 1.7 * 2.0) * 1.1, 100 / (1.5 * 2.0 * 2.0)), findings);
  const auto e = run(da, db);
  const auto& d = phase_of(e, "decode");
  EXPECT_NEAR(d.ratio, 1.0 / 6, 1e-9);
  EXPECT_NEAR(factor_of(d, "kernel.isa_fallback")->factor, 1 / 1.5, 1e-12);
  EXPECT_EQ(factor_of(d, "kernel.isa_fallback")->basis, "measured");
  EXPECT_EQ(factor_of(d, "kernel.isa_fallback")->side, "B");
  EXPECT_NEAR(factor_of(d, "threads.oversubscribed")->factor, 0.5, 1e-12);
  EXPECT_NEAR(factor_of(d, "throttle.cgroup_quota")->factor, 0.5, 1e-12);
  EXPECT_EQ(factor_of(d, "throttle.cgroup_quota")->basis, "estimated");
  EXPECT_EQ(factor_of(d, "identity.build_differs"), nullptr);
  EXPECT_EQ(factor_of(d, "ceiling.efficiency"), nullptr);
  EXPECT_NEAR(factor_of(d, "unexplained")->factor, 1.0, 1e-9);
  EXPECT_NEAR(d.product, d.ratio, 1e-12);
  // Largest first: the quota and the threads (x2 each) before the variant (x1.5).
  EXPECT_EQ(d.factors[1].id, "threads.oversubscribed");
  EXPECT_EQ(d.factors[3].id, "kernel.isa_fallback");
  // The seed's table: 16.7 -> 33.3 -> 66.7 -> 100 tok/s, then the hardware line.
  ASSERT_EQ(d.steps.size(), 5u);
  EXPECT_NEAR(d.steps[3].tokens_per_s, 100, 1e-9);
  EXPECT_EQ(d.steps[3].fix, "fix kernel.isa_fallback");
  EXPECT_NEAR(d.hardware_line_tokens_per_s, 100, 1e-9);

  // Prefill's own pairs give its factors; the variant's is lifted out of the compute
  // ceiling, which was probed with the fallback.
  const auto& p = phase_of(e, "prefill");
  EXPECT_NEAR(factor_of(p, "kernel.isa_fallback")->factor, 1 / 2.5, 1e-12);
  EXPECT_NEAR(factor_of(p, "hardware")->factor, 1.0, 1e-12);
  EXPECT_NEAR(factor_of(p, "unexplained")->factor, 1.1, 1e-9);
  EXPECT_NEAR(p.product, p.ratio, 1e-12);
  EXPECT_FALSE(p.notes.empty());
}

// Doctor measured the threads with the better variant loaded (`after`): each of the two
// gets its cost alone and their overlap is a factor of its own. The corner no pair measured
// (slow variant, threads fixed) takes the oversubscription's cost as a wait that faster
// kernels do not shorten. The product is unchanged, and the table's rows between are the
// pairs' measured speeds where its order is theirs.
TEST(Explain, AVariantAndOversubscriptionMeasuredInOrderGetTheirCostsAloneAndTheOverlap) {
  Device a, b;
  b.id = "dev-b";
  b.variant = "sse42";
  b.decode_bound = "bandwidth";
  json variant = finding("kernel.isa_fallback", 2.0, "measured", {{"prefill", phase(1.2)}, {"decode", phase(1.5)}});
  variant["data"]["measured"]["b_ceilings"] = {{"prefill_ceiling_tokens_per_s", 1000.0}};
  json threads = finding("threads.oversubscribed", 2.0, "measured", {{"prefill", phase(3.0)}, {"decode", phase(1.6)}});
  threads["data"]["measured"]["after"] = {"cpu variant"};
  const json findings = json::array({variant, threads, finding("throttle.cgroup_quota", 2.0, "estimated")});
  const json db = doctor(bench(b, 1000 / (1.2 * 3.0 * 2.0), 100 / (1.5 * 1.6 * 2.0)), findings);
  const auto e = run(bench(a, 1000, 100), db);

  // Decode: g_v 1.5 (oversubscribed), g_t 1.6; the variant alone 1.5 x 1.6 - 0.6 = 1.8.
  const auto& d = phase_of(e, "decode");
  const auto* v = factor_of(d, "kernel.isa_fallback");
  const auto* t = factor_of(d, "threads.oversubscribed");
  const auto* overlap = factor_of(d, "interaction");
  ASSERT_TRUE(v && t && overlap);
  EXPECT_NEAR(1 / v->factor, 1.8, 1e-12);
  EXPECT_EQ(v->basis, "measured and modelled");
  EXPECT_NE(v->detail.find("alone (threads fixed) x1.80"), std::string::npos) << v->detail;
  EXPECT_NEAR(1 / t->factor, 1.6, 1e-12);
  EXPECT_EQ(t->basis, "measured");
  EXPECT_NEAR(overlap->factor, 1.8 / 1.5, 1e-12);
  EXPECT_EQ(overlap->side, "B");
  EXPECT_TRUE(overlap->fix.empty());
  EXPECT_EQ(overlap->basis, "modelled");
  EXPECT_NEAR(factor_of(d, "unexplained")->factor, 1.0, 1e-9);
  EXPECT_NEAR(d.product, d.ratio, 1e-12);
  EXPECT_EQ(d.factors[d.factors.size() - 2].id, "interaction");  // after the causes, before the rest
  // The table in doctor's order: the quota (x2), the variant as its pairs measured it
  // (x1.5, oversubscribed), then the threads as theirs did (x1.6); no row for the overlap.
  ASSERT_EQ(d.steps.size(), 5u);
  EXPECT_EQ(d.steps[2].label, "after fixing kernel.isa_fallback");
  EXPECT_NEAR(d.steps[2].tokens_per_s / d.steps[1].tokens_per_s, 1.5, 1e-12);
  EXPECT_NEAR(d.steps[3].tokens_per_s / d.steps[2].tokens_per_s, 1.6, 1e-12);
  EXPECT_NEAR(d.steps[3].tokens_per_s, 100, 1e-9);

  // Prefill: the threads weigh most (g_t 3.0, g_v 1.2: the variant alone 1.6), so they come
  // first in the table with their gain while the variant is slow, 3.6 / 1.6; then the quota,
  // then the variant's 1.6.
  const auto& p = phase_of(e, "prefill");
  EXPECT_NEAR(1 / factor_of(p, "kernel.isa_fallback")->factor, 1.6, 1e-12);
  EXPECT_NEAR(factor_of(p, "interaction")->factor, 1.6 / 1.2, 1e-12);
  EXPECT_NEAR(p.product, p.ratio, 1e-12);
  ASSERT_EQ(p.steps.size(), 5u);
  EXPECT_EQ(p.steps[1].label, "after fixing threads.oversubscribed");
  EXPECT_NEAR(p.steps[1].tokens_per_s / p.steps[0].tokens_per_s, 3.6 / 1.6, 1e-12);
  EXPECT_EQ(p.steps[3].label, "after fixing kernel.isa_fallback");
  EXPECT_NEAR(p.steps[3].tokens_per_s / p.steps[2].tokens_per_s, 1.6, 1e-12);
  EXPECT_NEAR(p.steps[3].tokens_per_s, 1000, 1e-9);
  const json j = to_json(e);
  for (const auto& f : j["phases"][0]["factors"])
    if (f["id"] == "kernel.isa_fallback") {
      EXPECT_EQ(f["interaction"]["with"], "threads.oversubscribed");
      EXPECT_NEAR(f["interaction"]["fixed_first"].get<double>(), 1 / 1.2, 1e-12);
    }

  // Pairs measured each with the other as configured (no `after`: a doctor from before it
  // was recorded) keep their own factors, and there is no overlap.
  json old = db;
  old["doctor"]["findings"][1]["data"]["measured"].erase("after");
  const auto before = run(bench(a, 1000, 100), old);
  const auto& od = phase_of(before, "decode");
  EXPECT_NEAR(factor_of(od, "kernel.isa_fallback")->factor, 1 / 1.5, 1e-12);
  EXPECT_FALSE(factor_of(od, "kernel.isa_fallback")->interaction);
  EXPECT_EQ(factor_of(od, "interaction"), nullptr);
}

TEST(Explain, AVariantFallbackWithoutDoctorNamesTheCommandInsteadOfGuessing) {
  Device a, b;
  b.id = "dev-b";
  b.variant = "sse42";
  const auto e = run(bench(a, 1000, 100), bench(b, 500, 50));
  const auto& d = phase_of(e, "decode");
  EXPECT_EQ(factor_of(d, "kernel.isa_fallback"), nullptr);
  ASSERT_FALSE(d.unmeasured.empty());
  EXPECT_NE(d.unmeasured[0].find("edgeprobe doctor"), std::string::npos) << d.unmeasured[0];
  EXPECT_NE(d.unmeasured[0].find("sse42"), std::string::npos);
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes[0].find("holds the fallback"), std::string::npos) << d.notes[0];
}

TEST(Explain, ACauseOnARaisesBOverA) {
  Device a, b;
  b.id = "dev-b";
  const json fa = json::array({finding("contention.other_processes", 1.25, "estimated")});
  const auto e = run(doctor(bench(a, 800, 80), fa), bench(b, 1000, 100));
  const auto& d = phase_of(e, "decode");
  const auto* f = factor_of(d, "contention.other_processes");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->side, "A");
  EXPECT_DOUBLE_EQ(f->factor, 1.25);
  EXPECT_NEAR(factor_of(d, "unexplained")->factor, 1.0, 1e-9);
  // A's fix is not one of B's steps.
  EXPECT_EQ(d.steps.size(), 2u);
}

TEST(Explain, AFixThatDoesNotHelpAPhaseIsNamedButGetsNoFactorThere) {
  Device a, b;
  b.id = "dev-b";
  const json fb = json::array({finding("threads.count", 1.3, "measured", {{"prefill", phase(1.6)}, {"decode", phase(0.97)}}),
                               finding("throttle.clock", std::nullopt, "none")});
  const auto e = run(bench(a, 1000, 100), doctor(bench(b, 500, 50), fb));
  const auto& d = phase_of(e, "decode");
  EXPECT_EQ(factor_of(d, "threads.count"), nullptr);
  ASSERT_EQ(d.unmeasured.size(), 2u);
  EXPECT_NE(d.unmeasured[0].find("no gain in decode"), std::string::npos) << d.unmeasured[0];
  EXPECT_NE(d.unmeasured[1].find("throttle.clock"), std::string::npos);
  EXPECT_NEAR(factor_of(phase_of(e, "prefill"), "threads.count")->factor, 1 / 1.6, 1e-12);
}

TEST(Explain, APhaseOnlyFindingStaysInItsPhase) {
  Device a, b;
  b.id = "dev-b";
  const json fb = json::array({finding("precision.weights_expanded", 1.9, "estimated", nullptr, "decode")});
  const auto e = run(bench(a, 1000, 100), doctor(bench(b, 1000, 50), fb));
  EXPECT_NE(factor_of(phase_of(e, "decode"), "precision.weights_expanded"), nullptr);
  EXPECT_EQ(factor_of(phase_of(e, "prefill"), "precision.weights_expanded"), nullptr);
}

TEST(Explain, DifferentModelFilesAreRefusedAndSameShapeIsSuggested) {
  Device a, b;
  b.sha = "cd34";
  const std::string err = error_of(bench(a, 1000, 100), bench(b, 1000, 100));
  EXPECT_NE(err.find("different model files"), std::string::npos) << err;
  EXPECT_NE(err.find("--same-shape"), std::string::npos) << err;
  EXPECT_NO_THROW(run(bench(a, 1000, 100), bench(b, 1000, 100), {true}));
  json other = bench(b, 1000, 100);
  other["provenance"]["models"][0]["n_params"] = 2000;
  const std::string shape = error_of(bench(a, 1000, 100), other, {true});
  EXPECT_NE(shape.find("n_params"), std::string::npos) << shape;
}

TEST(Explain, ARunWithoutCeilingsNamesTheProbeUnlessTheDeviceIsTheSame) {
  Device a, b;
  b.id = "dev-b";
  json bare = bench(b, 500, 50);
  for (auto& r : bare["results"]) r["roofline"] = nullptr;
  const std::string err = error_of(bench(a, 1000, 100), bare);
  EXPECT_NE(err.find("B.json has no prefill ceiling"), std::string::npos) << err;
  EXPECT_NE(err.find("edgeprobe probe"), std::string::npos) << err;
  // One device, one CPU count: the hardware is the same whatever the ceilings say.
  json same = bare;
  same["provenance"]["device"]["id"] = "dev-a";
  json a_bare = bench(a, 1000, 100);
  for (auto& r : a_bare["results"]) r["roofline"] = nullptr;
  const auto e = run(a_bare, same);
  const auto& d = phase_of(e, "decode");
  EXPECT_EQ(d.factors[0].basis, "same device");
  EXPECT_DOUBLE_EQ(d.factors[0].factor, 1);
  EXPECT_NEAR(factor_of(d, "unexplained")->factor, 0.5, 1e-12);
  EXPECT_TRUE(e.same_device);
}

TEST(Explain, OtherKindsOfDocumentAreRefusedByName) {
  const json session = {{"schema_version", 2}, {"kind", "session"}, {"provenance", json::object()}};
  try {
    explain_side(session, "s.json");
    FAIL() << "a session result was taken";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("bench or doctor"), std::string::npos) << e.what();
  }
  EXPECT_THROW(explain_side(json::array(), "x.json"), Error);
}

TEST(Explain, AnEmulatedRunIsLabelledOnEveryFactor) {
  Device a, b;
  a.emulated = b.emulated = true;
  b.variant = "armv8.0";
  b.best = "armv8.2_2";
  const json fb = json::array({finding("kernel.isa_fallback", 3.0, "measured", {{"prefill", phase(3.5)}, {"decode", phase(1.4)}})});
  const auto e = run(bench(a, 100, 10), doctor(bench(b, 100 / 3.5, 10 / 1.4), fb, true));
  const auto* f = factor_of(phase_of(e, "prefill"), "kernel.isa_fallback");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->detail.find("emulated"), std::string::npos) << f->detail;
  bool labelled = false;
  for (const auto& n : e.notes) labelled = labelled || n.find("emulation") != std::string::npos;
  EXPECT_TRUE(labelled);
  EXPECT_TRUE(to_json(e)["b"]["emulated"].is_string());
}

TEST(Explain, TheJsonAndTheMarkdownCarryTheIdentityAndEscapeNames) {
  Device a, b;
  b.id = "dev-b";
  json fb = json::array({finding("threads.oversubscribed", 2.0, "measured", {{"prefill", phase(2.0)}, {"decode", phase(2.0)}})});
  fb[0]["fix"] = "-t 1 | rm -rf /\n\x1b[31m";
  json db = doctor(bench(b, 250, 25), fb);
  db["doctor"]["primary"]["provenance"]["device"]["hostname"] = "evil|host\nline";
  const json j = to_json(run(bench(a, 1000, 100), db));
  EXPECT_EQ(j["kind"], "explain");
  for (const auto& p : j["phases"]) {
    double product = 1;
    for (const auto& f : p["factors"]) product *= f["factor"].get<double>();
    EXPECT_NEAR(product, p["ratio"].get<double>(), 1e-12);
  }
  std::ostringstream md;
  report::write_explain_report(j, "md", md);
  const std::string text = md.str();
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find("evil|host"), std::string::npos) << "a raw | would break the table";
  EXPECT_NE(text.find("**product**"), std::string::npos);
  EXPECT_NE(text.find("→"), std::string::npos);
  std::ostringstream csv;
  report::write_explain_report(j, "csv", csv);
  EXPECT_NE(csv.str().find("decode,threads.oversubscribed,B,0.5"), std::string::npos) << csv.str();
}

TEST(Explain, TheFirstLoadIsAPhaseWithItsStorageCeilingAndMmapCause) {
  Device a, b;
  b.id = "dev-b";
  json da = bench(a, 1000, 100), db = bench(b, 1000, 100);
  for (auto* d : {&da, &db})
    for (auto& r : (*d)["results"]) r["roofline"]["load_ceiling_ms"] = d == &da ? 100.0 : 200.0;
  for (auto& r : da["results"]) r["load"] = {{"cold_ms", 150.0}, {"samples_ms", {150.0}}};
  for (auto& r : db["results"]) r["load"] = {{"cold_ms", 900.0}, {"samples_ms", {900.0}}};
  const json fb = json::array({finding("load.no_mmap", 3.0, "measured", nullptr, "load")});
  const auto e = run(da, doctor(db, fb));
  const auto& l = phase_of(e, "load");
  EXPECT_NEAR(l.ratio, 150.0 / 900.0, 1e-12);
  EXPECT_NEAR(factor_of(l, "hardware")->factor, 0.5, 1e-12);
  EXPECT_NEAR(factor_of(l, "load.no_mmap")->factor, 1 / 3.0, 1e-12);
  EXPECT_NEAR(factor_of(l, "unexplained")->factor, 1.0, 1e-9);
  // The load cause is not a decode one.
  EXPECT_EQ(factor_of(phase_of(e, "decode"), "load.no_mmap"), nullptr);
  std::ostringstream md;
  report::write_explain_report(to_json(e), "md", md);
  EXPECT_NE(md.str().find("first load: A 150 ms · B 900 ms"), std::string::npos) << md.str();
  // Without a storage ceiling on a side the load is left out, saying why; the rest stands.
  for (auto& r : db["results"]) r["roofline"].erase("load_ceiling_ms");
  const auto without = run(da, db);
  EXPECT_EQ(without.phases.size(), 2u);
  bool said = false;
  for (const auto& n : without.notes) said = said || n.find("no storage ceiling") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(Explain, TheBestVariantsOwnCeilingFromDoctorsPairsIsTheHardwareLine) {
  Device a, b;
  b.id = "dev-b";
  b.variant = "sse42";
  b.prefill_ceiling = 300;  // probed with the fallback
  json f = finding("kernel.isa_fallback", 2.0, "measured", {{"prefill", phase(2.0)}, {"decode", phase(1.2)}});
  // The pair children that ran the best variant probed this device with it.
  f["data"]["measured"]["b_ceilings"] = {{"prefill_ceiling_tokens_per_s", 500.0}, {"decode_ceiling_tokens_per_s", 60.0},
                                         {"decode_bound", "kernel"}};
  const auto e = run(bench(a, 1000, 100), doctor(bench(b, 250, 50), json::array({f})));
  const auto& p = phase_of(e, "prefill");
  EXPECT_NEAR(factor_of(p, "hardware")->factor, 0.5, 1e-12) << "500 over A's 1000, not 300 x the pairs' 2.0";
  EXPECT_NEAR(factor_of(p, "kernel.isa_fallback")->factor, 0.5, 1e-12);
  EXPECT_NEAR(factor_of(p, "unexplained")->factor, 1.0, 1e-9);
  EXPECT_NEAR(factor_of(phase_of(e, "decode"), "hardware")->factor, 0.6, 1e-12);
}

TEST(Explain, ACeilingTheRunBeatIsNamedAsADoubtOnTheHardwareFactor) {
  Device a, b;
  b.id = "dev-b";
  json da = bench(a, 1000, 100);
  // A's prefill ran at twice its ceiling: that ceiling was probed while A's machine was slower.
  for (auto& r : da["results"]) {
    r["roofline"]["prefill_ceiling_suspect"] = true;
    r["roofline"]["prefill_over_ceiling"] = 2.0;
    r["roofline"]["remeasure_command"] = "edgeprobe probe -m MODEL --refresh --replace";
  }
  const auto e = run(da, bench(b, 500, 50));
  const auto& p = phase_of(e, "prefill");
  EXPECT_EQ(factor_of(p, "hardware")->basis, "measured, ceiling suspect");
  bool said = false;
  for (const auto& n : p.notes) said = said || (n.find("A's prefill ran at x2.00 its ceiling") != std::string::npos &&
                                               n.find("--refresh --replace") != std::string::npos);
  EXPECT_TRUE(said) << ::testing::PrintToString(p.notes);
  EXPECT_EQ(factor_of(phase_of(e, "decode"), "hardware")->basis, "measured");
}

// One machine, the model on its GPU on B's side: different hardware (the GPU's ceilings
// against the CPU's), and doctor's measured GPU-against-CPU pair is a cause with its fix.
TEST(Explain, TheSameMachinesGpuIsOtherHardwareAndASlowerGpuIsACause) {
  Device a, b;
  b.decode_ceiling = 30;
  b.prefill_ceiling = 500;
  json on_gpu = bench(b, 300, 20);
  for (auto& r : on_gpu["results"]) r["roofline"]["ceiling_device"] = "Vulkan0";
  const json fb = json::array({finding("gpu.slower_than_cpu", 2.0, "measured",
                                       {{"decode", phase(2.0)}, {"prefill", phase(1.5)}})});
  const auto e = run(bench(a, 800, 80), doctor(on_gpu, fb));
  const auto& d = phase_of(e, "decode");
  const auto* hw = factor_of(d, "hardware");
  ASSERT_NE(hw, nullptr);
  EXPECT_DOUBLE_EQ(hw->factor, 0.3);  // not "the same device": the GPU's ceiling over the CPU's
  EXPECT_NE(hw->detail.find("on Vulkan0"), std::string::npos) << hw->detail;
  const auto* gpu = factor_of(d, "gpu.slower_than_cpu");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->side, "B");
  EXPECT_DOUBLE_EQ(gpu->factor, 0.5);
  EXPECT_EQ(gpu->fix, "fix gpu.slower_than_cpu");
  // The identity: hardware x cause x unexplained = 20 / 80.
  double product = 1;
  for (const auto& f : d.factors) product *= f.factor;
  EXPECT_NEAR(product, 0.25, 1e-12);
}

namespace {

// Each repetition's `phase` telemetry as bench records it: a share of the machine's CPUs
// taken by other processes and the cgroup-throttled time, over 1 s.
void with_telemetry(json& document, double other_cpu_share, double throttled_ms) {
  for (auto& r : document["results"])
    for (auto& rep : r["repetitions"])
      for (const char* phase : {"prefill", "decode"})
        rep["telemetry"][phase] = {{"duration_ms", 1000.0}, {"other_cpu_share", other_cpu_share}, {"throttled_ms", throttled_ms}};
}

void with_threads(json& document, int threads) {
  for (auto& r : document["results"]) r["config"]["n_threads"] = threads;
}

double product_of(const PhaseExplanation& p) {
  double product = 1;
  for (const auto& f : p.factors) product *= f.factor;
  return product;
}

}  // namespace

// The founding user's evidence: two plain bench runs, no doctor. B's own telemetry and
// provenance carry its quota and the other processes: each is estimated, within what it can
// physically cost, and the account closes.
TEST(Explain, APlainBenchRunsQuotaAndOtherProcessesAreEstimatedFromItsOwnEvidence) {
  Device a, b;
  b.id = "dev-b";
  json db = bench(b, 1000 / 2.0 / 1.5625, 100 / 2.0 / 1.5625);
  db["provenance"]["cpu_limits"] = {{"machine_cpus", 4}, {"quota_cpus", 1.0}, {"cgroup", "/slow"}};
  with_telemetry(db, 0.125, 500);  // 0.5 CPUs of 4 taken by others; throttled half the time
  const auto e = run(bench(a, 1000, 100), db);
  for (const char* name : {"prefill", "decode"}) {
    const auto& p = phase_of(e, name);
    const auto* quota = factor_of(p, "throttle.cgroup_quota");
    ASSERT_NE(quota, nullptr) << name;
    EXPECT_NEAR(quota->factor, 0.5, 1e-12) << "2 threads need 2 CPUs, the quota gives 1";
    EXPECT_EQ(quota->basis, "estimated");
    EXPECT_EQ(quota->side, "B");
    EXPECT_NE(quota->fix.find("/slow"), std::string::npos) << quota->fix;
    const auto* others = factor_of(p, "contention.other_processes");
    ASSERT_NE(others, nullptr) << name;
    EXPECT_NEAR(others->factor, 1 / 1.5625, 1e-12) << "(2 threads + 0.5 CPUs of others) over 2 CPUs for each "
                                                      "thread, squared for two threads at barriers";
    EXPECT_NEAR(factor_of(p, "unexplained")->factor, 1.0, 1e-9);
    EXPECT_NEAR(product_of(p), p.ratio, 1e-12);
    EXPECT_TRUE(p.closes);
    EXPECT_FALSE(p.chain_withheld);
    EXPECT_NEAR(p.steps.back().tokens_per_s, p.hardware_line_tokens_per_s, 1e-9);
    EXPECT_NEAR(p.steps[p.steps.size() - 2].tokens_per_s, p.hardware_line_tokens_per_s, 1e-9);
  }
}

// Other processes on a 1-thread run of a 2-CPU machine can take only the CPU the thread
// left idle before they cost it anything: 80 % of the machine is 1.6 CPUs, so the thread
// keeps at least 2 / 2.6 of a CPU, x1.3, never the x5 that 1 / (1 - 0.8) would say.
TEST(Explain, OtherProcessesOnAOneThreadRunAreBoundedByTheCpusItsThreadsLeftIdle) {
  Device a, b;
  b.id = "dev-b";
  b.threads = 2;
  json db = bench(b, 400, 40);
  with_threads(db, 1);
  db["provenance"]["cpu_limits"] = {{"machine_cpus", 2}, {"quota_cpus", nullptr}, {"cgroup", "/"}};
  with_telemetry(db, 0.8, 0);
  const auto e = run(bench(a, 1000, 100), db);
  const auto& d = phase_of(e, "decode");
  const auto* others = factor_of(d, "contention.other_processes");
  ASSERT_NE(others, nullptr);
  EXPECT_NEAR(others->factor, 1 / 1.3, 1e-12);
  // 30 % of the machine on a 1-thread run of 2 CPUs fits in the idle CPU: named, no factor.
  with_telemetry(db, 0.3, 0);
  const auto quiet = run(bench(a, 1000, 100), db);
  EXPECT_EQ(factor_of(phase_of(quiet, "decode"), "contention.other_processes"), nullptr);
  bool named = false;
  for (const auto& u : phase_of(quiet, "decode").unmeasured) named = named || u.find("contention.other_processes") != std::string::npos;
  EXPECT_TRUE(named);
}

// One device, A at 2 threads and B at 1: the thread count is a cause, estimated from the
// device's decode ceiling at each count and, for prefill, from the probe's matmul rate at
// each count; a sweep in B's own run is a measurement and wins. Never more than n / t.
TEST(Explain, AThreadCountBelowTheUsableCpusIsACauseFromTheCeilingsAtEachCount) {
  Device a;
  json da = bench(a, 1000, 100), db = bench(a, 600, 70);
  with_threads(db, 1);
  db["provenance"]["models"][0]["quant"] = "Q4_0";
  db["provenance"]["ceilings"]["compute"]["points"] = {{{"type", "q4_0"}, {"threads", 1}, {"median_gflop_per_s", 60.0}},
                                                       {{"type", "q4_0"}, {"threads", 2}, {"median_gflop_per_s", 100.0}}};
  for (auto& r : db["results"]) r["roofline"]["decode_ceiling_at_threads_tokens_per_s"] = 100 / 1.4;
  const auto e = run(da, db);
  EXPECT_TRUE(e.same_device);
  const auto& d = phase_of(e, "decode");
  EXPECT_DOUBLE_EQ(factor_of(d, "hardware")->factor, 1.0);
  const auto* t = factor_of(d, "threads.count");
  ASSERT_NE(t, nullptr);
  EXPECT_NEAR(t->factor, 1 / 1.4, 1e-12);
  EXPECT_EQ(t->fix, "-t 2");
  EXPECT_NEAR(factor_of(d, "unexplained")->factor, 0.7 * 1.4, 1e-9);
  const auto& p = phase_of(e, "prefill");
  EXPECT_NEAR(factor_of(p, "threads.count")->factor, 0.6, 1e-12);
  EXPECT_NEAR(factor_of(p, "unexplained")->factor, 1.0, 1e-9);
  // Without probe points at 1 thread, prefill takes the most the count can cost: 2 / 1.
  db["provenance"]["ceilings"]["compute"]["points"] = json::array();
  EXPECT_NEAR(factor_of(phase_of(run(da, db), "prefill"), "threads.count")->factor, 0.5, 1e-12);
  // A sweep in B's own run measured -t 2 next to -t 1.
  json sweep = db;
  json wider = db["results"][1];
  wider["config"]["n_threads"] = 2;
  wider["repetitions"] = repetitions(0, 91);
  sweep["results"].push_back(wider);
  const auto* measured = factor_of(phase_of(run(da, sweep), "decode"), "threads.count");
  ASSERT_NE(measured, nullptr);
  EXPECT_EQ(measured->basis, "measured");
  EXPECT_NEAR(measured->factor, 70.0 / 91, 1e-12);
}

// The invariants: no row of the table passes the hardware line; a rest above the account's
// tolerance withholds the table and names the estimates that over-state their cost; a rest
// below it says B is slower than its factors and names the doctor run that would measure it.
// B measured a little above its hardware line (an estimate) with nothing to fix: the
// account closes, the table shows B where it measured, and a note says by how much.
TEST(Explain, BMeasuredAboveItsLineWithinTheToleranceIsSaidNotHidden) {
  Device a;
  const auto e = run(bench(a, 1000, 100), bench(a, 1100, 110));
  const auto& d = phase_of(e, "decode");
  EXPECT_TRUE(d.closes);
  EXPECT_NEAR(factor_of(d, "unexplained")->factor, 1.1, 1e-9);
  ASSERT_EQ(d.steps.size(), 2u);
  EXPECT_NEAR(d.steps.front().tokens_per_s, 110, 1e-9);
  bool said = false;
  for (const auto& n : d.notes)
    said = said || n.find("B as measured is x1.100 above its hardware line") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(Explain, NoStepPassesTheHardwareLineAndAnAccountThatDoesNotCloseSaysSo) {
  Device a, b;
  b.id = "dev-b";
  // Estimates of x2 (quota) and x2.25 (others: x1.5 fair share for each of two threads at
  // barriers) on B, which measured only 2x slower: x2.25 past the line.
  json db = bench(b, 500, 50);
  db["provenance"]["cpu_limits"] = {{"machine_cpus", 2}, {"quota_cpus", 1.0}, {"cgroup", "/q"}};
  with_telemetry(db, 0.5, 0);
  const auto over = run(bench(a, 1000, 100), db);
  const auto& d = phase_of(over, "decode");
  EXPECT_NEAR(factor_of(d, "unexplained")->factor, 2.25, 1e-9);
  EXPECT_FALSE(d.closes);
  EXPECT_TRUE(d.chain_withheld);
  ASSERT_EQ(d.steps.size(), 2u);  // B as measured, the hardware line
  EXPECT_NE(d.verdict.find("does not close"), std::string::npos) << d.verdict;
  EXPECT_NE(d.verdict.find("throttle.cgroup_quota on B x0.500 (estimated"), std::string::npos) << d.verdict;
  EXPECT_NE(d.verdict.find("may overlap"), std::string::npos) << d.verdict;
  // Half the machine taken by others makes B's run contaminated: measuring it again comes
  // first, then the doctor run that measures B's causes in pairs.
  ASSERT_EQ(d.closing_commands.size(), 3u);
  EXPECT_NE(d.closing_commands[0].find("again on a quiet machine"), std::string::npos) << d.closing_commands[0];
  EXPECT_NE(d.closing_commands[1].find("on B's device, to measure its causes in pairs: edgeprobe doctor -m MODEL"), std::string::npos)
      << d.closing_commands[1];
  std::ostringstream md;
  report::write_explain_report(to_json(over), "md", md);
  EXPECT_NE(md.str().find("not shown, the factors above do not add up"), std::string::npos) << md.str();
  EXPECT_EQ(md.str().find("after fixing throttle"), std::string::npos) << md.str();
  EXPECT_EQ(to_json(over)["phases"][1]["closes"], false);

  // x1.1 past the line: within the tolerance, the table is shown and held at the line.
  with_telemetry(db, 0.5, 0);
  db["provenance"]["cpu_limits"]["quota_cpus"] = nullptr;
  json close = bench(b, 1000 / 2.25 * 1.1, 100 / 2.25 * 1.1);
  close["provenance"] = db["provenance"];
  with_telemetry(close, 0.5, 0);
  const auto held = run(bench(a, 1000, 100), close);
  const auto& h = phase_of(held, "decode");
  EXPECT_TRUE(h.closes);
  for (const auto& s : h.steps) EXPECT_LE(s.tokens_per_s, h.hardware_line_tokens_per_s * (1 + 1e-12)) << s.label;
  EXPECT_FALSE(h.notes.empty());

  // B 3x slower than the hardware says, and nothing on it estimated: the rest is named.
  const auto slower = run(bench(a, 1000, 100), bench(b, 300, 30));
  const auto& s = phase_of(slower, "decode");
  EXPECT_FALSE(s.closes);
  EXPECT_FALSE(s.chain_withheld);
  EXPECT_NE(s.verdict.find("slower than its factors account for"), std::string::npos) << s.verdict;
  EXPECT_EQ(s.closing_commands[0], "on B's device: edgeprobe doctor -m MODEL -t 2");
  // A path from the result file is quoted for the shell it is pasted into.
  json named = bench(b, 300, 30);
  named["provenance"]["models"][0]["path"] = "/m/it's $HOME.gguf";
  EXPECT_EQ(phase_of(run(bench(a, 1000, 100), named), "decode").closing_commands[0],
            "on B's device: edgeprobe doctor -m '/m/it'\\''s $HOME.gguf' -t 2");
}

// A at two threads beside others that took half the machine: each thread's fair share
// (x1.5) for each of the two threads that meet at barriers, x2.25. B three times as fast
// is past what that allows, and the verdict names A's estimate as possibly too low.
TEST(Explain, ContentionOnAMultiThreadRunCountsItsBarriersAndAnAccountPastItNamesA) {
  Device a;
  json da = bench(a, 1000, 100);
  da["provenance"]["cpu_limits"] = {{"machine_cpus", 2}, {"quota_cpus", nullptr}, {"cgroup", "/"}};
  with_telemetry(da, 0.5, 0);
  const auto e = run(da, bench(a, 3000, 300));
  const auto& d = phase_of(e, "decode");
  const auto* others = factor_of(d, "contention.other_processes");
  ASSERT_NE(others, nullptr);
  EXPECT_EQ(others->side, "A");
  EXPECT_NEAR(others->factor, 2.25, 1e-12);
  EXPECT_NE(others->detail.find("about x2.25 (x1.50 if their descheduling always overlapped)"),
            std::string::npos)
      << others->detail;
  EXPECT_FALSE(d.closes);
  EXPECT_NE(d.verdict.find("A's own under-estimated: contention.other_processes on A x2.250 (estimated"),
            std::string::npos)
      << d.verdict;
}

// The founding story from two plain bench runs: B fell back to a lower CPU variant, and
// bench probed the device with the best variant too (roofline.best_variant), so the
// fallback is estimated from the two ceilings and counted once (the hardware factor takes
// the best variant's ceiling); B's quota is estimated from its provenance.
TEST(Explain, APlainBenchRunsVariantFallbackIsTheRatioOfTheDevicesCeilingsWithBothVariants) {
  Device a, b;
  b.id = "dev-b";
  b.variant = "sse42";
  b.prefill_ceiling = 400;  // with sse42; 1000 with haswell
  b.decode_ceiling = 60;    // kernel-bound with sse42; 100 with haswell
  json db = bench(b, 1000 * 0.4 / 2, 100 * 0.6 / 2);
  for (auto& r : db["results"])
    r["roofline"]["best_variant"] = {{"variant", "haswell"}, {"prefill_ceiling_tokens_per_s", 1000.0},
                                     {"decode_ceiling_tokens_per_s", 100.0}, {"decode_bound", "kernel"}};
  db["provenance"]["cpu_limits"] = {{"machine_cpus", 2}, {"quota_cpus", 1.0}, {"cgroup", "/q"}};
  const auto e = run(bench(a, 1000, 100), db);
  for (const auto& [name, variant] : {std::pair{"prefill", 0.4}, std::pair{"decode", 0.6}}) {
    const auto& p = phase_of(e, name);
    const auto* v = factor_of(p, "kernel.isa_fallback");
    ASSERT_NE(v, nullptr) << name;
    EXPECT_NEAR(v->factor, variant, 1e-12) << name;
    EXPECT_EQ(v->basis, "estimated");
    EXPECT_NE(v->detail.find("haswell"), std::string::npos) << v->detail;
    EXPECT_NEAR(factor_of(p, "hardware")->factor, 1.0, 1e-12) << "the best variant's ceiling: the fallback counts once";
    EXPECT_NEAR(factor_of(p, "throttle.cgroup_quota")->factor, 0.5, 1e-12);
    EXPECT_NEAR(factor_of(p, "unexplained")->factor, 1.0, 1e-9);
    EXPECT_TRUE(p.closes);
    for (const auto& u : p.unmeasured) EXPECT_EQ(u.find("kernel.isa_fallback"), std::string::npos) << u;
  }
}

// A first load that read the file from storage against the same run's warm loads: a
// measured cause on that side, so a cold A against a warm B closes at the warm loads.
TEST(Explain, AColdFirstLoadIsMeasuredAgainstTheSameRunsWarmLoads) {
  Device a;
  json da = bench(a, 1000, 100), db = bench(a, 1000, 100);
  auto with_loads = [](json& doc, std::vector<double> ms, double share) {
    for (auto& r : doc["results"])
      r["load"] = {{"cold_ms", ms[0]}, {"samples_ms", ms}, {"page_cache_resident_share_before", share}};
  };
  with_loads(da, {300, 110, 100, 90}, 0.02);
  with_loads(db, {100, 100, 100, 100}, 1.0);
  const auto e = run(da, db);
  const auto& load = phase_of(e, "load");
  const auto* cold = factor_of(load, "load.cold_cache");
  ASSERT_NE(cold, nullptr);
  EXPECT_EQ(cold->side, "A");
  EXPECT_EQ(cold->basis, "measured");
  EXPECT_NEAR(cold->factor, 3.0, 1e-12);
  EXPECT_NEAR(factor_of(load, "unexplained")->factor, 1.0, 1e-12);
  EXPECT_TRUE(load.closes);
  // A first load with the file already cached is warm: nothing to name.
  with_loads(da, {300, 110, 100, 90}, 0.95);
  EXPECT_EQ(factor_of(phase_of(run(da, db), "load"), "load.cold_cache"), nullptr);
}
