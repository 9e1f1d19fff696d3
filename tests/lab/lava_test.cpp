// LAVA's side of the lab, without a server: the framed stream through a log that escapes
// and cuts lines, the log reader, how LAVA's outcomes map to device statuses, and the
// rendered job. The real dispatcher and server run in lava_dispatcher_test and
// lava_server_test.
#include "lab/lava.h"

#include <gtest/gtest.h>

#include <sstream>

#include "app/stream_frames.h"
#include "core/digest.h"
#include "core/error.h"
#include "store/store.h"
#include "support/run_process.h"

using namespace edgeprobe;
using namespace edgeprobe::lab;
using nlohmann::json;

namespace {

// A bench stream (docs/wire-format.md) of `cases` tests with two repetitions each.
std::vector<std::string> stream_lines(int cases) {
  std::vector<json> e = {{{"event", "start"}, {"kind", "bench"}, {"plan", {{"kind", "bench"}}}},
                         {{"event", "provenance"}, {"provenance", {{"device", {{"id", "dev-1"}}}}}, {"cases", json::array()}}};
  for (int c = 0; c < cases; ++c) e[1]["cases"].push_back({{"test", "pp" + std::to_string(c)}});
  for (int c = 0; c < cases; ++c) {
    for (int r = 0; r < 2; ++r) e.push_back({{"event", "repetition"}, {"case_index", c}, {"repetition", {{"index", r}}}});
    e.push_back({{"event", "test"},
                 {"result",
                  {{"status", "ok"}, {"test", "pp" + std::to_string(c)}, {"config", {{"n_threads", 2}}},
                   {"prefill", {{"tokens_per_s", {{"median", 100.5 + c}}}}}, {"note", "say \"hi\"\r\x1b[0m"}}}});
  }
  e.push_back({{"event", "end"}, {"exit_code", 0}, {"errors", json::array()}});
  std::vector<std::string> out;
  for (size_t i = 0; i < e.size(); ++i) {
    e[i]["seq"] = i;
    out.push_back(e[i].dump());
  }
  return out;
}

std::string framed(const std::vector<std::string>& lines) {
  std::ostringstream out;
  app::FramedOutput f(out);
  for (const auto& l : lines) f.stream() << l << "\n";
  f.finish();
  return out.str();
}

// What LAVA's dispatcher makes of target output: quotes escaped, CR and ESC dropped
// (lava_dispatcher/shell.py), each line a double-quoted YAML record, and a line of 10^6
// characters or more replaced (lava_common/log.py).
std::string lava_log(const std::string& target_output, const std::string& job_result = "pass",
                     const std::string& error_type = "") {
  std::string log = "- {\"dt\": \"2026-12-05T00:00:00\", \"lvl\": \"info\", \"msg\": \"start: 1 deploy\"}\n";
  std::istringstream in(target_output);
  for (std::string line; std::getline(in, line);) {
    std::string msg;
    for (const char c : line) {
      if (c == '\r' || c == '\x1b') continue;
      if (c == '"') msg += "\\\"";
      else msg += c;
    }
    std::string quoted;
    for (const char c : msg) quoted += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    std::string record = "- {\"dt\": \"2026-12-05T00:00:01\", \"lvl\": \"target\", \"msg\": \"" + quoted + "\"}";
    if (record.size() >= 1000000)
      record = "- {\"dt\": \"2026-12-05T00:00:01\", \"lvl\": \"target\", \"msg\": \"<line way too long ...>\"}";
    log += record + "\n";
  }
  if (!job_result.empty())
    log += "- {\"dt\": \"2026-12-05T00:00:02\", \"lvl\": \"results\", \"msg\": {\"case\": \"job\", \"definition\": "
           "\"lava\", \"result\": \"" + job_result + "\"" +
           (error_type.empty() ? "" : ", \"error_type\": \"" + error_type + "\", \"error_msg\": \"Connection closed\"") +
           "}}\n";
  return log;
}

}  // namespace

