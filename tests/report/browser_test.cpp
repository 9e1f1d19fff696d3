// Every report kind in a real browser: Debian's headless Chromium opens the page from a
// file URL with networking off, and the page's own counters (written into DOM attributes
// that --dump-dom shows) say that it rendered, that no script failed, and that every
// chart drew marks. Screenshots land in the build tree to look at.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

#include "report/fixtures.h"
#include "report/html_report.h"
#include "support/run_process.h"

using namespace edgeprobe;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const char kChromium[] = "/usr/bin/chromium";

std::vector<std::string> chromium_args(const std::string& profile) {
  return {kChromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
          "--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + profile,
          "--enable-logging=stderr", "--v=0"};
}

struct Loaded {
  std::string dom, log;
};

// Loads `page` from a file in the build tree; saves <name>.png next to it.
Loaded load_in_chromium(const std::string& name, const std::string& page) {
  const fs::path dir = fs::path(EDGEPROBE_BUILD_DIR) / "tests" / "report" / "pages";
  fs::create_directories(dir);
  const std::string html = (dir / (name + ".html")).string();
  test_support::write_file(html, page);
  test_support::TempDir profile;
  auto args = chromium_args(profile.path());
  args.push_back("--dump-dom");
  args.push_back("file://" + html);
  const auto dumped = test_support::run_process(args, 120);
  EXPECT_EQ(dumped.exit_code, 0) << dumped.err;
  auto shot = chromium_args(profile.path());
  shot.push_back("--screenshot=" + (dir / (name + ".png")).string());
  shot.push_back("--window-size=1280,2000");
  shot.push_back("file://" + html);
  const auto screenshot = test_support::run_process(shot, 120);
  EXPECT_EQ(screenshot.exit_code, 0) << screenshot.err;
  return {dumped.out, dumped.err + screenshot.err};
}

std::string body_attr(const std::string& dom, const std::string& attr) {
  std::smatch m;
  if (!std::regex_search(dom, m, std::regex("<body[^>]*\\s" + attr + "=\"([^\"]*)\""))) return "";
  return m[1];
}

// Every chart container: its id, its data points, the marks it drew (-1: it never drew).
struct ChartState {
  std::string id, status;
  long points = 0, drawn = -1;
};
std::vector<ChartState> charts(const std::string& dom) {
  std::vector<ChartState> out;
  const std::regex tag("<(figure|div) class=\"(chart|not-measured)\"([^>]*)>");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), tag); it != std::sregex_iterator(); ++it) {
    const std::string attrs = (*it)[3];
    auto get = [&](const std::string& name) {
      std::smatch m;
      return std::regex_search(attrs, m, std::regex(name + "=\"([^\"]*)\"")) ? std::string(m[1]) : std::string();
    };
    ChartState c{get("data-chart"), get("data-status")};
    if (!get("data-points").empty()) c.points = std::stol(get("data-points"));
    if (!get("data-drawn").empty()) c.drawn = std::stol(get("data-drawn"));
    out.push_back(c);
  }
  return out;
}

// Rendered without a script error, with no console message, and every chart drew its data.
void expect_rendered(const Loaded& page, size_t min_charts) {
  EXPECT_EQ(body_attr(page.dom, "data-render"), "done");
  EXPECT_EQ(body_attr(page.dom, "data-errors"), "");
  EXPECT_EQ(page.log.find("CONSOLE"), std::string::npos) << page.log;
  size_t drawn_charts = 0;
  for (const ChartState& c : charts(page.dom)) {
    if (c.status == "not-measured") continue;
    EXPECT_EQ(c.status, "drawn") << c.id;
    EXPECT_GT(c.points, 0) << c.id;
    EXPECT_GT(c.drawn, 0) << c.id;
    ++drawn_charts;
  }
  EXPECT_GE(drawn_charts, min_charts);
}

class Browser : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(kChromium)) GTEST_SKIP() << kChromium << " is absent: apt-get install chromium (scripts/setup.sh does)";
  }
};

}  // namespace

