#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "core/error.h"
#include "report/fixtures.h"
#include "report/reporter.h"
#include "support/run_process.h"

using namespace edgeprobe;

namespace {

// A fixed report: two tests on one model, one of them failed. Every format is compared
// byte for byte with a golden file; EDGEPROBE_UPDATE_GOLDEN=1 rewrites them after an
// intended change (then review the diff).
result::BenchReport sample_report() {
  result::BenchReport r;
  auto& p = r.provenance;
  p.edgeprobe_version = "0.1.0";
  p.engine.name = "llama.cpp";
  p.engine.kind = "in-process";
  p.engine.version = "0.0.0";
  p.engine.commit = "80fb11a";
  p.engine.cpu_variant = "haswell";
  p.engine.cpu_variant_library = "/opt/llama/bin/libggml-cpu-haswell.so";
  p.engine.cpu_variant_features = {{"AVX2", "1"}, {"REPACK", "1"}};
  p.engine.backends = {"CPU"};
  p.build = {"e1f2397abcde", true, "RelWithDebInfo", "GNU 12.2.0"};
  p.device = {"dev-0123456789abcdef", "x86_64", "Example CPU", "", "Example Board", "Debian GNU/Linux 12 (bookworm)",
              "Linux 6.1.0 x86_64", "host"};
  p.started_at_utc = "2026-11-29T10:00:00Z";
  p.command_line = "edgeprobe bench -m model.gguf";
  result::ModelIdentity m;
  m.path = "model.gguf";
  m.sha256 = "ab12";
  m.size_bytes = 636 * 1024 * 1024;
  m.n_params = 1100048384;
  m.architecture = "llama";
  m.name = "edgeprobe-synth-tinyllama-1.1b";
  m.dominant_type = "q4_0";
  m.bits_per_weight = 4.85;
  m.tensor_types["q4_0"] = {155, 600000000, 1000000000};
  m.tensor_types["f32"] = {45, 180000, 45000};
  m.n_layer = 22;
  m.n_embd = 2048;
  m.n_ff = 5632;
  m.n_head = 32;
  m.n_head_kv = 4;
  m.n_vocab = 32000;
  p.models.push_back(m);

  result::TestResult pp;
  pp.config.model_path = "model.gguf";
  pp.config.kind = workload::TestKind::kPrompt;
  pp.config.n_prompt = 128;
  pp.config.n_threads = 2;
  pp.load_ms = {812.5, 402.25, 398.75};
  pp.page_cache_resident_share = 1.0;
  for (int i = 0; i < 3; ++i) {
    result::Repetition rep;
    rep.index = i;
    rep.start_ns = 1000000000LL * (i + 1);
    rep.end_ns = rep.start_ns + 2000000000LL;
    rep.prefill_ms = 2000 + 10 * i;
    rep.ttft_ms = rep.prefill_ms;
    rep.prefill_tokens_per_s = 128 / (rep.prefill_ms / 1000);
    rep.peak_rss_bytes = 700 * 1024 * 1024 + i;
    pp.repetitions.push_back(rep);
  }
  result::TestResult tg = pp;
  tg.config.kind = workload::TestKind::kGenerate;
  tg.config.n_prompt = 0;
  tg.config.n_gen = 4;
  tg.repetitions.clear();
  for (int i = 0; i < 3; ++i) {
    result::Repetition rep;
    rep.index = i;
    rep.decode_step_ms = {40.0 + i, 34.0, 35.0 + i, 36.0};
    rep.ttft_ms = rep.decode_step_ms[0];
    rep.decode_ms = 34.0 + 35.0 + i + 36.0;
    rep.decode_tokens_per_s = 3 / (rep.decode_ms / 1000);
    rep.peak_rss_bytes = 650 * 1024 * 1024;
    // Telemetry as the sampler summarises a phase (a subset of its fields).
    rep.telemetry = {{"decode",
                      {{"clusters", {{{"name", "big"}, {"mean_freq_share", 0.80 + 0.01 * i}},
                                     {{"name", "little"}, {"mean_freq_share", 0.95}}}},
                       {"thermal", {{"cpu-0", {{"max_temp_c", 60.0 + i}}}, {"skin", {{"max_temp_c", 41.0}}}}},
                       {"throttled_ms", 12.0},
                       {"other_cpu_share", 0.05 * i}}}};
    tg.repetitions.push_back(rep);
  }
  // Rooflines as runner::roofline_of makes them (these fields set, the rest not measured).
  pp.roofline = result::roofline_from_json({{"prefill_ceiling_tokens_per_s", 72.5},
                 {"prefill_efficiency", 0.875},
                 {"prefill_compute_basis", "model shapes x 128 tokens"},
                 {"decode_bound", nullptr},
                 {"decode_efficiency", nullptr}});
  tg.roofline = result::roofline_from_json({{"decode_bandwidth_ceiling_tokens_per_s", 81.0},
                 {"decode_bandwidth_efficiency", 0.35},
                 {"decode_kernel_ceiling_tokens_per_s", 31.5},
                 {"decode_ceiling_tokens_per_s", 31.5},
                 {"decode_bound", "kernel"},
                 {"decode_efficiency", 0.9},
                 {"prefill_efficiency", nullptr}});
  result::TestResult failed = tg;
  failed.roofline.reset();
  failed.config.type_v = "q4_0";
  failed.repetitions.clear();
  failed.error = result::ErrorInfo{"bad_input", "llama.cpp could not create a context"};
  // Not measured is not zero: one repetition (no deviation), one load (no warm load), and a
  // prefill that beat its ceiling 128-fold (a ceiling probed while the machine crawled).
  result::TestResult once = pp;
  once.config.n_prompt = 64;
  once.load_ms = {812.5};
  once.repetitions.resize(1);
  once.repetitions[0].prefill_tokens_per_s = 64.0;
  once.roofline = result::roofline_from_json({{"prefill_ceiling_tokens_per_s", 0.5},
                   {"prefill_efficiency", nullptr},
                   {"prefill_ceiling_suspect", true},
                   {"prefill_over_ceiling", 128.0},
                   {"remeasure_command", "edgeprobe probe -m model.gguf --refresh --replace"},
                   {"decode_efficiency", nullptr}});
  r.results = {pp, tg, failed, once};
  return r;
}

// `report` through one reporter, as a bench writes it: begin, each test, end.
std::string render(const result::BenchReport& report, const std::string& format) {
  std::vector<workload::TestCase> plan;
  for (const auto& r : report.results) plan.push_back(r.config);
  std::ostringstream out;
  auto reporter = report::make_reporter(format, out);
  reporter->begin(report.provenance, plan);
  for (const auto& r : report.results) reporter->add(r);
  reporter->end(report);
  return out.str();
}
std::string render(const std::string& format) { return render(sample_report(), format); }

void expect_golden(const std::string& format) {
  const std::string path = std::string(EDGEPROBE_TEST_DATA_DIR) + "/golden/bench." + format;
  const std::string actual = render(format);
  if (const char* update = std::getenv("EDGEPROBE_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    test_support::write_file(path, actual);
    GTEST_SKIP() << "rewrote " << path;
  }
  EXPECT_EQ(actual, test_support::read_file(path)) << "output differs from " << path;
}

}  // namespace

TEST(Reporters, MarkdownMatchesGolden) { expect_golden("md"); }

// Load levels get their own table after the tests, one row a level; a level without an
// SLO says so instead of showing a goodput of 0.
TEST(Reporters, MarkdownListsServingLevels) {
  auto report = sample_report();
  // As the runner writes them: an open loop's concurrency is null, not absent.
  report.results[1].serving = result::serving_from_json(nlohmann::json::array(
      {{{"concurrency", 2}, {"completed", 16}, {"failed", 0}, {"request_throughput", 3.25},
        {"output_throughput", 104.0}, {"goodput", 2.5}, {"median_ttft_ms", 120.0}, {"p99_ttft_ms", 480.5},
        {"median_tpot_ms", 18.25}, {"p99_itl_ms", 40.0}, {"median_e2el_ms", 700.0}},
       {{"concurrency", nullptr}, {"request_rate", 4.0}, {"completed", 15}, {"failed", 1}, {"request_throughput", 3.0},
        {"output_throughput", 96.0}, {"goodput", nullptr}, {"median_ttft_ms", 150.0}, {"p99_ttft_ms", 900.0},
        {"median_tpot_ms", 20.0}, {"p99_itl_ms", 55.0}, {"median_e2el_ms", 800.0}}}));
  std::ostringstream out;
  auto reporter = report::make_reporter("md", out);
  reporter->begin(report.provenance, {});
  reporter->end(report);
  const std::string md = out.str();
  EXPECT_NE(md.find("Serving (load levels after the repetitions)"), std::string::npos) << md;
  EXPECT_NE(md.find("| tg4 | concurrency 2 | 16 / 0 | 3.25 | 104.0 | 2.50 | 120.0 / 480.5 | 18.25 | 40.00 | 700.0 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 4 req/s | 15 / 1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| no SLO |"), std::string::npos) << md;
  EXPECT_EQ(render("md").find("Serving"), std::string::npos) << "a table for tests that ran no load";
}
TEST(Reporters, CsvMatchesGolden) { expect_golden("csv"); }
TEST(Reporters, JsonMatchesGolden) { expect_golden("json"); }
TEST(Reporters, JsonlMatchesGolden) { expect_golden("jsonl"); }

TEST(Reporters, JsonCarriesEveryRawSampleAndTheSchemaVersion) {
  const auto j = nlohmann::json::parse(render("json"));
  EXPECT_EQ(j["schema_version"], result::kSchemaVersion);
  const auto& tg = j["results"][1];
  ASSERT_EQ(tg["repetitions"].size(), 3u);
  EXPECT_EQ(tg["repetitions"][2]["decode_step_ms"].size(), 4u);
  EXPECT_EQ(tg["load"]["samples_ms"].size(), 3u);
  // Medians come from the raw samples: rates 3/(105 ms), 3/(106 ms), 3/(107 ms).
  EXPECT_NEAR(tg["decode"]["tokens_per_s"]["median"].get<double>(), 3 / 0.106, 1e-9);
  EXPECT_EQ(j["results"][2]["status"], "error");
}

TEST(Reporters, CsvHasOneRowPerTestAndAHeader) {
  const std::string csv = render("csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
  EXPECT_EQ(csv.rfind("schema_version,model_path,", 0), 0u);
}

TEST(Reporters, ProvenanceLoadsBackIntoTheSameStructs) {
  const auto report = sample_report();
  const nlohmann::json written = result::to_json(report.provenance);
  const auto loaded = result::provenance_from_json(written);
  EXPECT_EQ(result::to_json(loaded), written);
  EXPECT_EQ(loaded.engine.cpu_variant, "haswell");
  EXPECT_EQ(loaded.device.id, "dev-0123456789abcdef");
  EXPECT_EQ(loaded.models.at(0).tensor_types.at("q4_0").bytes, 600000000u);
}

// Doctor reads its children's results and a --baseline file through this inverse: what it
// reads must be what bench wrote, every format made from it the same bytes.
TEST(Reporters, ABenchDocumentLoadsBackIntoTheSameStructs) {
  const nlohmann::json written = result::to_json(sample_report());
  const auto loaded = result::bench_report_from_json(written);
  EXPECT_EQ(result::to_json(loaded), written);
  const auto sample = sample_report();
  ASSERT_EQ(loaded.results.size(), sample.results.size());
  for (size_t i = 0; i < sample.results.size(); ++i) {
    EXPECT_EQ(loaded.results[i].error, sample.results[i].error) << i;  // the failed test stays failed, with its words
    EXPECT_EQ(loaded.results[i].repetitions.size(), sample.results[i].repetitions.size()) << i;
  }
  // With telemetry, rooflines and every repetition's samples (the report fixture).
  const nlohmann::json rich = report_test::bench_document(3, 8, true, "m.gguf", "cd34");
  EXPECT_EQ(result::to_json(result::bench_report_from_json(rich)), rich);
}

TEST(Reporters, ABenchDocumentOfAnotherShapeIsBadInputOrATypeError) {
  try {
    result::bench_report_from_json({{"kind", "session"}, {"configurations", nlohmann::json::array()}});
    FAIL() << "a document without results loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("\"results\""), std::string::npos) << e.what();
  }
  nlohmann::json wrong = result::to_json(sample_report());
  wrong["results"][0]["config"]["n_prompt"] = "many";
  EXPECT_THROW(result::bench_report_from_json(wrong), nlohmann::json::exception);
}

