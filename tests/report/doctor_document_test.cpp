// Doctor's result document (result/doctor.h): a diagnosis and a --tune search read back
// into the structs they were written from, documents of earlier releases read as the same
// results, and a document of neither shape is refused in one line.
#include <gtest/gtest.h>

#include <sstream>

#include "analysis/explain.h"
#include "core/error.h"
#include "report/doctor_reporters.h"
#include "report/fixtures.h"
#include "result/doctor.h"
#include "result/migrate.h"

using namespace edgeprobe;
using nlohmann::json;

namespace {

result::PairedEstimate estimate(double median) { return {4, median, median * 0.9, median * 1.1, 0.875}; }

// Every field set, each optional both present and absent somewhere.
result::DoctorReport full_diagnosis() {
  result::DoctorReport r;
  r.model = "/models/m.gguf";
  r.config = {"-t", "2", "--cpu-variant", "sse42"};
  r.n_prompt = 128, r.n_gen = 32, r.repetitions = 3;
  r.findings.push_back({"kernel.isa_fallback", result::Severity::kCritical, "sse42 on an AVX2 CPU", {"loaded: sse42"},
                        "prefill+decode", 1.8, "measured: haswell against sse42", "drop --cpu-variant",
                        json{{"measured", {{"phases", {{"decode", result::to_json(estimate(1.7))}}}}}}});
  r.findings.push_back({"memory.footprint", result::Severity::kInfo, "memory as declared", {}, "memory", std::nullopt, "", "", json::object()});
  result::DoctorChild primary{"as configured", r.config, "edgeprobe run --plan - <<'EOF'", "", 12.5, 20.1, 0.02, std::nullopt, 0.4, {1.1, 1.2}};
  result::DoctorChild failed{"best CPU variant", {"-t", "2"}, "edgeprobe run --plan -", "exit 3", 1.5, 0.2, std::nullopt, 3.0, std::nullopt, {}};
  r.runs = {primary, failed};
  result::PairComparison c;
  c.what = "cpu variant";
  c.a_label = "sse42", c.b_label = "haswell";
  c.pairs = {{2.0, 1.1, 1.82, false, ""}, {2.1, 1.2, 1.75, true, "the reference kernel moved 14 %"}};
  c.estimate = estimate(1.8);
  c.decode_estimate = estimate(1.7);
  c.b_ceilings = {{"decode_ceiling_tokens_per_s", 90.5}};
  c.includes_disturbed = true;
  c.verdict = result::PairVerdict::kFaster;
  c.first_estimate = estimate(0.98);
  c.first_verdict = result::PairVerdict::kSame;
  c.speed_variation = 0.14;
  c.wall_s = 30.5;
  // The thread pairs, measured with the better variant the first comparison found.
  result::PairComparison threads;
  threads.what = "threads";
  threads.a_label = "-t 2, haswell", threads.b_label = "-t 1, haswell";
  threads.after = {"cpu variant"};
  threads.pairs = {{1.5, 1.0, 1.5, false, ""}};
  threads.verdict = result::PairVerdict::kInconclusive;
  r.comparisons = {c, threads};
  r.reference_kernel_best_ms = 0.93;
  r.speed_variation = 0.21;
  r.budget_s = 45;
  r.emulated = "qemu-user";
  r.wall_s = 75.25;
  r.primary = result::bench_report_from_json(report_test::bench_document(3, 4, true));
  return r;
}

result::TuneReport full_search() {
  result::TuneReport t;
  t.model = "/models/m.gguf";
  t.n_prompt = 128, t.n_gen = 32, t.repetitions = 3;
  t.start = {"-t", "8"};
  t.best = {"-t", "2", "-C", "0x3"};
  t.steps = {{"threads", {{"8", {10.0, 2.0}, 3.1}, {"2", {40.0, 8.0}, 0.9}}, "2", ""},
             {"poll", {{"50", {std::nullopt, 8.1}, std::nullopt}}, "50", "the child exited with 3"}};
  t.start_rounds = {{10.5, 2.1}};
  t.best_rounds = {{41.0, 8.2}};
  t.gain = 3.4;
  t.edgeprobe_command = "edgeprobe bench -m /models/m.gguf -t 2 -C 0x3";
  t.llama_bench_command = "llama-bench -m /models/m.gguf -t 2 -C 0x3";
  t.wall_s = 120;
  return t;
}

std::string as(const result::DoctorResult& r, const std::string& format) {
  std::ostringstream out;
  report::write_doctor_report(r, format, out);
  return out.str();
}

}  // namespace

TEST(DoctorDocument, ADiagnosisLoadsBackIntoTheSameStructs) {
  const json written = result::to_json(full_diagnosis());
  EXPECT_EQ(result::document_kind(written), "doctor");
  const auto loaded = result::doctor_result_from_json(written);
  ASSERT_TRUE(std::holds_alternative<result::DoctorReport>(loaded));
  const auto& d = std::get<result::DoctorReport>(loaded);
  EXPECT_EQ(d.findings, full_diagnosis().findings);
  EXPECT_EQ(d.runs, full_diagnosis().runs);
  EXPECT_EQ(d.comparisons, full_diagnosis().comparisons);
  EXPECT_EQ(result::to_json(loaded), written);
}