TEST_F(Browser, BenchReportDrawsEveryChart) {
  json doc = report_test::bench_document(5, 64, true);
  doc["results"].back()["serving"] = json::array(
      {{{"concurrency", 2}, {"completed", 16}, {"failed", 0}, {"request_throughput", 3.25}, {"output_throughput", 104.0},
        {"goodput", nullptr}, {"median_ttft_ms", 120.0}, {"p99_ttft_ms", 480.5}, {"median_tpot_ms", 18.25},
        {"p99_itl_ms", 40.0}, {"median_e2el_ms", 700.0}}});
  const auto page = load_in_chromium("bench", report::render_html_report({{"bench.json", doc}}));
  EXPECT_NE(page.dom.find("Serving: load levels after the repetitions"), std::string::npos);
  EXPECT_NE(page.dom.find("<td>concurrency 2</td>"), std::string::npos);
  EXPECT_NE(page.dom.find(">no SLO</td>"), std::string::npos);
  expect_rendered(page, 9);
  for (const char* id : {"in0-decode-latency", "in0-telemetry-freq", "in0-telemetry-temp", "in0-telemetry-power",
                         "in0-telemetry-throttled", "in0-latency-cdf", "in0-sweep-decode", "in0-roofline"}) {
    EXPECT_NE(page.dom.find(std::string("data-chart=\"") + id + "\""), std::string::npos) << id;
  }
  EXPECT_NE(page.dom.find("kernel-bound"), std::string::npos);
}

TEST_F(Browser, BenchWithoutTelemetrySaysWhyNotMeasured) {
  const auto page = load_in_chromium("bench-no-telemetry", report::render_html_report({{"b.json", report_test::bench_document(3, 8, false)}}));
  expect_rendered(page, 4);
  EXPECT_NE(page.dom.find("telemetry was off for this run"), std::string::npos);
  size_t not_measured = 0;
  for (const ChartState& c : charts(page.dom)) not_measured += c.status == "not-measured";
  EXPECT_EQ(not_measured, 5u);  // frequency, temperature, power, throttling, other processes
}

// Issue 24: a run with an error row says it is partial above its table; all ok, complete.
TEST_F(Browser, ARunWithAFailedTestSaysPartial) {
  json doc = report_test::bench_document(3, 8, false);
  const auto complete = load_in_chromium("bench-complete", report::render_html_report({{"b.json", doc}}));
  EXPECT_NE(complete.dom.find("data-run-status=\"complete\""), std::string::npos);
  json failed = doc["results"][1];
  failed["status"] = "error";
  failed["error"] = {{"kind", "bad_input"}, {"message", "llama.cpp could not create a context"}};
  doc["results"].push_back(failed);
  const auto partial = load_in_chromium("bench-partial", report::render_html_report({{"b.json", doc}}));
  EXPECT_EQ(body_attr(partial.dom, "data-render"), "done");
  EXPECT_NE(partial.dom.find("data-run-status=\"partial\""), std::string::npos);
  EXPECT_NE(partial.dom.find("run: partial: 1 of 3 tests failed"), std::string::npos);
}

TEST_F(Browser, FullSessionRendersFast) {
  const json doc = report_test::session_document(3, 50, 3, 128);
  const auto page = load_in_chromium("session", report::render_html_report({{"session.json", doc}}));
  expect_rendered(page, 3);
  // The change point's turn and the telemetry of that turn, as readable cells.
  EXPECT_NE(page.dom.find("Change points and the telemetry of their turn"), std::string::npos);
  EXPECT_NE(page.dom.find("cluster0 (big) 70% of max"), std::string::npos);
  EXPECT_NE(page.dom.find("cpu-thermal 61.25 \u00b0C"), std::string::npos);
  EXPECT_NE(page.dom.find("rests on:"), std::string::npos);  // the QES table
  const std::string ms = body_attr(page.dom, "data-render-ms");
  ASSERT_FALSE(ms.empty());
  std::printf("3x50x3 session: rendered in %s ms in the page\n", ms.c_str());
  EXPECT_LT(std::stol(ms), 2000);
}

TEST_F(Browser, HundredThousandPointsDecimate) {
  const auto page = load_in_chromium("bench-100k", report::render_html_report({{"big.json", report_test::bench_document(50, 2000, true)}}));
  expect_rendered(page, 9);
  for (const ChartState& c : charts(page.dom)) {
    if (c.id == "in0-decode-latency") {
      EXPECT_EQ(c.points, 100000);
      EXPECT_LT(c.drawn, 5000);  // one mark per pixel column, not one per point
    }
  }
  std::printf("100k points: rendered in %s ms in the page\n", body_attr(page.dom, "data-render-ms").c_str());
}

