// doctor's bench children are `edgeprobe run --plan -`: a stand-in edgeprobe records its
// argv and stdin and replays a stream, so the plan doctor sends, the report it reads back
// and the one line a failed child leaves are all checked without measuring anything.
#include "app/doctor_child.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "core/error.h"
#include "doctor/doctor.h"
#include "result/result.h"
#include "support/run_process.h"

using namespace edgeprobe;
using namespace edgeprobe::test_support;
using nlohmann::json;

namespace {

std::string stream_of(std::vector<json> events) {
  std::string text;
  for (size_t i = 0; i < events.size(); ++i) {
    events[i]["seq"] = i;
    text += events[i].dump() + "\n";
  }
  return text;
}

// An edgeprobe that writes its arguments (one a line) to DIR/argv and its stdin to
// DIR/stdin, then prints `stream` and `err` and exits with `exit_code`.
std::string fake_edgeprobe(const TempDir& dir, const std::string& stream, const std::string& err = "", int exit_code = 0) {
  write_file(dir.file("stream.jsonl"), stream);
  write_file(dir.file("stderr.txt"), err);
  const std::string script = dir.file("edgeprobe");
  write_file(script, "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" + dir.file("argv") + "'\ncat > '" + dir.file("stdin") +
                         "'\ncat '" + dir.file("stream.jsonl") + "'\ncat '" + dir.file("stderr.txt") + "' >&2\nexit " +
                         std::to_string(exit_code) + "\n");
  chmod(script.c_str(), 0755);
  return script;
}

// A bench result of one pp16 test, as the child's stream carries it.
json bench_result() {
  result::BenchReport report;
  report.provenance.models.push_back({});
  report.provenance.models[0].sha256 = "ab";
  result::TestResult pp;
  pp.config.n_prompt = 16;
  pp.repetitions.push_back({});
  pp.repetitions[0].prefill_tokens_per_s = 100;
  report.results.push_back(pp);
  return result::to_json(report);
}
const json kReport = bench_result();

doctor::DoctorOptions options_for(const TempDir& dir) {
  app::DoctorPlan plan;
  plan.sysfs_root = dir.path();  // a fixture tree: the child measures no ceilings
  plan.sample_hz = 50;
  return app::doctor_options(plan, "/models/m.gguf");
}

}  // namespace

TEST(DoctorChild, IsARunPlanWithItsBenchPlanOnStdinAndTheReportFromTheStream) {
  TempDir dir;
  auto o = options_for(dir);
  o.edgeprobe_exe = fake_edgeprobe(
      dir, stream_of({{{"event", "start"}, {"kind", "bench"}, {"plan", json::object()}},
                      {{"event", "warning"}, {"message", "a warning"}},
                      {{"event", "result"}, {"report", kReport}},
                      {{"event", "end"}, {"exit_code", 0}, {"errors", json::array()}}}));
  doctor::RunConfig config;
  config.threads = 2;
  config.flash_attn = "1";
  config.cpu_variant = "haswell";
  config.use_mmap = false;
  const auto out = app::run_bench_child(o, config, {16, 4, 2, false, {}});
  EXPECT_EQ(out.error, "");
  EXPECT_EQ(out.exit_code, 0);
  ASSERT_TRUE(out.report);
  EXPECT_EQ(result::to_json(*out.report), kReport);
  EXPECT_EQ(read_file(dir.file("argv")), "run\n--plan\n-\n");
  const app::BenchPlan plan = app::bench_plan_from_json(json::parse(read_file(dir.file("stdin"))));
  EXPECT_EQ(plan.sweep.models, std::vector<std::string>{"/models/m.gguf"});
  EXPECT_EQ(plan.sweep.n_prompt, std::vector<int>{16});
  EXPECT_EQ(plan.sweep.n_gen, std::vector<int>{4});
  EXPECT_EQ(plan.sweep.threads, std::vector<int>{2});
  EXPECT_EQ(plan.sweep.flash_attn, std::vector<int>{1});
  EXPECT_EQ(plan.sweep.use_mmap, std::vector<int>{0});
  EXPECT_EQ(plan.env.cpu_variant, "haswell");
  EXPECT_EQ(plan.run.repetitions, 2);
  EXPECT_FALSE(plan.run.warmup);
  EXPECT_TRUE(plan.keep_engine_log);
  EXPECT_EQ(plan.env.sysfs_root, dir.path());
  EXPECT_EQ(plan.env.sample_hz, 50);
  EXPECT_EQ(plan.ceilings, "off");
  // The command in doctor's JSON reruns the same child: the plan piped in.
  EXPECT_NE(out.command.find(" | " + o.edgeprobe_exe + " run --plan -"), std::string::npos) << out.command;
  EXPECT_NE(out.command.find("\"keep_engine_log\":true"), std::string::npos) << out.command;
  // doctor's own wrapper keeps the same report and measures around the child.
  const doctor::BenchRun run = doctor::run_bench_child(o, "as configured", config, {16, 4, 2, false, {}});
  EXPECT_TRUE(run.ok()) << run.error;
  ASSERT_TRUE(run.report);
  EXPECT_EQ(result::to_json(*run.report), kReport);
  EXPECT_GT(run.window.wall_s, 0);
}