TEST(LavaFrames, AStreamSurvivesTheLogsEscapingAndLongLinesAreChunked) {
  auto lines = stream_lines(2);
  lines[2] = json({{"event", "warning"}, {"seq", 2}, {"message", std::string(200000, 'q') + "\"\r"}}).dump();
  const std::string text = framed(lines);
  // A 200 kB line goes out in chunks of at most 64 KiB of base64.
  std::istringstream in(text);
  size_t records = 0;
  for (std::string l; std::getline(in, l);) {
    EXPECT_LE(l.size(), 70u * 1024) << l.substr(0, 40);
    ++records;
  }
  EXPECT_GT(records, lines.size() + 1);
  const auto log = lava::parse_log(lava_log(text));
  EXPECT_EQ(log.unreadable, 0u);
  app::FrameDecoder d;
  std::vector<std::string> back;
  for (const auto& r : log.records)
    if (r.lvl == "target")
      for (auto& l : d.line(r.msg.get<std::string>())) back.push_back(l);
  EXPECT_EQ(d.problem(), "");
  EXPECT_TRUE(d.ended());
  EXPECT_EQ(back, lines);
}

TEST(LavaFrames, AMissingRepeatedOrAlteredRecordIsNamed) {
  const std::string text = framed(stream_lines(1));
  std::vector<std::string> records;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) records.push_back(l);

  app::FrameDecoder twice;  // the same log read twice: nothing is taken twice
  size_t lines = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& r : records) lines += twice.line(r).size();
  EXPECT_EQ(lines, records.size() - 1);
  EXPECT_TRUE(twice.ended());

  app::FrameDecoder gap;
  for (size_t i = 0; i < records.size(); ++i)
    if (i != 2) gap.line(records[i]);
  EXPECT_NE(gap.problem().find("stream line 3 is missing"), std::string::npos) << gap.problem();
  EXPECT_FALSE(gap.ended());

  app::FrameDecoder altered;  // one base64 character changed: still base64, not the same bytes
  for (size_t i = 0; i < records.size(); ++i) {
    std::string r = records[i];
    if (i == 1) r[20] = r[20] == 'A' ? 'B' : 'A';
    altered.line(r);
  }
  EXPECT_NE(altered.problem().find("SHA-256 does not match"), std::string::npos) << altered.problem();

  app::FrameDecoder garbage;
  garbage.line("EPJ1 1 1/1 not*base64");
  EXPECT_NE(garbage.problem().find("not base64"), std::string::npos) << garbage.problem();
  app::FrameDecoder other;  // the log's own lines are passed over
  EXPECT_TRUE(other.line("+ lava-test-case ep-fetch-bundle").empty());
  EXPECT_EQ(other.problem(), "");
}

TEST(LavaLog, ReadsRecordsAndTheJobResultAndSkipsAHalfWrittenLine) {
  std::string text = lava_log(framed(stream_lines(1)), "fail", "Infrastructure");
  text += "- {\"dt\": \"2026-12-05T00:00:03\", \"lvl\": \"tar";  // a log still being written
  const auto log = lava::parse_log(text);
  EXPECT_EQ(log.unreadable, 1u);
  const auto report = lava::report_from_log(log);
  EXPECT_EQ(report.state, "Finished");
  EXPECT_EQ(report.health, "Incomplete");
  EXPECT_EQ(report.error_type, "Infrastructure");
  EXPECT_EQ(report.error_msg, "Connection closed");
  EXPECT_EQ(lava::report_from_log(lava::parse_log(lava_log("x", ""))).state, "Running");
}

