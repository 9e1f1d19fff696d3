// Real inference through the edgeprobe binary on a tiny synthesized model.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "store/store.h"

#include "support/run_process.h"

using edgeprobe::test_support::read_file;
using edgeprobe::test_support::run_edgeprobe;
using edgeprobe::test_support::TempDir;
using edgeprobe::test_support::tiny_model;
using nlohmann::json;

namespace {

json bench_json(const std::vector<std::string>& extra) {
  // Ceilings off: BenchCli.ResultsCarryEfficiency covers them; a probe per test would
  // only slow the suite down.
  std::vector<std::string> args{"bench", "-m", tiny_model(), "-o", "json", "-q", "--ceilings", "off"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = run_edgeprobe(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

}  // namespace

TEST(BenchCli, MeasuresPrefillAndDecodeApartWithEveryStep) {
  const json j = bench_json({"-p", "32", "-n", "8", "-r", "2", "-t", "1"});
  EXPECT_EQ(j["schema_version"], 2);
  ASSERT_EQ(j["results"].size(), 2u);
  const json& pp = j["results"][0];
  const json& tg = j["results"][1];
  EXPECT_EQ(pp["test"], "pp32");
  EXPECT_EQ(tg["test"], "tg8");
  EXPECT_EQ(pp["status"], "ok");
  EXPECT_GT(pp["prefill"]["tokens_per_s"]["median"].get<double>(), 0);
  EXPECT_TRUE(pp["decode"].is_null());
  EXPECT_GT(tg["decode"]["tokens_per_s"]["median"].get<double>(), 0);
  ASSERT_EQ(tg["repetitions"].size(), 2u);
  for (const auto& rep : tg["repetitions"]) {
    EXPECT_EQ(rep["decode_step_ms"].size(), 8u);
    // Decode rate excludes the first token: 7 steps over their summed time.
    double sum = 0;
    for (size_t i = 1; i < 8; ++i) sum += rep["decode_step_ms"][i].get<double>();
    EXPECT_NEAR(rep["decode_tokens_per_s"].get<double>(), 7 / (sum / 1e3), 1e-6);
    EXPECT_DOUBLE_EQ(rep["ttft_ms"].get<double>(), rep["decode_step_ms"][0].get<double>());
    EXPECT_GT(rep["peak_rss_bytes"].get<int64_t>(), 1 << 20);
  }
  const auto& lat = tg["decode"]["token_latency_ms"];
  EXPECT_LE(lat["p50"].get<double>(), lat["p99"].get<double>());
  EXPECT_LE(lat["p99"].get<double>(), lat["max"].get<double>());
  // Loads: one per repetition, the first reported as cold.
  EXPECT_EQ(pp["load"]["samples_ms"].size(), 2u);
  EXPECT_GT(pp["load"]["cold_ms"].get<double>(), 0);
}

TEST(BenchCli, ProvenanceNamesTheFileTheVariantAndTheVersions) {
  const json j = bench_json({"-p", "8", "-n", "0", "-r", "1"});
  const json& p = j["provenance"];
  const json& m = p["models"][0];
  EXPECT_EQ(m["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(m["quant"], "q4_0");
  EXPECT_GT(m["bits_per_weight"].get<double>(), 4.0);
  EXPECT_GT(m["n_params"].get<int64_t>(), 1000000);
  EXPECT_TRUE(m["tensor_types"].contains("q4_0"));
  EXPECT_EQ(j["schema_version"], 2);
  EXPECT_EQ(p["engine"]["name"], "llama.cpp");
  EXPECT_EQ(p["engine"]["kind"], "in-process");
  EXPECT_FALSE(p["engine"]["cpu_variant"].get<std::string>().empty());
  EXPECT_NE(p["engine"]["cpu_variant_library"].get<std::string>().find("libggml-cpu-"), std::string::npos);
  EXPECT_FALSE(p["engine"]["commit"].get<std::string>().empty());
  EXPECT_EQ(p["device"]["id"].get<std::string>().rfind("dev-", 0), 0u);
  EXPECT_FALSE(p["device"]["cpu_model"].get<std::string>().empty());
  EXPECT_FALSE(p["device"]["arch"].get<std::string>().empty());
  EXPECT_FALSE(p["edgeprobe_version"].get<std::string>().empty());
}

TEST(BenchCli, PromptGenerationPairAtDepth) {
  const json j = bench_json({"-p", "0", "-n", "0", "-pg", "16,4", "-d", "32", "-r", "2"});
  ASSERT_EQ(j["results"].size(), 1u);
  const json& r = j["results"][0];
  EXPECT_EQ(r["test"], "pp16+tg4 @ d32");
  EXPECT_EQ(r["status"], "ok") << r["error"];
  // With a prompt, TTFT is the prefill and all 4 steps count towards decode.
  const json& rep = r["repetitions"][0];
  EXPECT_DOUBLE_EQ(rep["ttft_ms"].get<double>(), rep["prefill_ms"].get<double>());
  double sum = 0;
  for (const auto& s : rep["decode_step_ms"]) sum += s.get<double>();
  EXPECT_NEAR(rep["decode_ms"].get<double>(), sum, 1e-9);
}

TEST(BenchCli, SweepsTheCrossProductInOrder) {
  const json j = bench_json({"-p", "8,16", "-n", "4", "-t", "1,2", "-r", "1", "--no-warmup"});
  ASSERT_EQ(j["results"].size(), 6u);
  std::vector<std::string> names;
  for (const auto& r : j["results"]) names.push_back(r["test"].get<std::string>() + "/t" + std::to_string(r["config"]["n_threads"].get<int>()));
  EXPECT_EQ(names, (std::vector<std::string>{"pp8/t1", "pp16/t1", "tg4/t1", "pp8/t2", "pp16/t2", "tg4/t2"}));
}

TEST(BenchCli, AFailingConfigurationBecomesAnErrorRowAndTheSweepGoesOn) {
  // A quantized V cache needs flash attention: llama.cpp refuses that context.
  const auto r = run_edgeprobe({"bench", "-m", tiny_model(), "-p", "0", "-n", "4", "-r", "1", "-fa", "off",
                                "-ctv", "q4_0,f16", "-o", "json", "-q", "--ceilings", "off"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["status"], "error");
  EXPECT_EQ(j["results"][1]["status"], "ok");
  EXPECT_NE(r.err.find("error: tg4"), std::string::npos) << r.err;
}

// Issue 24: a run with an error row is not "complete". One of two tests failing makes the
// run partial, both failing makes it failed, in the store and in `runs`.
TEST(BenchCli, ARunWithFailedTestsIsPartialOrFailedInTheStoreAndInRuns) {
  TempDir dir;
  const std::string db = dir.file("r.db");
  auto bench = [&](const std::string& type_v) {
    return run_edgeprobe({"bench", "-m", tiny_model(), "-p", "0", "-n", "4", "-r", "1", "--no-warmup", "-fa", "off", "-t",
                          "1", "-ctv", type_v, "-o", "json", "-q", "--ceilings", "off", "--sample-hz", "0", "--db", db});
  };
  const auto some = bench("q4_0,f16");
  EXPECT_EQ(some.exit_code, 2) << some.err;
  const auto all = bench("q4_0,q8_0");
  EXPECT_EQ(all.exit_code, 2) << all.err;
  const auto ok = bench("f16");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  const auto store = edgeprobe::store::open_store(db, edgeprobe::store::Mode::kMustExist);
  EXPECT_EQ(store->get_run(1).status, "partial");
  EXPECT_NE(store->get_run(1).error.find("1 of 2 tests failed"), std::string::npos) << store->get_run(1).error;
  EXPECT_EQ(store->get_run(2).status, "failed");
  EXPECT_NE(store->get_run(2).error.find("all 2 tests failed"), std::string::npos) << store->get_run(2).error;
  EXPECT_EQ(store->get_run(3).status, "complete");
  const auto runs = run_edgeprobe({"runs", "--db", db});
  ASSERT_EQ(runs.exit_code, 0) << runs.err;
  std::vector<std::string> statuses;
  std::istringstream lines(runs.out);
  for (std::string line; std::getline(lines, line);)
    for (const char* s : {"  complete  ", "  partial  ", "  failed  "})
      if (line.find(s) != std::string::npos) statuses.emplace_back(s);
  EXPECT_EQ(statuses, (std::vector<std::string>{"  partial  ", "  failed  ", "  complete  "})) << runs.out;
}

TEST(BenchCli, EveryOutputFormatIsGeneratedAndWrittenToAFile) {
  TempDir dir;
  for (const std::string format : {"md", "csv", "json", "jsonl"}) {
    const std::string out = dir.file("out." + format);
    const auto r = run_edgeprobe({"bench", "-m", tiny_model(), "-p", "8", "-n", "4", "-r", "1", "-o", format,
                                  "--output", out, "-q", "--ceilings", "off"});
    ASSERT_EQ(r.exit_code, 0) << format << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << format;
    const std::string text = read_file(out);
    if (format == "md") {
      EXPECT_NE(text.find("| test |"), std::string::npos) << text;
      EXPECT_NE(text.find("| tg4 |"), std::string::npos) << text;
    } else if (format == "csv") {
      EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);
    } else if (format == "jsonl") {
      std::istringstream lines(text);
      std::string line;
      int n = 0;
      while (std::getline(lines, line)) {
        const json j = json::parse(line);
        EXPECT_EQ(j["schema_version"], 2);
        ++n;
      }
      EXPECT_EQ(n, 2);
    } else {
      EXPECT_EQ(json::parse(text)["results"].size(), 2u);
    }
  }
}

TEST(BenchCli, ProgressGoesToStderrAndResultsToStdout) {
  const auto r = run_edgeprobe({"bench", "-m", tiny_model(), "-p", "8", "-n", "0", "-r", "2", "-o", "csv", "--ceilings", "off"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("repetition 2/2"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("edgeprobe: test"), std::string::npos);
  EXPECT_EQ(r.out.rfind("schema_version,", 0), 0u);
}

TEST(BenchCli, LoadsALowerCpuVariantOnRequest) {
  const auto r = run_edgeprobe({"bench", "-m", tiny_model(), "-p", "8", "-n", "2", "-r", "1", "--cpu-variant", "x64",
                                "-o", "json", "-q", "--ceilings", "off"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["provenance"]["engine"]["cpu_variant"], "x64");
}

// A variant that scores for this CPU but whose matrix multiply faults here (AMX in a
// Firecracker guest) is passed over by name, and asking for it is one line and exit 3, not
// a SIGILL. Where every scoring variant runs there is nothing to pass over: skipped.
TEST(BenchCli, AVariantThatFaultsHereIsPassedOverByNameAndRefusedOnRequest) {
  const json j = bench_json({"-p", "16", "-n", "4", "-r", "1", "-t", "1"});
  const json& engine = j["provenance"]["engine"];
  ASSERT_FALSE(engine.value("cpu_variant", "").empty());
  const json passed = engine.contains("details") ? engine["details"].value("cpu_variants_passed_over", json::array()) : json::array();
  if (passed.empty()) GTEST_SKIP() << "every ggml CPU variant that scores for this CPU runs here";
  for (const auto& entry : passed) {
    const std::string line = entry.get<std::string>();
    const std::string name = line.substr(0, line.find(' '));
    EXPECT_NE(name, engine.value("cpu_variant", ""));
    const auto r = run_edgeprobe({"bench", "-m", tiny_model(), "-p", "16", "-n", "4", "-r", "1", "-q", "--ceilings", "off",
                                  "--no-store", "--cpu-variant", name});
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find("CPU variant '" + name + "'"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

TEST(BenchCli, ResultsCarryEfficiencyAgainstTheMeasuredCeilingsAndTelemetry) {
  TempDir trace_dir;
  const std::string trace = trace_dir.file("trace.json");
  const auto r = run_edgeprobe({"bench", "-m", tiny_model(), "-p", "16", "-n", "8", "-r", "2", "-o", "json", "-q",
                                "--sample-hz", "50", "--trace", trace});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  // A bandwidth probe that ran while another test held the CPUs has no clean pass: then the
  // ceiling is absent and the probe's note says why, never a contended figure.
  const json& bw = j["provenance"]["ceilings"]["bandwidth"];
  if (bw["read_best_gb_per_s"].get<double>() == 0) {
    EXPECT_NE(bw["notes"].dump().find("kept out of the ceilings"), std::string::npos) << bw.dump();
  }
  EXPECT_FALSE(j["provenance"]["isa_gap"]["cpu_features"].empty());
  const json& pp = j["results"][0];
  const json& tg = j["results"][1];
  // An efficiency is a figure inside the noise margin or "ceiling suspect" (probed while the
  // machine was slower), never a figure above its ceiling; the tiny model fits in the LLC, so
  // decode is judged against the kernel probe alone.
  // A probe that ran while another test held the CPUs is kept out, and the roofline says so.
  auto contended = [](const json& rf) {
    for (const auto& n : rf["notes"])
      if (n.get<std::string>().find("other processes held the CPUs") != std::string::npos) return true;
    return false;
  };
  for (const auto& [r, phase] : {std::pair{&pp, "prefill"}, std::pair{&tg, "decode"}}) {
    const json& rf = (*r)["roofline"];
    const json& e = rf[std::string(phase) + "_efficiency"];
    if (rf[std::string(phase) + "_ceiling_suspect"].get<bool>() || contended(rf))
      EXPECT_TRUE(e.is_null()) << rf.dump();
    else
      EXPECT_TRUE(e.is_number() && e.get<double>() > 0 && e.get<double>() <= 1.10) << rf.dump();
  }
  EXPECT_TRUE(tg["roofline"]["decode_cache_resident"].get<bool>());
  EXPECT_TRUE(tg["roofline"]["decode_bandwidth_efficiency"].is_null());
  if (!contended(tg["roofline"])) {
    EXPECT_EQ(tg["roofline"]["decode_bound"], "kernel");
    EXPECT_GT(tg["roofline"]["decode_ceiling_tokens_per_s"].get<double>(), 0);
  }
  // Telemetry on the same clock: each repetition has its phase summaries.
  EXPECT_TRUE(tg["repetitions"][0]["telemetry"].contains("decode"));
  EXPECT_TRUE(pp["repetitions"][1]["telemetry"].contains("prefill"));
  EXPECT_TRUE(tg["telemetry"]["unavailable"].is_array());
  const json t = json::parse(read_file(trace));
  EXPECT_FALSE(t["traceEvents"].empty());
}

TEST(SynthCli, WritesEveryRequiredQuantTypeAndLlamaCppRunsIt) {
  for (const std::string quant : {"f16", "q8_0", "q4_0", "q4_k_m", "q3_k_m"}) {
    const std::string model = tiny_model(quant);
    const auto r = run_edgeprobe(
        {"bench", "-m", model, "-p", "8", "-n", "2", "-r", "1", "--no-warmup", "-o", "json", "-q", "--ceilings", "off"});
    ASSERT_EQ(r.exit_code, 0) << quant << ": " << r.err;
    const json j = json::parse(r.out);
    EXPECT_EQ(j["results"][1]["status"], "ok") << quant;
    // The dominant type is what was asked for (k-quant mixes are led by their main type).
    const std::string dominant = j["provenance"]["models"][0]["quant"];
    const std::string expected = quant == "q4_k_m" ? "q4_K" : quant == "q3_k_m" ? "q3_K" : quant;
    EXPECT_EQ(dominant, expected) << quant;
  }
}

TEST(SynthCli, SameSeedSameBytesDifferentSeedDifferentBytes) {
  TempDir dir;
  auto synth = [&](const std::string& name, const std::string& seed) {
    const auto r = run_edgeprobe({"synth", "--shape", "tiny", "-q", "q8_0", "--seed", seed, "--output", dir.file(name)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return read_file(dir.file(name));
  };
  const auto a = synth("a.gguf", "1"), b = synth("b.gguf", "1"), c = synth("c.gguf", "2");
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  const auto again = run_edgeprobe({"synth", "--shape", "tiny", "--output", dir.file("a.gguf")});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.err.find("--force"), std::string::npos);
}

// -o is the output format everywhere; synth's file is --output. An old `synth -o FILE`
// must fail and say so, not write a file somewhere else.
TEST(SynthCli, OldDashOIsAClearErrorAndWritesNothing) {
  TempDir dir;
  const auto r = run_edgeprobe({"synth", "--shape", "tiny", "-o", dir.file("x.gguf")});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("use --output " + dir.file("x.gguf")), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("x.gguf")));
}

// --verify: the greedy continuation of the fixed prompt is stored with each test; a second
// run at another thread count continues it identically (the numbers do not depend on the
// thread count), and a reference without continuations, or --verify with an endpoint, is
// one line and exit 2 before anything runs.
TEST(BenchCli, VerifyStoresTheGreedyContinuationAndChecksARunAgainstAReference) {
  TempDir dir;
  const std::string ref = dir.file("ref.json");
  auto r = run_edgeprobe({"bench",      "-m", tiny_model(), "-p",   "16",       "-n",         "4",
                          "-r",         "1",  "-t",         "2",    "--verify", "--ceilings", "off",
                          "--no-store", "-q", "-o",         "json", "--output", ref});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json reference = json::parse(read_file(ref));
  for (const auto& t : reference["results"]) {
    ASSERT_TRUE(t["verify"].is_object()) << t.dump();
    EXPECT_GT(t["verify"]["prompt_tokens"].size(), 20u);
    EXPECT_EQ(t["verify"]["tokens"].size(), 32u);
    EXPECT_TRUE(t["verify"]["reference"].is_null());
  }
  r = run_edgeprobe({"bench", "-m", tiny_model(), "-p", "16", "-n", "4", "-r", "1", "-t", "1",
                     "--verify-against", ref, "--ceilings", "off", "--no-store", "-q"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("verify: pp16: 32/32 greedy tokens as the reference (" + ref + ")"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("verify: tg4: 32/32 greedy tokens as the reference (" + ref + ")"), std::string::npos)
      << r.out;

  const std::string plain = dir.file("plain.json");
  ASSERT_EQ(run_edgeprobe({"bench", "-m", tiny_model(), "-p", "16", "-n", "0", "-r", "1", "--ceilings", "off",
                           "--no-store", "-q", "-o", "json", "--output", plain})
                .exit_code,
            0);
  EXPECT_FALSE(json::parse(read_file(plain))["results"][0].contains("verify"));
  r = run_edgeprobe(
      {"bench", "-m", tiny_model(), "-p", "16", "-n", "0", "--verify-against", plain, "--no-store"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("none of its tests has a greedy continuation; run the reference with --verify"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = run_edgeprobe({"bench", "--verify", "--endpoint", "http://127.0.0.1:9", "--no-store"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--verify needs the token level"), std::string::npos) << r.err;
  // A hand-edited token id of another type is refused by the result reader, naming it.
  json bad = reference;
  bad["results"][0]["verify"]["tokens"][3] = "x";
  std::ofstream(dir.file("bad.json")) << bad.dump();
  r = run_edgeprobe({"compare", ref, dir.file("bad.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("results[0].verify.tokens[3] must be a token id"), std::string::npos) << r.err;
}
