// Structure of the HTML report (not pixels): the page is self-contained, its data block
// parses back to exactly the data, and hostile strings cannot leave the data block.
#include <gtest/gtest.h>

#include "core/error.h"
#include "report/fixtures.h"
#include "report/html_report.h"
#include "result/migrate.h"
#include "support/run_process.h"

using namespace edgeprobe;
using nlohmann::json;

namespace {

const std::string kOpen = "<script type=\"application/json\" id=\"edgeprobe-data\">";

// The text between the data block's tags, as the browser's textContent would see it.
std::string data_block(const std::string& page) {
  const size_t start = page.find(kOpen);
  EXPECT_NE(start, std::string::npos);
  const size_t end = page.find("</script>", start);
  EXPECT_NE(end, std::string::npos);
  return page.substr(start + kOpen.size(), end - start - kOpen.size());
}

}  // namespace

TEST(HtmlReport, KindsAreRecognized) {
  EXPECT_EQ(result::document_kind(report_test::bench_document(2, 4, false)), "bench");
  EXPECT_EQ(result::document_kind(report_test::session_document(1, 2, 2, 4)), "session");
  EXPECT_EQ(result::document_kind(report_test::doctor_document()), "doctor");
  EXPECT_EQ(result::document_kind(json{{"schema_version", 2}}), "");
  // The kind a document names wins over its shape; one it does not know is no kind.
  EXPECT_EQ(result::document_kind(json{{"kind", "session"}, {"results", json::array()}}), "session");
  EXPECT_EQ(result::document_kind(json{{"kind", "lab"}, {"results", json::array()}}), "");
  // Documents written before bench and doctor named their kind are told by their shape.
  json old_bench = report_test::bench_document(2, 4, false);
  old_bench.erase("kind");
  EXPECT_EQ(result::document_kind(old_bench), "bench");
  json old_doctor = report_test::doctor_document();
  old_doctor.erase("kind");
  EXPECT_EQ(result::document_kind(old_doctor), "doctor");
  EXPECT_THROW(report::render_html_report({{"x.json", json{{"a", 1}}}}), Error);
  EXPECT_THROW(report::render_html_report({}), Error);
}

TEST(HtmlReport, PageIsSelfContainedWithOneParsableDataBlock) {
  const json doc = report_test::bench_document(3, 16, true);
  const std::string page = report::render_html_report({{"bench.json", doc}});
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(test_support::count_of(page, kOpen), 1u);
  EXPECT_EQ(test_support::count_of(page, "<script"), 2u);  // the data block and the inline script, nothing loaded
  EXPECT_EQ(test_support::count_of(page, "<style>"), 1u);
  EXPECT_EQ(page.find("src="), std::string::npos);
  EXPECT_EQ(page.find("<link"), std::string::npos);
  EXPECT_EQ(page.find("http://"), std::string::npos);
  EXPECT_NE(page.find("default-src 'none'"), std::string::npos);  // the page may not fetch anything
  EXPECT_NE(page.find("<main id=\"report\">"), std::string::npos);
  EXPECT_NE(page.find("class EpChart"), std::string::npos);
  const json data = json::parse(data_block(page));
  EXPECT_EQ(data, report::html_report_data({{"bench.json", doc}}));
  ASSERT_EQ(data["inputs"].size(), 1u);
  EXPECT_EQ(data["inputs"][0]["kind"], "bench");
  EXPECT_EQ(data["inputs"][0]["document"], doc);
  EXPECT_TRUE(data["comparisons"].empty());
}