TEST(DoctorDocument, ASearchLoadsBackAndEveryFormatHasARowPerValueTried) {
  const json written = result::to_json(full_search());
  EXPECT_EQ(written["kind"], "doctor");
  const auto loaded = result::doctor_result_from_json(written);
  ASSERT_TRUE(std::holds_alternative<result::TuneReport>(loaded));
  EXPECT_EQ(std::get<result::TuneReport>(loaded).steps, full_search().steps);
  EXPECT_EQ(result::to_json(loaded), written);
  const std::string md = as(loaded, "md");
  EXPECT_EQ(md.rfind("edgeprobe doctor --tune: m.gguf · reference turn pp128 + tg32 · 120 s\n", 0), 0u) << md;
  EXPECT_NE(md.find("poll: not measured: the child exited with 3\n"), std::string::npos) << md;
  EXPECT_NE(md.find("best: -t 2 -C 0x3\n"), std::string::npos) << md;
  EXPECT_NE(md.find("x3.40 per turn"), std::string::npos) << md;
  EXPECT_NE(md.find("reproduce: edgeprobe bench -m /models/m.gguf -t 2 -C 0x3\n"), std::string::npos) << md;
  EXPECT_EQ(as(loaded, "csv"),
            "schema_version,model,setting,value,prefill_tokens_per_s,decode_tokens_per_s,turn_s,chosen,error\n"
            "2,/models/m.gguf,threads,8,10,2,3.1,0,\n"
            "2,/models/m.gguf,threads,2,40,8,0.9,1,\n"
            "2,/models/m.gguf,poll,50,,8.1,,1,the child exited with 3\n");
  std::istringstream jsonl(as(loaded, "jsonl"));
  int lines = 0;
  for (std::string line; std::getline(jsonl, line); ++lines) EXPECT_EQ(json::parse(line)["kind"], "doctor_tune_candidate");
  EXPECT_EQ(lines, 3);
}

// Earlier releases wrote a search as {"tune": ...} with no kind or version, and a
// diagnosis without the comparisons' phases: both read, and are written in today's shape.
TEST(DoctorDocument, DocumentsOfEarlierReleasesReadAsTheSameResults) {
  json old_search = result::to_json(full_search());
  old_search.erase("kind");
  old_search.erase("schema_version");
  old_search["tune"].erase("tests");
  EXPECT_EQ(result::document_kind(old_search), "doctor");
  const auto search = result::doctor_result_from_json(old_search);
  ASSERT_TRUE(std::holds_alternative<result::TuneReport>(search));
  EXPECT_EQ(result::to_json(search)["schema_version"], 2);
  EXPECT_EQ(result::to_json(search)["kind"], "doctor");
  EXPECT_TRUE(result::to_json(search)["tune"]["tests"].is_null()) << "not recorded is not zero";
  EXPECT_EQ(as(search, "md").rfind("edgeprobe doctor --tune: m.gguf · 120 s\n", 0), 0u) << as(search, "md");

  json old_diagnosis = result::to_json(full_diagnosis());
  old_diagnosis.erase("kind");
  for (auto& c : old_diagnosis["doctor"]["comparisons"]) {
    c.erase("phases");
    c.erase("b_ceilings");
    c.erase("after");
  }
  EXPECT_EQ(result::document_kind(old_diagnosis), "doctor");
  const auto d = std::get<result::DoctorReport>(result::doctor_result_from_json(old_diagnosis));
  EXPECT_FALSE(d.comparisons[0].decode_estimate);
  EXPECT_TRUE(d.comparisons[0].b_ceilings.is_null());
  EXPECT_TRUE(d.comparisons[1].after.empty()) << "not recorded reads as measured as configured";
  EXPECT_EQ(d.findings, full_diagnosis().findings);
}

TEST(DoctorDocument, ADocumentOfNeitherShapeIsBadInput) {
  for (const json& j : {json{{"kind", "doctor"}}, json{{"kind", "doctor"}, {"doctor", "findings"}}, json::array()}) {
    try {
      result::doctor_result_from_json(j);
      ADD_FAILURE() << j.dump();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
      EXPECT_NE(std::string(e.what()).find("'edgeprobe doctor -o json'"), std::string::npos) << e.what();
    }
  }
}

TEST(DoctorDocument, ExplainRefusesASearchInOneLine) {
  try {
    analysis::explain_side(result::to_json(full_search()), "tune.json");
    ADD_FAILURE() << "a search has no run to explain";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_EQ(std::string(e.what()), "tune.json: a doctor --tune result keeps no run of the model; explain takes a bench or doctor result");
  }
}