TEST_F(Browser, DoctorAndComparison) {
  const auto doctor = load_in_chromium("doctor", report::render_html_report({{"doctor.json", report_test::doctor_document()}}));
  expect_rendered(doctor, 1);
  EXPECT_NE(doctor.dom.find("drop --cpu-variant sse42"), std::string::npos);
  // A --tune search as an earlier release wrote it (no kind, no version): its values tried
  // and the best configuration.
  const json candidates = {{{"value", "8"}, {"rates", {{"prefill_tokens_per_s", 10.0}, {"decode_tokens_per_s", 2.0}}}, {"turn_s", 3.1}},
                           {{"value", "2"}, {"rates", {{"prefill_tokens_per_s", 40.0}, {"decode_tokens_per_s", 8.0}}}, {"turn_s", 0.9}}};
  const json search = {{"tune",
                        {{"model", "m.gguf"}, {"start", {"-t", "8"}}, {"best", {"-t", "2"}}, {"gain", 3.4},
                         {"edgeprobe_command", "edgeprobe bench -m m.gguf -t 2"},
                         {"steps", {{{"setting", "threads"}, {"chosen", "2"}, {"error", ""}, {"candidates", candidates}}}}}}};
  const auto tune = load_in_chromium("tune", report::render_html_report({{"tune.json", search}}));
  expect_rendered(tune, 0);
  EXPECT_NE(tune.dom.find("edgeprobe bench -m m.gguf -t 2"), std::string::npos) << tune.dom;
  EXPECT_NE(tune.dom.find(">kept<"), std::string::npos) << tune.dom;
  const json a = report_test::bench_document(5, 32, true, "a.gguf", "aaaa");
  const json b = report_test::bench_document(5, 32, true, "b.gguf", "bbbb");
  const auto cmp = load_in_chromium("comparison", report::render_html_report({{"a.json", a}, {"b.json", b}}));
  expect_rendered(cmp, 10);
  EXPECT_NE(cmp.dom.find("NOT COMPARABLE"), std::string::npos);
  EXPECT_NE(cmp.dom.find("data-chart=\"cmp-latency-cdf\""), std::string::npos);
}

TEST_F(Browser, ExplanationDrawsItsWaterfallAndEscapesNames) {
  const std::string hostile = "<img src=x onerror=\"document.body.dataset.pwned=3\">";
  const json a = report_test::bench_document(5, 32, false, "a.gguf", "aaaa");
  json b = a;
  b["provenance"]["device"]["id"] = "dev-other";
  b["provenance"]["device"]["hostname"] = hostile;
  for (auto& r : b["results"])
    for (auto& rep : r["repetitions"])
      if (rep["decode_tokens_per_s"].is_number()) rep["decode_tokens_per_s"] = rep["decode_tokens_per_s"].get<double>() / 3;
  const auto page = load_in_chromium("explain", report::render_html_report({{"a.json", a}, {hostile, b}}));
  expect_rendered(page, 2);
  EXPECT_NE(page.dom.find("data-chart=\"explain-1-decode\""), std::string::npos);
  EXPECT_NE(page.dom.find("hardware line"), std::string::npos);
  EXPECT_EQ(page.dom.find("data-pwned"), std::string::npos);
  EXPECT_NE(page.dom.find("&lt;img src=x onerror="), std::string::npos);
}

TEST_F(Browser, HostileDataRendersAsTextAndRunsNoScript) {
  const std::string hostile = "</script><script>document.body.dataset.pwned=1</script><!-- \"'"
                              "<img src=x onerror=\"document.body.dataset.pwned=2\">\xe2\x80\xa8 \xff\xfe";
  const auto page = load_in_chromium("hostile", report::render_html_report(
      {{hostile, report_test::bench_document(2, 8, false, hostile + ".gguf")},
       {"doctor", report_test::doctor_document(hostile)}}));
  expect_rendered(page, 2);
  EXPECT_EQ(page.dom.find("data-pwned"), std::string::npos);
  EXPECT_EQ(page.dom.find("<img"), std::string::npos);
  EXPECT_NE(page.dom.find("&lt;img src=x onerror="), std::string::npos);  // shown, as text
}

TEST_F(Browser, ABrokenPageIsCaught) {
  // The checks above can fail: a page whose data block is not JSON reports its error.
  std::string page = report::render_html_report({{"b.json", report_test::bench_document(2, 4, false)}});
  page.replace(page.find("{\"comparisons\""), 1, "{{");
  const auto loaded = load_in_chromium("broken", page);
  EXPECT_EQ(body_attr(loaded.dom, "data-render"), "failed");
  EXPECT_EQ(body_attr(loaded.dom, "data-errors"), "1");
}