TEST(LavaOutcome, EveryLavaOutcomeIsADeviceStatus) {
  using lava::JobReport;
  const JobReport complete{"Finished", "Complete", "", "", ""};
  EXPECT_EQ(lava::device_status(complete, true, false), "ok");
  EXPECT_EQ(lava::device_status(complete, false, false), "partial");
  for (const char* type : {"Infrastructure", "LAVATimeout"})
    EXPECT_EQ(lava::device_status({"Finished", "Incomplete", type, "x", ""}, false, false), "lost") << type;
  EXPECT_EQ(lava::device_status({"Finished", "Incomplete", "Test", "x", ""}, false, false), "error");
  EXPECT_EQ(lava::device_status({"Finished", "Incomplete", "Infrastructure", "x", ""}, true, false), "ok")
      << "every unit arrived: the device's results are whole whatever LAVA did after";
  EXPECT_EQ(lava::device_status({"Finished", "Canceled", "Canceled", "", ""}, false, false), "cancelled");
  EXPECT_EQ(lava::device_status({"Submitted", "Unknown", "", "", ""}, false, false), "queued");
  EXPECT_EQ(lava::device_status({"Submitted", "Unknown", "", "", ""}, false, true), "not_scheduled");
  EXPECT_EQ(lava::device_status({"Running", "Unknown", "", "", ""}, false, true), "running");
  EXPECT_FALSE(lava::finished("running"));
  EXPECT_TRUE(lava::finished("not_scheduled"));
}

TEST(LavaImport, UnitsArriveOnceAndACutStreamFailsOnlyWhenTheJobHasFinished) {
  test_support::TempDir dir;
  auto s = store::open_store(dir.file("r.db"));
  const auto lines = stream_lines(3);
  // While the job runs: half its stream, nothing failed yet.
  const std::vector<std::string> half(lines.begin(), lines.begin() + 6);
  std::string partial_text = framed(half);
  partial_text = partial_text.substr(0, partial_text.rfind("EPJ1 END"));
  const auto first = lava::import_stream(*s, lava::parse_log(lava_log(partial_text, "")), {{"device", "rpi"}}, 0,
                                         false, "");
  EXPECT_EQ(first.committed, 3u);
  EXPECT_FALSE(first.whole);
  EXPECT_EQ(s->get_run(first.run).status, "running");
  // The whole log later: the units already stored are skipped, the rest committed.
  const auto second = lava::import_stream(*s, lava::parse_log(lava_log(framed(lines))), {{"device", "rpi"}},
                                          first.run, true, "LAVA job 7 Complete");
  EXPECT_TRUE(second.whole) << second.problem;
  EXPECT_EQ(second.run, first.run);
  EXPECT_EQ(second.skipped, 3u);
  EXPECT_EQ(second.committed, 3u) << "six repetitions in all, three stored before";
  EXPECT_EQ(s->get_run(first.run).status, "complete");
  // A job that finished with its stream cut: failed, with LAVA's words and its units kept.
  const auto cut = lava::import_stream(*s, lava::parse_log(lava_log(partial_text, "fail", "Infrastructure")),
                                       {{"device", "rpi"}}, 0, true, "LAVA job 8 Incomplete (Infrastructure)");
  const auto run = s->get_run(cut.run);
  EXPECT_EQ(run.status, "failed");
  EXPECT_NE(run.error.find("LAVA job 8 Incomplete (Infrastructure)"), std::string::npos) << run.error;
  EXPECT_EQ(cut.committed, 3u);
}