TEST(Reporters, TelemetryColumnsSummariseEveryRepetitionAndSayNaWhenMissing) {
  const std::string md = render("md");
  // tg4: slowest cluster median 81 %, hottest zone 62 C, 3 x 12 ms throttled, others median 5 %.
  EXPECT_NE(md.find("| kernel (35% bw) | 81% | 62.0 | 36 | 5% |"), std::string::npos) << md;
  // pp128 has no telemetry: not measured, not zero.
  EXPECT_NE(md.find("| 88% /  |  |  | n/a | n/a | n/a |"), std::string::npos) << md;
  const std::string csv = render("csv");
  EXPECT_NE(csv.find(",decode_freq_share,decode_max_temp_c,decode_throttled_ms,"), std::string::npos);
  EXPECT_NE(csv.find(",0.81,62,36,0.05,,"), std::string::npos) << csv;
}

// Issue 24: a figure that was not measured is absent in every format, never a zero, and an
// efficiency above its ceiling is "ceiling suspect" with the command that measures it again.
TEST(Reporters, NotMeasuredIsAbsentAndABeatenCeilingIsSuspectInEveryFormat) {
  const std::string md = render("md");
  const auto row = [&](const std::string& test) {
    const size_t at = md.find("| " + test + " |");
    return at == std::string::npos ? std::string() : md.substr(at, md.find('\n', at) - at);
  };
  const std::string once = row("pp64");
  ASSERT_FALSE(once.empty()) << md;
  EXPECT_NE(once.find("| 64.00 |"), std::string::npos) << once;  // one sample: no "± 0.00"
  EXPECT_EQ(once.find("±"), std::string::npos) << once;
  EXPECT_NE(once.find("| ceiling suspect / "), std::string::npos) << once;
  EXPECT_EQ(once.find("12800%"), std::string::npos) << once;
  EXPECT_NE(md.find("measure it again: edgeprobe probe -m model.gguf --refresh --replace"), std::string::npos) << md;
  EXPECT_NE(row("pp128").find("± "), std::string::npos);  // three samples keep their deviation

  const std::string csv = render("csv");
  const std::string header = csv.substr(0, csv.find('\n'));
  const std::string last = csv.substr(csv.rfind('\n', csv.size() - 2) + 1);
  auto cell = [](const std::string& line, size_t index) {
    size_t start = 0;
    for (size_t i = 0; i < index; ++i) start = line.find(',', start) + 1;
    return line.substr(start, line.find_first_of(",\n", start) - start);
  };
  auto column = [&](const std::string& name) {
    const auto pos = ("," + header + ",").find("," + name + ",");
    return static_cast<size_t>(std::count(header.begin(), header.begin() + static_cast<long>(pos), ','));
  };
  EXPECT_EQ(cell(last, column("test")), "pp64");
  EXPECT_EQ(cell(last, column("load_warm_median_ms")), "");
  EXPECT_EQ(cell(last, column("prefill_tokens_per_s_stddev")), "");
  EXPECT_EQ(cell(last, column("prefill_efficiency")), "");
  EXPECT_EQ(cell(last, column("prefill_efficiency_note")),
            "ceiling suspect (edgeprobe probe -m model.gguf --refresh --replace)");

  const auto j = nlohmann::json::parse(render("json"));
  const auto& r = j["results"][3];
  EXPECT_TRUE(r["prefill"]["tokens_per_s"]["stddev"].is_null());
  EXPECT_EQ(r["prefill"]["tokens_per_s"]["n"], 1);
  EXPECT_TRUE(r["load"]["warm_ms"]["median"].is_null());
  EXPECT_EQ(r["load"]["warm_ms"]["n"], 0);
  EXPECT_TRUE(r["roofline"]["prefill_efficiency"].is_null());
  EXPECT_TRUE(j["results"][2]["ttft_ms"]["median"].is_null());  // the failed test ran nothing
}