// Issue 24 in the page: a ceiling the run beat is "ceiling suspect" (and not drawn), a figure
// not measured is "—" (never 0), and two models of one name are told apart by their files.
TEST_F(Browser, NotMeasuredIsADashAndABeatenCeilingIsSuspect) {
  json doc = report_test::bench_document(1, 8, false);
  auto second = doc["provenance"]["models"][0];
  second["path"] = "/models/b/other.gguf";
  doc["provenance"]["models"].push_back(second);
  json& pp = doc["results"][0];
  pp["load"] = {{"cold_ms", 800.0}, {"warm_ms", {{"n", 0}, {"median", nullptr}}}, {"samples_ms", {800.0}}};
  pp["roofline"] = {{"prefill_ceiling_tokens_per_s", 0.09}, {"prefill_efficiency", nullptr},
                    {"prefill_ceiling_suspect", true}, {"prefill_over_ceiling", 711.0},
                    {"remeasure_command", "edgeprobe probe -m model.gguf --refresh --replace"}};
  doc["results"][1]["model_index"] = 1;
  doc["results"][1]["config"]["n_depth"] = 32;
  doc["results"][1]["test"] = "tg8 @ d32";
  const auto page = load_in_chromium("bench-not-measured", report::render_html_report({{"b.json", doc}}));
  expect_rendered(page, 3);
  EXPECT_NE(page.dom.find("ceiling suspect (re-measure: edgeprobe probe -m model.gguf --refresh --replace)"),
            std::string::npos);
  EXPECT_EQ(page.dom.find("71100%"), std::string::npos);
  EXPECT_NE(page.dom.find("<td>other.gguf</td>"), std::string::npos);
  // The warm load of the first test: the summary's tenth cell ("load warm ms") is a dash.
  const std::regex row("<tr><td>model.gguf</td><td>pp128</td>((<td[^>]*>[^<]*</td>){8})<td[^>]*>([^<]*)</td>");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(page.dom, m, row)) << page.dom.substr(0, 4000);
  EXPECT_EQ(m[3].str(), "\u2014");
  // Each parameter once in a label: "tg8 @ d32 t2", not "tg8 @ d32 t2 d32".
  EXPECT_EQ(page.dom.find("d32 t2 d32"), std::string::npos);
  EXPECT_NE(page.dom.find("other.gguf tg8 @ d32 t2"), std::string::npos);
}

// A run that offloaded: the placement table says where the layers and nodes went, what
// fell back to the CPU, and whose ceilings judged each test; device names stay text.
TEST_F(Browser, OffloadedRunsShowTheirPlacementAndTheGpusCeilings) {
  json doc = report_test::bench_document(3, 8, false);
  const std::string hostile = "Vulkan0 (<img src=x onerror=\"document.body.dataset.pwned=1\">) - 2048 MiB free";
  json& r = doc["results"].back();
  r["config"]["n_gpu_layers"] = 99;
  r["placement"] = {{"devices", {hostile}},
                    {"layers_offloaded", 5},
                    {"layers_total", 5},
                    {"weights_moved", {"tensor 'blk.0.ffn_up.weight' (tq1_0) (and 27 others) cannot be used with preferred "
                                       "buffer type Vulkan0, using CPU instead"}},
                    {"graph_splits", {{"prefill", 2}, {"decode", 26}}},
                    {"decode", {{"n_tokens", 1},
                                {"backends", {{{"backend", "Vulkan0"}, {"nodes", 45}, {"weight_bytes", 1000}},
                                              {{"backend", "CPU"}, {"nodes", 37}, {"weight_bytes", 750}}}},
                                {"cpu_nodes", {{{"op", "MUL_MAT"}, {"tensor", "ffn_up"}, {"count", 4}, {"weight_bytes", 400}},
                                               {{"op", "GET_ROWS"}, {"tensor", "token_embd"}, {"count", 1}, {"weight_bytes", 0}}}}}}};
  ASSERT_TRUE(r["roofline"].is_object());
  r["roofline"]["ceiling_device"] = "Vulkan0";
  const auto page = load_in_chromium("placement", report::render_html_report({{"gpu.json", doc}}));
  expect_rendered(page, 1);
  EXPECT_NE(page.dom.find("<h3>Placement: where the model and its compute lived</h3>"), std::string::npos);
  EXPECT_NE(page.dom.find("<td>5 / 5</td>"), std::string::npos);
  EXPECT_NE(page.dom.find("<td>Vulkan0 45, CPU 37</td>"), std::string::npos);
  EXPECT_NE(page.dom.find("<td>MUL_MAT on ffn_up x4</td>"), std::string::npos);  // GET_ROWS reads no weights
  EXPECT_NE(page.dom.find("<td>2 / 26</td>"), std::string::npos);
  EXPECT_NE(page.dom.find("using CPU instead"), std::string::npos);
  EXPECT_EQ(page.dom.find("data-pwned"), std::string::npos);
  EXPECT_NE(page.dom.find("&lt;img src=x onerror="), std::string::npos);
  EXPECT_NE(page.dom.find("ceilings of Vulkan0, the GPU that held the model"), std::string::npos);
  // A CPU-only report has no such table.
  const auto cpu = load_in_chromium("no-placement", report::render_html_report({{"cpu.json", report_test::bench_document(3, 8, false)}}));
  EXPECT_EQ(cpu.dom.find("<h3>Placement: where the model"), std::string::npos);
}
