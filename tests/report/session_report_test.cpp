// Session and doctor results go through the same formats as bench (md, csv, json, jsonl),
// each compared byte for byte with a golden file; EDGEPROBE_UPDATE_GOLDEN=1 rewrites them
// after an intended change (then review the diff).
#include <gtest/gtest.h>

#include <sstream>

#include "analysis/session_analysis.h"
#include "core/error.h"
#include "doctor/finding.h"
#include "report/doctor_reporters.h"
#include "report/session_reporters.h"
#include "result/session.h"
#include "support/run_process.h"

using namespace edgeprobe;
using nlohmann::json;

namespace {

json turn(int round, const std::string& conv, int index, double ttft_ms, double decode_tps) {
  return {{"round", round},
          {"conversation_id", conv},
          {"turn_index", index},
          {"prompt_tokens", 40 + index},
          {"context_tokens", 100 * (index + 1)},
          {"generated_tokens", 16},
          {"stop_reason", "max_tokens"},
          {"ttft_ms", ttft_ms},
          {"prefill_ms", ttft_ms - 5},
          {"prefill_tokens_per_s", 400.0},
          {"decode_tokens_per_s", decode_tps},
          {"e2e_ms", ttft_ms + 15 * 1000.0 / decode_tps},
          {"decode_step_ms", json::array()},
          {"reply", "a \"quoted\", reply\nwith a comma"},
          {"telemetry", nullptr},
          {"missed_frame_share_prefill", 0.0},
          {"missed_frame_share_decode", nullptr}};
}

result::SessionReport sample_session() {
  result::SessionReport r;
  r.run_id = 7;
  r.provenance.edgeprobe_version = "0.1.0";
  r.provenance.engine.name = "llama.cpp";
  r.provenance.engine.kind = "in-process";
  r.provenance.engine.cpu_variant = "haswell";
  r.provenance.engine.backends = {"CPU"};
  r.provenance.build = {"e1f2397abcde", false, "Release", "GNU 12.2.0"};
  r.provenance.device.id = "dev-0123456789abcdef";
  r.provenance.device.cpu_model = "Example CPU";
  r.provenance.started_at_utc = "2026-11-29T10:00:00Z";
  r.telemetry_unavailable = {"thermal: no /sys/class/thermal"};
  result::SessionConfigResult c;
  c.ordinal = 0;
  c.config.model_path = "model.gguf";
  c.config.max_tokens = 16;
  c.config.n_threads = 2;
  for (const json& t : {turn(0, "c01", 0, 250, 20), turn(0, "c01", 1, 120, 19.5), turn(0, "c02", 0, 260, 20.5)})
    c.turns.push_back(result::turn_from_json(t));
  json failed = turn(0, "c02", 1, 0, 0);
  failed["error"] = {{"kind", "environment"}, {"message", "llama_decode failed at step 3"}};
  failed["e2e_ms"] = 0.0;
  c.turns.push_back(result::turn_from_json(failed));
  c.analysis = analysis::analyse_session_turns(c.turns);
  r.configs.push_back(c);
  return r;
}

json sample_doctor() {
  return {{"schema_version", result::kSchemaVersion},
          {"doctor",
           {{"model", "model.gguf"},
            {"config", {"-t", "2"}},
            {"healthy", false},
            {"findings",
             {{{"id", "kernel.isa_fallback"},
               {"severity", "critical"},
               {"title", "the sse42 variant runs on a CPU with AVX2, \"fix\" it"},
               {"evidence", {"loaded: sse42", "CPU has: AVX2, FMA"}},
               {"affects", "prefill+decode"},
               {"speedup", 2.5},
               {"speedup_basis", "measured"},
               {"speedup_detail", "measured: haswell against sse42, median of 6 interleaved pairs x2.50"},
               {"fix", "drop --cpu-variant sse42"},
               {"data", json::object()}},
              {{"id", "memory.footprint"},
               {"severity", "info"},
               {"title", "memory as declared"},
               {"evidence", json::array()},
               {"affects", "memory"},
               {"speedup", nullptr},
               {"speedup_basis", nullptr},
               {"speedup_detail", nullptr},
               {"fix", ""},
               {"data", json::object()}}}}}}};
}

void expect_golden(const std::string& name, const std::string& actual) {
  const std::string path = std::string(EDGEPROBE_TEST_DATA_DIR) + "/golden/" + name;
  if (const char* update = std::getenv("EDGEPROBE_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    test_support::write_file(path, actual);
    GTEST_SKIP() << "rewrote " << path;
  }
  EXPECT_EQ(actual, test_support::read_file(path)) << "output differs from " << path;
}

std::string session_as(const std::string& format) {
  std::ostringstream out;
  report::write_session_report(sample_session(), format, out);
  return out.str();
}

std::string doctor_as(const std::string& format) {
  std::ostringstream out;
  report::write_doctor_report(result::doctor_result_from_json(sample_doctor()), format, out);
  return out.str();
}

}  // namespace

TEST(SessionReporters, MarkdownMatchesGolden) { expect_golden("session.md", session_as("md")); }
TEST(SessionReporters, CsvMatchesGolden) { expect_golden("session.csv", session_as("csv")); }
TEST(SessionReporters, JsonMatchesGolden) { expect_golden("session.json", session_as("json")); }
TEST(SessionReporters, JsonlMatchesGolden) { expect_golden("session.jsonl", session_as("jsonl")); }
TEST(DoctorReporters, CsvMatchesGolden) { expect_golden("doctor.csv", doctor_as("csv")); }
TEST(DoctorReporters, JsonlMatchesGolden) { expect_golden("doctor.jsonl", doctor_as("jsonl")); }

TEST(SessionReporters, CsvHasOneRowPerTurnAndMarksTheFailedOne) {
  const std::string csv = session_as("csv");
  EXPECT_EQ(csv.rfind("schema_version,run_id,engine,", 0), 0u);
  std::istringstream in(csv);
  int rows = 0, errors = 0;
  for (std::string line; std::getline(in, line);) {
    ++rows;
    errors += line.find(",error,llama_decode failed at step 3,") != std::string::npos;
  }
  EXPECT_EQ(rows, 5);
  EXPECT_EQ(errors, 1);
}

TEST(SessionReporters, JsonLoadsBackIntoTheSameStruct) {
  const auto report = sample_session();
  const json written = result::to_json(report);
  const auto loaded = result::session_report_from_json(written);
  EXPECT_EQ(result::to_json(loaded), written);
}

TEST(SessionReporters, FailedTurnsAreListedWithTheirExitCode) {
  int exit_code = -1;
  const auto errors = result::session_errors(sample_session(), &exit_code);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "config 0 round 0 c02 turn 1: llama_decode failed at step 3");
  EXPECT_EQ(exit_code, 3);
  EXPECT_NE(session_as("md").find("Failed turns"), std::string::npos);
}