TEST(HtmlReport, HostileStringsStayInsideTheDataBlock) {
  const std::string hostile = "</script><script>document.body.dataset.pwned=1</script><!-- \"'<img src=x onerror=alert(1)>"
                              "\xe2\x80\xa8\xe2\x80\xa9 & \xff\xfe bytes";
  const json bench = report_test::bench_document(2, 4, false, "/models/" + hostile + ".gguf");
  const json doctor = report_test::doctor_document(hostile);
  const std::string page = report::render_html_report({{hostile, bench}, {"doctor " + hostile, doctor}});
  const std::string block = data_block(page);
  // Nothing in the block can end the element, open a comment or a tag, or end a JS line.
  for (const char* bad : {"<", ">", "&", "\xe2\x80\xa8", "\xe2\x80\xa9", "\xff"}) {
    EXPECT_EQ(block.find(bad), std::string::npos) << bad;
  }
  EXPECT_EQ(test_support::count_of(page, "<script"), 2u);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  // JSON.parse gives the strings back: the valid UTF-8 as it was, the bad bytes as U+FFFD.
  const json data = json::parse(block);
  const std::string label = data["inputs"][0]["label"];
  EXPECT_EQ(label.substr(0, 80), hostile.substr(0, 80));
  EXPECT_NE(label.find("\xe2\x80\xa8"), std::string::npos);
  EXPECT_NE(label.find("\xef\xbf\xbd"), std::string::npos);
  EXPECT_EQ(label.find("\xff"), std::string::npos);
}

TEST(HtmlReport, TwoInputsAreComparedAndMismatchesNamed) {
  const json a = report_test::bench_document(5, 16, false, "a.gguf", "aaaa");
  const json b = report_test::bench_document(5, 16, false, "b.gguf", "bbbb");
  const json data = report::html_report_data({{"a", a}, {"b", b}, {"a again", a}});
  ASSERT_EQ(data["comparisons"].size(), 2u);
  const json& differ = data["comparisons"][0]["report"];
  EXPECT_FALSE(differ["comparable"].get<bool>());
  EXPECT_NE(differ["mismatches"].dump().find("sha256"), std::string::npos);
  const json& same = data["comparisons"][1]["report"];
  EXPECT_TRUE(same["comparable"].get<bool>());
  // The page embeds compare -o json's object: the settings that differ, the verdict rule.
  EXPECT_TRUE(same["differences"].empty()) << same["differences"].dump();
  EXPECT_EQ(same["rule"]["min_samples_per_side"], 4);
  bool decode_ratio_is_one = false;
  for (const json& m : same["metrics"]) {
    if (m["metric"] == "decode_tokens_per_s") decode_ratio_is_one = m["ratio"].get<double>() == 1.0;
  }
  EXPECT_TRUE(decode_ratio_is_one);
}

TEST(HtmlReport, FullSessionReportStaysUnderFiveMegabytes) {
  // 3 rounds x 50 conversations x 3 turns of 128 decode steps each, with telemetry.
  const json doc = report_test::session_document(3, 50, 3, 128, std::string(400, 'x'));
  const std::string page = report::render_html_report({{"session.json", doc}});
  std::printf("3x50x3 session report: %zu bytes\n", page.size());
  EXPECT_LT(page.size(), 5u * 1024 * 1024);
  EXPECT_FALSE(doc["configs"][0]["analysis"]["stability"]["change_points_at"].empty());
}

TEST(HtmlReport, TwoRunsOfOneModelAreExplainedAndOthersSayWhyNot) {
  const json a = report_test::bench_document(5, 16, false, "a.gguf", "aaaa");
  json slow = a;
  slow["provenance"]["device"]["id"] = "dev-slower";
  for (auto& r : slow["results"]) {
    for (auto& rep : r["repetitions"])
      for (const char* k : {"prefill_tokens_per_s", "decode_tokens_per_s"})
        if (rep[k].is_number()) rep[k] = rep[k].get<double>() / 2;
    for (const char* k : {"prefill_ceiling_tokens_per_s", "decode_ceiling_tokens_per_s"})
      if (r["roofline"].contains(k)) r["roofline"][k] = r["roofline"][k].get<double>() / 2;
  }
  const json other = report_test::bench_document(5, 16, false, "b.gguf", "bbbb");
  const json data = report::html_report_data({{"a", a}, {"slow", slow}, {"other", other}});
  ASSERT_EQ(data["explanations"].size(), 2u);
  const json& e = data["explanations"][0]["explanation"];
  ASSERT_EQ(e["kind"], "explain") << data["explanations"][0].dump();
  for (const auto& p : e["phases"]) EXPECT_NEAR(p["factors"][0]["factor"].get<double>(), 0.5, 1e-9) << p.dump();
  EXPECT_NE(data["explanations"][1]["error"].get<std::string>().find("different model files"), std::string::npos);
}