TEST(LavaJob, TheJobCarriesThePlanItsHashAndTheDevicesTagsAndEscapesWhatItQuotes) {
  lava::JobSpec spec;
  spec.device.name = "rpi5 \"03\"\n";
  spec.device.arch = "aarch64";
  spec.device.labels = {{"lava_tags", "site-b,npu"}};
  spec.lab_run = 42;
  spec.plan = {{"kind", "bench"}, {"note", "it's \"quoted\" $(reboot)"}};
  spec.bundle_url = "http://lab/ep.tar.gz";
  spec.bundle_sha256 = std::string(64, 'a');
  spec.bundle_name = "edgeprobe-x";
  spec.models.push_back({"http://lab/m.gguf", std::string(64, 'b'), "models/m.gguf"});
  const std::string yaml = lava::render_job(spec);
  const json job = json::parse(yaml.substr(yaml.find('{')));  // JSON is YAML: it reads back as it was written
  EXPECT_EQ(job["device_type"], "ssh");
  EXPECT_EQ(job["tags"], json({"ep-rpi5--03--", "site-b", "npu"}));
  EXPECT_EQ(job["metadata"]["ep_plan_sha256"], sha256_hex(spec.plan.dump()));
  const json& def = job["actions"][2]["test"]["definitions"][0];
  const auto plan = base64_decode(def["parameters"]["EP_PLAN_B64"].get<std::string>());
  ASSERT_TRUE(plan);
  EXPECT_EQ(json::parse(*plan), spec.plan);
  EXPECT_EQ(def["parameters"]["EP_MODEL_1_PATH"], "models/m.gguf");
  const std::string steps = def["repository"]["run"]["steps"].dump();
  EXPECT_NE(steps.find("-o lava"), std::string::npos);
  EXPECT_NE(steps.find("sha256sum -c"), std::string::npos);
  Device no_arch;
  no_arch.name = "board";
  try {
    lava::bundle_target(no_arch);
    ADD_FAILURE() << "a device without arch was given a bundle";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("arch: aarch64 or x86_64"), std::string::npos) << e.what();
  }
}

TEST(LavaJob, HeadlineFiguresBecomeTestCasesWithUnits) {
  const std::string cases = lava::test_case_commands(framed(stream_lines(2)));
  EXPECT_NE(cases.find("lava-test-case pp0-t2-prefill --result pass --measurement 100.5000 --units tok/s"),
            std::string::npos)
      << cases;
  EXPECT_NE(cases.find("lava-test-case pp1-t2-prefill --result pass --measurement 101.5000"), std::string::npos);
  EXPECT_NE(cases.find("lava-test-case edgeprobe-exit --result pass"), std::string::npos);
}

// ---- on what a real LAVA 2023.01 wrote (tests/lab/lava/fixtures, recorded with lava-lab.sh) ----

namespace {
std::string fixture(const std::string& name) {
  return test_support::read_file(std::string(EDGEPROBE_LAVA_FIXTURES) + "/" + name);
}
lava::JobReport rest_report(const std::string& job, const std::string& detail = "detail") {
  return lava::report_from_rest(json::parse(fixture(job + "." + detail + ".json")),
                                json::parse(fixture(job + ".tests.json")));
}
}  // namespace