TEST(SessionReporters, AnalysisLeavesFailedTurnsOut) {
  EXPECT_EQ(sample_session().configs[0].analysis["turns_measured"], 3);
}

TEST(SessionReporters, EveryTurnLineIsSelfContained) {
  std::istringstream in(session_as("jsonl"));
  int lines = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    const json j = json::parse(line);
    EXPECT_EQ(j["schema_version"], result::kSchemaVersion);
    EXPECT_EQ(j["kind"], "session_turn");
    EXPECT_EQ(j["provenance"]["device"]["id"], "dev-0123456789abcdef");
    EXPECT_EQ(j["config"]["n_threads"], 2);
  }
  EXPECT_EQ(lines, 4);
}

TEST(SessionReporters, UnknownFormatIsBadInput) {
  std::ostringstream out;
  EXPECT_THROW(report::write_session_report(sample_session(), "xml", out), Error);
  EXPECT_THROW(report::write_doctor_report(result::doctor_result_from_json(sample_doctor()), "xml", out), Error);
}

TEST(DoctorReporters, CsvQuotesTitlesAndJoinsEvidence) {
  const std::string csv = doctor_as("csv");
  EXPECT_NE(csv.find("\"the sse42 variant runs on a CPU with AVX2, \"\"fix\"\" it\""), std::string::npos) << csv;
  EXPECT_NE(csv.find("loaded: sse42; CPU has: AVX2, FMA"), std::string::npos) << csv;
  // md is doctor's own report, made from the document as a stored run's is.
  const std::string md = doctor_as("md");
  EXPECT_EQ(md.rfind("edgeprobe doctor: ", 0), 0u) << md;
  EXPECT_NE(md.find("1. [critical] kernel.isa_fallback: the sse42 variant runs on a CPU with AVX2, \"fix\" it"), std::string::npos) << md;
}

