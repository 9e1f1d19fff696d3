// `edgeprobe explain` through the binary on real runs of the tiny synthesized model: the
// identity and the table in every format, and each refusal as one line with exit 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/run_process.h"

using edgeprobe::test_support::read_file;
using edgeprobe::test_support::run_edgeprobe;
using edgeprobe::test_support::TempDir;
using edgeprobe::test_support::tiny_model;
using nlohmann::json;

namespace {

void bench_run_to(const std::string& path, const std::vector<std::string>& extra) {
  std::vector<std::string> args{"bench", "-p", "16", "-n", "8", "-r", "2", "-t", "1", "--no-store",
                                "-o", "json", "--output", path, "-q"};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = run_edgeprobe(args, 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

void expect_refused(const std::vector<std::string>& args, const std::string& fragment) {
  const auto r = run_edgeprobe(args, 60);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

}  // namespace

TEST(ExplainCli, TwoRunsOfOneModelMultiplyOutInEveryFormat) {
  TempDir dir;
  bench_run_to(dir.file("a.json"), {"-m", tiny_model()});
  bench_run_to(dir.file("b.json"), {"-m", tiny_model()});
  const auto j = run_edgeprobe({"explain", dir.file("a.json"), dir.file("b.json"), "-o", "json"}, 60);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json e = json::parse(j.out);
  EXPECT_EQ(e["kind"], "explain");
  EXPECT_TRUE(e["same_device"].get<bool>());
  ASSERT_EQ(e["phases"].size(), 3u);  // prefill, decode and the first load
  for (const auto& p : e["phases"]) {
    double product = 1;
    for (const auto& f : p["factors"]) product *= f["factor"].get<double>();
    EXPECT_NEAR(product / p["ratio"].get<double>(), 1, 1e-9) << p.dump(1);
    EXPECT_EQ(p["factors"][0]["id"], "hardware");
    EXPECT_EQ(p["factors"].back()["id"], "unexplained");
    // The ceilings came from one cache (one device, one build): the same on both sides.
    EXPECT_NEAR(p["factors"][0]["factor"].get<double>(), 1.0, 1e-9) << p["factors"][0].dump();
  }
  const auto md = run_edgeprobe({"explain", dir.file("a.json"), dir.file("b.json")}, 60);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("## decode: B is"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("**product**"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("hardware line"), std::string::npos) << md.out;
  const auto csv = run_edgeprobe({"explain", dir.file("a.json"), dir.file("b.json"), "-o", "csv"}, 60);
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("phase,factor,side,value,basis,detail,fix\n", 0), 0u) << csv.out;
  EXPECT_NE(csv.out.find("\ndecode,hardware,,"), std::string::npos) << csv.out;
  // jsonl: the same rows, one object a line.
  const auto jsonl = run_edgeprobe({"explain", dir.file("a.json"), dir.file("b.json"), "-o", "jsonl"}, 60);
  ASSERT_EQ(jsonl.exit_code, 0) << jsonl.err;
  EXPECT_EQ(std::count(jsonl.out.begin(), jsonl.out.end(), '\n'), std::count(csv.out.begin(), csv.out.end(), '\n') - 1);
  EXPECT_EQ(json::parse(jsonl.out.substr(0, jsonl.out.find('\n')))["phase"], "prefill") << jsonl.out;
  // --output writes the file and nothing to stdout.
  const auto file = run_edgeprobe({"explain", dir.file("a.json"), dir.file("b.json"), "-o", "json", "--output", dir.file("e.json")}, 60);
  ASSERT_EQ(file.exit_code, 0) << file.err;
  EXPECT_TRUE(file.out.empty());
  EXPECT_EQ(json::parse(read_file(dir.file("e.json")))["kind"], "explain");
}

TEST(ExplainCli, RunsOfDifferentModelsAreRefusedWithSameShapeSuggested) {
  TempDir dir;
  bench_run_to(dir.file("q4.json"), {"-m", tiny_model("q4_0")});
  bench_run_to(dir.file("q8.json"), {"-m", tiny_model("q8_0")});
  expect_refused({"explain", dir.file("q4.json"), dir.file("q8.json")}, "--same-shape");
  // Another quantisation is not the same shape either.
  expect_refused({"explain", dir.file("q4.json"), dir.file("q8.json"), "--same-shape"}, "quant");
}

TEST(ExplainCli, ARunWithoutCeilingsOnAnotherDeviceNamesTheProbe) {
  TempDir dir;
  bench_run_to(dir.file("a.json"), {"-m", tiny_model()});
  bench_run_to(dir.file("b.json"), {"-m", tiny_model(), "--ceilings", "off"});
  json other = json::parse(read_file(dir.file("b.json")));
  other["provenance"]["device"]["id"] = "dev-another";
  edgeprobe::test_support::write_file(dir.file("other.json"), other.dump());
  expect_refused({"explain", dir.file("a.json"), dir.file("other.json")}, "edgeprobe probe -m MODEL");
  // On the same device the hardware is the same: no ceilings needed.
  const auto same = run_edgeprobe({"explain", dir.file("a.json"), dir.file("b.json"), "-o", "json"}, 60);
  EXPECT_EQ(same.exit_code, 0) << same.err;
}

TEST(ExplainCli, UnknownRunsAndOtherKindsAreOneLine) {
  TempDir dir;
  const std::string db = dir.file("store.db");
  bench_run_to(dir.file("a.json"), {"-m", tiny_model()});
  // A store with one run in it: an id it does not hold is refused by number.
  const auto stored = run_edgeprobe({"bench", "-m", tiny_model(), "-p", "16", "-n", "4", "-r", "1", "-t", "1", "--db", db, "-q",
                                     "-o", "json", "--ceilings", "off"}, 300);
  ASSERT_EQ(stored.exit_code, 0) << stored.err;
  expect_refused({"explain", "1", "99", "--db", db}, "99");
  expect_refused({"explain", dir.file("a.json"), dir.file("missing.json")}, "missing.json");
  edgeprobe::test_support::write_file(dir.file("session.json"),
                                      R"({"schema_version": 2, "kind": "session", "provenance": {}, "configs": []})");
  expect_refused({"explain", dir.file("a.json"), dir.file("session.json")}, "bench or doctor");
  expect_refused({"explain", dir.file("a.json"), dir.file("a.json"), "-o", "xml"}, "unknown output format 'xml'");
}