TEST(LavaRecorded, FramesSurviveARealJobLogAndItsTracedCommandsAndLongLinesAreNotFrames) {
  // The job printed two frames whose JSON holds quotes, a 1.1 MB line, and an END with a
  // wrong checksum; the test shell traced each echo (`+ echo 'EPJ1 ...'`).
  const auto log = lava::parse_log(fixture("complete.logs.yaml"));
  EXPECT_EQ(log.unreadable, 0u);
  bool escaped = false, replaced = false;
  app::FrameDecoder d;
  std::vector<std::string> lines;
  for (const auto& r : log.records) {
    if (r.lvl != "target" || !r.msg.is_string()) continue;
    const std::string msg = r.msg.get<std::string>();
    escaped = escaped || msg.find("he said \\\"hello\\\"") != std::string::npos;
    replaced = replaced || msg == "<line way too long ...>";
    for (auto& l : d.line(msg)) lines.push_back(l);
  }
  EXPECT_TRUE(escaped) << "LAVA escapes the quotes of target output: why the stream is framed";
  EXPECT_TRUE(replaced);
  EXPECT_EQ(lines, (std::vector<std::string>{R"({"a":1})", R"({"b":2,"s":"\"q\""})"}));
  EXPECT_NE(d.problem().find("SHA-256 does not match"), std::string::npos) << d.problem();
  // The dispatcher alone (lava-run) writes the same records without the list's "- ".
  const auto run = lava::report_from_log(lava::parse_log(fixture("lava-run-complete.log.yaml")));
  EXPECT_EQ(run.state, "Finished");
  EXPECT_EQ(run.health, "Complete");
}

TEST(LavaRecorded, TheRestApisJobStatesMapToDeviceStatuses) {
  EXPECT_EQ(lava::device_status(rest_report("complete"), false, false), "partial");
  EXPECT_EQ(lava::device_status(rest_report("complete"), true, false), "ok");
  const auto dies = rest_report("ssh-dies");
  EXPECT_EQ(dies.error_type, "Infrastructure");
  EXPECT_EQ(dies.error_msg, "Connection closed");
  EXPECT_EQ(lava::device_status(dies, false, false), "lost");
  const auto cancelled = rest_report("cancel");
  EXPECT_EQ(cancelled.error_msg, "The job was canceled");
  EXPECT_EQ(lava::device_status(cancelled, false, false), "cancelled");
  const auto waiting = rest_report("maintenance", "detail-after-30s");  // then cancelled
  EXPECT_EQ(waiting.state, "Submitted");
  EXPECT_EQ(lava::device_status(waiting, false, false), "queued");
  EXPECT_EQ(lava::device_status(waiting, false, true), "not_scheduled");
}

TEST(LavaJob, APoolsJobsGoToAnyDeviceOfItsTypeAndTags) {
  const auto pool = lava::pool_devices("rk3588:site-b,npu", 3, "aarch64");
  ASSERT_EQ(pool.size(), 3u);
  EXPECT_EQ(pool[2].name, "rk3588-3");
  lava::JobSpec spec;
  spec.device = pool[0];
  spec.plan = {{"kind", "bench"}};
  const std::string yaml = lava::render_job(spec);
  const json job = json::parse(yaml.substr(yaml.find('{')));
  EXPECT_EQ(job["device_type"], "rk3588");
  EXPECT_EQ(job["tags"], json({"site-b", "npu"})) << "no ep-NAME tag: LAVA picks the device";
  for (const auto& [pool_text, count, arch] :
       std::vector<std::tuple<std::string, int, std::string>>{{"", 1, "aarch64"}, {"rk 3588", 1, "aarch64"},
                                                              {"rk3588", 0, "aarch64"}, {"rk3588", 2, "riscv64"}}) {
    try {
      lava::pool_devices(pool_text, count, arch);
      ADD_FAILURE() << "accepted --pool '" << pool_text << "' --count " << count << " --arch " << arch;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    }
  }
}

TEST(LavaLog, HostileLinesAreUnreadableNotFatal) {
  std::string deep = "- {\"lvl\": \"target\", \"msg\": " + std::string(100000, '[') + std::string(100000, ']') + "}\n";
  std::string alias = "- &a {\"lvl\": \"target\", \"msg\": *a}\n";
  std::string binary("- {\"lvl\": \"target\", \"msg\": \"\x00\xff\xfe\"}\n", 34);
  const auto log = lava::parse_log(deep + alias + binary + "- {\"lvl\": \"target\", \"msg\": \"EPJ1 END 0 x\"}\n");
  EXPECT_EQ(log.unreadable, 3u);
  ASSERT_EQ(log.records.size(), 1u);
  app::FrameDecoder d;
  d.line(log.records[0].msg.get<std::string>());
  EXPECT_NE(d.problem().find("SHA-256 does not match"), std::string::npos) << d.problem();
  // A frame that claims more chunks than any log holds only waits for them; the next
  // line's first chunk is then a missing record, named.
  app::FrameDecoder huge;
  huge.line("EPJ1 1 1/999999999999999 eyJhIjoxfQ==");
  huge.line("EPJ1 2 1/1 eyJhIjoxfQ==");
  EXPECT_NE(huge.problem().find("missing"), std::string::npos) << huge.problem();
}