TEST(DoctorChild, ASweepIsOneChildVaryingOneSetting) {
  TempDir dir;
  const auto o = options_for(dir);
  doctor::RunConfig base;
  base.threads = 4;
  doctor::ChildTests tests{8, 2, 1, true, {}};
  for (int t : {1, 2, 4}) {
    tests.sweep.push_back(base);
    tests.sweep.back().threads = t;
  }
  const auto plan = app::bench_child_plan(o, base, tests);
  EXPECT_EQ(plan.sweep.threads, (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(plan.sweep.poll.size(), 1u);
  EXPECT_EQ(plan.sweep.flash_attn, std::vector<int>{-1});  // "auto"
  // Two settings at once would be their cross product: a bug, not a plan.
  tests.sweep.back().n_ubatch = 128;
  EXPECT_THROW(app::bench_child_plan(o, base, tests), Error);
}

TEST(DoctorChild, OnlyTheConfigurationAsGivenRunsTheDraft) {
  TempDir dir;
  auto o = options_for(dir);
  o.draft = "/m/draft.gguf";
  o.draft_max = 4;
  doctor::RunConfig base;
  base.threads = 2;
  doctor::ChildTests tests{8, 2, 1, true, {}};
  EXPECT_FALSE(app::bench_child_plan(o, base, tests).run.spec.enabled());  // a fix's child
  tests.draft = true;
  const auto plan = app::bench_child_plan(o, base, tests);
  EXPECT_EQ(plan.run.spec.draft, "/m/draft.gguf");
  EXPECT_EQ(plan.run.spec.draft_max, 4);
  o.draft.clear();
  EXPECT_FALSE(app::bench_child_plan(o, base, tests).run.spec.enabled());  // no draft given
}

TEST(DoctorChild, AFailedChildIsOneLineInItsOwnWords) {
  TempDir dir;
  auto o = options_for(dir);
  o.edgeprobe_exe = fake_edgeprobe(
      dir,
      stream_of({{{"event", "start"}, {"kind", "bench"}, {"plan", json::object()}},
                 {{"event", "error"}, {"kind", "bad_input"}, {"message", "unknown CPU variant 'bogus'"}}}),
      "edgeprobe: error: unknown CPU variant 'bogus'\n", 2);
  const auto out = app::run_bench_child(o, doctor::RunConfig{}, {8, 2, 1, true, {}});
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.error, "unknown CPU variant 'bogus'");
  EXPECT_FALSE(out.report);
  const doctor::BenchRun run = doctor::run_bench_child(o, "as configured", doctor::RunConfig{}, {8, 2, 1, true, {}});
  EXPECT_FALSE(run.ok());
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_EQ(run.error, "unknown CPU variant 'bogus'");
}

TEST(DoctorChild, ACrashABrokenStreamAndAMissingBinaryEachSayWhy) {
  TempDir dir;
  auto o = options_for(dir);
  o.edgeprobe_exe = fake_edgeprobe(dir, "", "\nSegmentation fault\nmore\n", 139);
  EXPECT_EQ(app::run_bench_child(o, doctor::RunConfig{}, {8, 2, 1, true, {}}).error, "Segmentation fault");

  o.edgeprobe_exe = fake_edgeprobe(dir, "{\"event\": \"start\", \"seq\": 0, \"kind\": \"bench\"}\nnot json\n");
  const auto broken = app::run_bench_child(o, doctor::RunConfig{}, {8, 2, 1, true, {}});
  EXPECT_TRUE(broken.error.starts_with("its stream broke: line 1 of the stream is not JSON")) << broken.error;

  o.edgeprobe_exe = fake_edgeprobe(dir, stream_of({{{"event", "start"}, {"kind", "bench"}, {"plan", json::object()}},
                                                   {{"event", "end"}, {"exit_code", 0}, {"errors", json::array()}}}));
  EXPECT_EQ(app::run_bench_child(o, doctor::RunConfig{}, {8, 2, 1, true, {}}).error, "bench sent no result");

  o.edgeprobe_exe = dir.file("no-such-edgeprobe");
  const auto missing = app::run_bench_child(o, doctor::RunConfig{}, {8, 2, 1, true, {}});
  EXPECT_EQ(missing.exit_code, -1);
  EXPECT_NE(missing.error.find("cannot run"), std::string::npos) << missing.error;
  EXPECT_EQ(missing.error.find('\n'), std::string::npos);
}

// The child is this edgeprobe (or --edgeprobe-exe): a result that is not a bench result it
// reads (another version's) is the child's failure in one line, not doctor's crash.
TEST(DoctorChild, AResultThatIsNotABenchResultIsTheChildsFailure) {
  TempDir dir;
  auto o = options_for(dir);
  o.edgeprobe_exe = fake_edgeprobe(
      dir, stream_of({{{"event", "start"}, {"kind", "bench"}, {"plan", json::object()}},
                      {{"event", "result"}, {"report", {{"schema_version", 2}, {"results", json::array({{{"test", "pp16"}}})}}}},
                      {{"event", "end"}, {"exit_code", 0}, {"errors", json::array()}}}));
  const auto out = app::run_bench_child(o, doctor::RunConfig{}, {16, 0, 1, false, {}});
  EXPECT_FALSE(out.report);
  EXPECT_EQ(out.error.rfind("its result is not a bench result this edgeprobe reads: ", 0), 0u) << out.error;
  EXPECT_EQ(out.error.find('\n'), std::string::npos) << out.error;
}