// Two files of one shape (both "edgeprobe-synth-tiny"): each row names its file.
TEST(Reporters, RowsOfTwoModelsWithOneNameNameTheirFiles) {
  auto report = sample_report();
  auto second = report.provenance.models[0];
  second.path = "/tmp/b/other.gguf";
  report.provenance.models.push_back(second);
  report.results[1].model_index = 1;
  report.results[1].config.model_path = second.path;
  const std::string md = render(report, "md");
  EXPECT_NE(md.find("| model.gguf | 636 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| other.gguf | 636 |"), std::string::npos) << md;
}

TEST(Reporters, UnknownFormatIsBadInput) {
  std::ostringstream out;
  try {
    report::make_reporter("xml", out);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  }
}

// --prefill-remote: md gets a "prefill" column naming where each test's prefills ran, and
// CSV a column of the same name; without it md keeps its columns and CSV's cell is empty.
TEST(Reporters, RemotePrefillAndItsFallbackAreColumnsOfTheirOwn) {
  auto report = sample_report();
  report.provenance.extra["prefill_remote"] = "10.0.0.2:7788";
  for (auto& rep : report.results[0].repetitions) rep.prefill_remote = {{"mode", "remote"}, {"tokens", 128}};
  report.results[1].repetitions[0].prefill_remote = {{"mode", "local"}, {"fallback_reason", "cannot connect"}};
  report.results[1].repetitions[1].prefill_remote = {{"mode", "remote"}};
  report.results[1].repetitions[2].prefill_remote = {{"mode", "local"}, {"fallback_reason", "cannot connect"}};
  auto as = [&](const std::string& format) { return render(report, format); };
  const std::string md = as("md");
  EXPECT_NE(md.find("| test | prefill | prefill t/s |"), std::string::npos) << md;
  EXPECT_NE(md.find("| pp128 | remote |"), std::string::npos) << md;
  EXPECT_NE(md.find("| tg4 | 1 remote, 2 local (fallback) |"), std::string::npos) << md;
  const std::string csv = as("csv");
  EXPECT_NE(csv.find(",error,prefill,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",ok,,remote,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",\"1 remote, 2 local (fallback)\","), std::string::npos) << csv;
  EXPECT_EQ(render("md").find("| prefill |"), std::string::npos) << "no column without --prefill-remote";
}