// --prefill-remote: each configuration's md row and each turn's CSV row say where the
// prefill ran; a session without it has no md column.
TEST(SessionReporters, RemotePrefillAndItsFallbackAreMarked) {
  auto r = sample_session();
  r.provenance.extra["prefill_remote"] = "10.0.0.2:7788";
  auto& turns = r.configs[0].turns;
  turns[0].prefill_remote = json{{"mode", "remote"}};
  turns[1].prefill_remote = json{{"mode", "local"}, {"fallback_reason", "kv peer refused: authentication failed: wrong token"}};
  turns[2].prefill_remote = json{{"mode", "remote"}};
  std::ostringstream md, csv;
  report::write_session_report(r, "md", md);
  report::write_session_report(r, "csv", csv);
  EXPECT_NE(md.str().find("| QES | prefill |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"), std::string::npos)
      << md.str();
  EXPECT_NE(md.str().find("| 2 remote, 1 local (fallback) |\n"), std::string::npos) << md.str();
  EXPECT_NE(csv.str().find(",missed_frame_share_decode,prefill\n"), std::string::npos) << csv.str();
  EXPECT_NE(csv.str().find(",local (fallback)\n"), std::string::npos) << csv.str();
  EXPECT_EQ(session_as("md").find("prefill |"), std::string::npos);
}

// The speed-up of a finding as doctor makes it: one field in every format, with its basis.
TEST(DoctorReporters, EveryFormatCarriesTheSpeedupAndItsBasis) {
  doctor::Finding measured{"kernel.isa_fallback", doctor::Severity::kCritical, "sse42 on an AVX2 CPU", {}, "prefill+decode",
                           1.8, "measured: haswell against sse42, median of 6 interleaved pairs x1.80", "drop --cpu-variant", {}};
  doctor::Finding estimated{"contention.other_processes", doctor::Severity::kWarning, "others took the CPUs", {}, "decode",
                            1.25, "estimated: the CPU time the other processes took", "stop them", {}};
  doctor::Finding none{"load.no_mmap", doctor::Severity::kWarning, "no mmap", {}, "load", std::nullopt,
                       "none: no warm load to compare the first one with", "--mmap 1", {}};
  json findings = json::array({result::to_json(measured), result::to_json(estimated), result::to_json(none)});
  EXPECT_FALSE(findings[0].contains("estimated_speedup")) << "a measured figure is not an estimate";
  EXPECT_EQ(findings[0]["speedup"], 1.8);
  EXPECT_EQ(findings[0]["speedup_basis"], "measured");
  EXPECT_EQ(findings[1]["speedup_basis"], "estimated");
  EXPECT_TRUE(findings[2]["speedup"].is_null());
  EXPECT_EQ(findings[2]["speedup_basis"], "none");
  const json doc = {{"schema_version", 2}, {"doctor", {{"model", "m.gguf"}, {"findings", findings}}}};
  auto as = [&](const std::string& format) {
    std::ostringstream out;
    report::write_doctor_report(result::doctor_result_from_json(doc), format, out);
    return out.str();
  };
  const std::string csv = as("csv");
  EXPECT_NE(csv.find(",speedup,speedup_basis,speedup_detail,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",prefill+decode,1.8,measured,\"measured: haswell against sse42"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",decode,1.25,estimated,estimated: "), std::string::npos) << csv;
  EXPECT_NE(csv.find(",load,,none,none: no warm load"), std::string::npos) << csv;
  const std::string jsonl = as("jsonl");
  EXPECT_NE(jsonl.find("\"speedup\":1.8,\"speedup_basis\":\"measured\""), std::string::npos) << jsonl;
  EXPECT_NE(as("md").find("kernel.isa_fallback: sse42 on an AVX2 CPU · x1.80 prefill+decode if fixed (measured)"),
            std::string::npos) << as("md");
  EXPECT_NE(as("md").find("   speed-up: none: no warm load to compare the first one with\n"), std::string::npos) << as("md");

  // A diagnosis stored before: the factor as estimated_speedup, the sentence as the basis.
  json old = findings[0];
  old.erase("speedup");
  old.erase("speedup_detail");
  old["estimated_speedup"] = 1.8;
  old["speedup_basis"] = "from an emulated run, not any device's speed: measured: haswell against sse42";
  const json old_doc = {{"schema_version", 2}, {"doctor", {{"model", "m.gguf"}, {"findings", {old}}}}};
  std::ostringstream out;
  report::write_doctor_report(result::doctor_result_from_json(old_doc), "csv", out);
  EXPECT_NE(out.str().find(",1.8,measured,\"from an emulated run"), std::string::npos) << out.str();
}
