// `edgeprobe run --plan`: a plan as data in, versioned JSON Lines out (docs/wire-format.md).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

#include "support/run_process.h"

using namespace edgeprobe::test_support;
using nlohmann::json;

namespace {

std::vector<json> lines_of(const std::string& out) {
  std::vector<json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  return lines;
}

int count(const std::vector<json>& lines, const std::string& event) {
  int n = 0;
  for (const auto& l : lines) n += l["event"] == event;
  return n;
}

}  // namespace

TEST(RunPlan, BenchPlanStreamsEveryRepetitionAndEndsWithTheOutcome) {
  TempDir dir;
  const json plan = {{"kind", "bench"},
                     {"sweep", {{"models", {tiny_model()}}, {"n_prompt", {16}}, {"n_gen", {4}}, {"threads", {1}}}},
                     {"repetitions", 2},
                     {"ceilings", "off"},
                     {"env", {{"sample_hz", 0}}}};
  write_file(dir.file("plan.json"), plan.dump());
  const auto r = run_edgeprobe({"run", "--plan", dir.file("plan.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 6u);
  EXPECT_EQ(lines.front()["event"], "start");
  EXPECT_EQ(lines.front()["stream_version"], 1);
  EXPECT_EQ(lines.front()["kind"], "bench");
  EXPECT_EQ(lines.front()["plan"]["cases"].size(), 2u);  // the validated plan, expanded
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i]["seq"], i);
  EXPECT_EQ(count(lines, "provenance"), 1);
  EXPECT_EQ(count(lines, "repetition"), 4);  // pp16 and tg4, 2 each, as they were measured
  EXPECT_EQ(count(lines, "test"), 2);
  EXPECT_EQ(count(lines, "result"), 1);
  EXPECT_EQ(lines.back()["event"], "end");
  EXPECT_EQ(lines.back()["exit_code"], 0);
  EXPECT_TRUE(lines.back()["run_id"].is_null());  // not stored without --db
  for (const auto& l : lines) {
    if (l["event"] == "result") {
      EXPECT_EQ(l["report"]["results"].size(), 2u);
    }
  }
}

TEST(RunPlan, SessionPlanFromStdinStreamsEveryTurn) {
  TempDir dir;
  write_file(dir.file("prompts.jsonl"),
             "{\"id\": \"a\", \"lang\": \"en\", \"turns\": [\"Hello there.\", \"And again.\"]}\n");
  const json plan = {{"kind", "session"},
                     {"models", {tiny_model()}},
                     {"max_tokens", {8}},
                     {"threads", {1}},
                     {"rounds", 1},
                     {"conversations", 1},
                     {"prompts", dir.file("prompts.jsonl")},
                     {"env", {{"sample_hz", 0}}}};
  write_file(dir.file("plan.json"), plan.dump());
  const auto r = run_process({"/bin/sh", "-c", std::string(EDGEPROBE_BINARY) + " run --plan - --db " +
                                                   dir.file("r.db") + " < " + dir.file("plan.json")},
                             300, {{"XDG_CACHE_HOME", std::string(EDGEPROBE_BUILD_DIR) + "/test-home/cache"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  EXPECT_EQ(count(lines, "turn"), 2);
  EXPECT_EQ(lines.back()["event"], "end");
  EXPECT_EQ(lines.back()["run_id"], 1);  // stored with --db
}

// A doctor plan: one unit, the whole diagnosis in the result event with the provenance of
// its primary run and the plan it is stored under (a lab controller stores exactly that).
TEST(RunPlan, DoctorPlanStreamsItsChildrenAndTheDiagnosis) {
  const json plan = {{"kind", "doctor"}, {"model", tiny_model()}, {"config", {{"threads", 1}}},
                     {"n_prompt", 16},   {"n_gen", 4},            {"repetitions", 1},
                     {"experiments", false}};
  TempDir dir;
  write_file(dir.file("doctor.json"), plan.dump());
  const auto r = run_edgeprobe({"run", "--plan", dir.file("doctor.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines.front()["event"], "start");
  EXPECT_EQ(lines.front()["kind"], "doctor");
  EXPECT_EQ(lines.front()["plan"]["config"]["threads"], 1);
  EXPECT_GE(count(lines, "progress"), 1);
  ASSERT_EQ(count(lines, "result"), 1);
  for (const auto& l : lines) {
    if (l["event"] != "result") continue;
    EXPECT_EQ(l["kind"], "doctor");
    EXPECT_TRUE(l["report"]["doctor"]["findings"].is_array());
    EXPECT_FALSE(l["provenance"]["device"]["id"].get<std::string>().empty());
    EXPECT_EQ(l["plan"]["kind"], "doctor");
  }
  EXPECT_EQ(lines.back()["event"], "end");
  EXPECT_EQ(lines.back()["exit_code"], 0);
}

TEST(RunPlan, BadPlansAreOneLineExitTwoAndAnErrorEvent) {
  TempDir dir;
  write_file(dir.file("typo.json"), R"({"kind": "bench", "repetitons": 3})");
  write_file(dir.file("broken.json"), R"({"kind": "bench", )");
  write_file(dir.file("bad-value.json"), R"({"kind": "bench", "repetitions": 0})");
  write_file(dir.file("bad-doctor.json"), R"({"kind": "doctor", "config": {"flash_attn": "maybe"}})");
  for (const char* name : {"typo.json", "broken.json", "bad-value.json", "bad-doctor.json", "missing.json"}) {
    const auto r = run_edgeprobe({"run", "--plan", dir.file(name)});
    EXPECT_EQ(r.exit_code, 2) << name << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    const auto lines = lines_of(r.out);
    ASSERT_EQ(lines.size(), 1u) << r.out;
    EXPECT_EQ(lines[0]["event"], "error");
    EXPECT_EQ(lines[0]["kind"], "bad_input");
  }
}
