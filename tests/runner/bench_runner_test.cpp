// runner::run_test_cases driven through the scripted fake engine: every path of a sweep, with no
// model file. Timings are checked from below only (the fake waits at least as long as
// scripted; a busy host only adds).
#include <gtest/gtest.h>

#include <numeric>

#include "engine/fake_engine.h"
#include "runner/bench_runner.h"

namespace edgeprobe::runner {
namespace {

using engine::FakeEngine;
using engine::FakeScript;
using workload::TestCase;
using workload::TestKind;

TestCase make_case(int n_prompt, int n_gen, int n_depth = 0, const std::string& model = "m.gguf") {
  TestCase c;
  c.model_path = model;
  c.kind = n_gen == 0 ? TestKind::kPrompt : n_prompt == 0 ? TestKind::kGenerate : TestKind::kPromptGenerate;
  c.n_prompt = n_prompt;
  c.n_gen = n_gen;
  c.n_depth = n_depth;
  return c;
}

RunnerOptions options(int repetitions, bool warmup) {
  RunnerOptions o;
  o.repetitions = repetitions;
  o.warmup = warmup;
  return o;
}

class BenchRunner : public ::testing::Test {
 protected:
  std::vector<result::TestResult> run(FakeEngine& engine, const std::vector<TestCase>& cases,
                                      const RunnerOptions& o, RunnerCallbacks cb = {}) {
    return run_test_cases(engine, cases, o, clock_, [](const std::string&) { return 0; }, cb);
  }
  const RunClock clock_;
};

TEST_F(BenchRunner, PromptTestTimesTheWholePrefill) {
  FakeScript script;
  script.prefill_ms_per_token = 0.02;
  FakeEngine engine(script);
  const auto results = run(engine, {make_case(64, 0)}, options(3, false));
  ASSERT_EQ(results.size(), 1u);
  const auto& r = results[0];
  ASSERT_FALSE(r.error) << r.error->message;
  ASSERT_EQ(r.repetitions.size(), 3u);
  for (const auto& rep : r.repetitions) {
    EXPECT_GE(rep.prefill_ms, 64 * 0.02);
    EXPECT_NEAR(rep.prefill_tokens_per_s, 64 / (rep.prefill_ms / 1e3), 1e-6);
    EXPECT_DOUBLE_EQ(rep.ttft_ms, rep.prefill_ms);
    EXPECT_TRUE(rep.decode_step_ms.empty());
    EXPECT_LE(rep.start_ns, rep.end_ns);
  }
  EXPECT_EQ(r.repetitions[2].index, 2);
  EXPECT_EQ(engine.counters().prefill_sizes, (std::vector<int>{64, 64, 64}));
  EXPECT_EQ(engine.counters().decode_steps, 0);
  // The model loads once per repetition (cold, then warm) and the context is sized to the test.
  EXPECT_EQ(r.load_ms.size(), 3u);
  EXPECT_EQ(engine.counters().loads, 3);
  EXPECT_EQ(engine.counters().last_context_options.n_ctx, 64);
}

TEST_F(BenchRunner, GenerateTestTimesEveryStepAndLeavesTheFirstOutOfTheRate) {
  FakeScript script;
  script.decode_ms_per_step = 0.2;
  FakeEngine engine(script);
  int token_events = 0;
  RunnerCallbacks cb;
  cb.event = [&](const PhaseEvent& e) { token_events += e.category == "token"; };
  const auto results = run(engine, {make_case(0, 16)}, options(2, false), cb);
  ASSERT_FALSE(results[0].error);
  ASSERT_EQ(results[0].repetitions.size(), 2u);
  for (const auto& rep : results[0].repetitions) {
    ASSERT_EQ(rep.decode_step_ms.size(), 16u);
    for (double ms : rep.decode_step_ms) EXPECT_GE(ms, 0.2);
    EXPECT_DOUBLE_EQ(rep.ttft_ms, rep.decode_step_ms.front());
    const double later = std::accumulate(rep.decode_step_ms.begin() + 1, rep.decode_step_ms.end(), 0.0);
    EXPECT_NEAR(rep.decode_ms, later, 1e-9);
    EXPECT_NEAR(rep.decode_tokens_per_s, 15 / (later / 1e3), 1e-6);
    EXPECT_EQ(rep.prefill_ms, 0);
  }
  EXPECT_EQ(engine.counters().decode_steps, 32);
  EXPECT_EQ(token_events, 32);
}

TEST_F(BenchRunner, PromptThenGenerateCountsEveryStepInTheRate) {
  FakeScript script;
  script.prefill_ms_per_token = 0.05;
  script.decode_ms_per_step = 0.1;
  FakeEngine engine(script);
  const auto results = run(engine, {make_case(8, 4)}, options(1, false));
  ASSERT_FALSE(results[0].error);
  const auto& rep = results[0].repetitions.at(0);
  EXPECT_GE(rep.prefill_ms, 8 * 0.05);
  EXPECT_DOUBLE_EQ(rep.ttft_ms, rep.prefill_ms);
  ASSERT_EQ(rep.decode_step_ms.size(), 4u);
  EXPECT_GE(rep.decode_ms, 4 * 0.1);
  EXPECT_NEAR(rep.decode_tokens_per_s, 4 / (rep.decode_ms / 1e3), 1e-6);
  EXPECT_EQ(engine.counters().last_context_options.n_ctx, 12);
}

TEST_F(BenchRunner, DepthIsFilledOnceAndRestoredForLaterRepetitions) {
  FakeEngine engine;
  const auto results = run(engine, {make_case(4, 0, 32)}, options(3, true));
  ASSERT_FALSE(results[0].error);
  EXPECT_EQ(results[0].repetitions.size(), 3u);
  // Warm-up: its own fill and prompt; repetition 0 fills and snapshots; 1 and 2 restore.
  EXPECT_EQ(engine.counters().prefill_sizes, (std::vector<int>{32, 4, 32, 4, 4, 4}));
  EXPECT_EQ(engine.counters().restores, 2);
  EXPECT_EQ(engine.counters().last_context_options.n_ctx, 36);
}

TEST_F(BenchRunner, WithoutKvStateTheDepthIsFilledEveryRepetition) {
  FakeScript script;
  script.kv_state = false;
  FakeEngine engine(script);
  const auto results = run(engine, {make_case(4, 2, 16)}, options(3, false));
  ASSERT_FALSE(results[0].error);
  EXPECT_EQ(results[0].repetitions.size(), 3u);
  EXPECT_EQ(engine.counters().prefill_sizes, (std::vector<int>{16, 4, 16, 4, 16, 4}));
  EXPECT_EQ(engine.counters().restores, 0);
}

TEST_F(BenchRunner, WarmupIsOneUntimedRunBeforeTheRepetitions) {
  FakeEngine warm, cold;
  std::vector<int> event_repetitions;
  RunnerCallbacks cb;
  cb.event = [&](const PhaseEvent& e) {
    if (e.category == "phase" && e.name == "prefill") event_repetitions.push_back(e.repetition);
  };
  const auto with = run(warm, {make_case(8, 2)}, options(2, true), cb);
  EXPECT_EQ(event_repetitions, (std::vector<int>{0, 1}));  // the warm-up is not reported
  const auto without = run(cold, {make_case(8, 2)}, options(2, false));
  EXPECT_EQ(with[0].repetitions.size(), 2u);
  EXPECT_EQ(without[0].repetitions.size(), 2u);
  EXPECT_EQ(warm.counters().prefills, 3);
  EXPECT_EQ(cold.counters().prefills, 2);
  EXPECT_EQ(warm.counters().decode_steps, 6);
  EXPECT_EQ(cold.counters().decode_steps, 4);
}

TEST_F(BenchRunner, AModelThatDoesNotLoadIsAnErrorRowAndTheSweepGoesOn) {
  FakeScript script;
  script.fail_load["bad.gguf"] = {ErrorKind::kBadInput, "unknown model architecture: 'foo'"};
  FakeEngine engine(script);
  int handed_on = 0;
  RunnerCallbacks cb;
  cb.result = [&](const result::TestResult&) { ++handed_on; };
  const auto results =
      run(engine, {make_case(4, 0, 0, "bad.gguf"), make_case(8, 0, 0, "bad.gguf"), make_case(4, 0, 0, "good.gguf")},
          options(2, false), cb);
  ASSERT_EQ(results.size(), 3u);
  for (int i : {0, 1}) {
    ASSERT_TRUE(results[i].error);
    EXPECT_EQ(results[i].error->kind, "bad_input");
    EXPECT_EQ(results[i].error->message, "unknown model architecture: 'foo'");
    EXPECT_TRUE(results[i].repetitions.empty());
  }
  EXPECT_FALSE(results[2].error);
  EXPECT_EQ(results[2].repetitions.size(), 2u);
  EXPECT_EQ(handed_on, 3);
  EXPECT_EQ(engine.counters().loads, 1 + 2);  // the bad file is tried once for its group
}

TEST_F(BenchRunner, ADecodeFailureAtStepKIsAnErrorRowWithTheRepetitionsBeforeIt) {
  FakeScript script;
  script.fail_step_at = 11;  // in repetition 1 of the first case (8 steps each)
  FakeEngine engine(script);
  std::vector<int> stored;
  RunnerCallbacks cb;
  cb.repetition = [&](size_t i, const TestCase&, result::Repetition& rep) {
    stored.push_back(static_cast<int>(i) * 100 + rep.index);
  };
  const auto results = run(engine, {make_case(0, 8), make_case(0, 8)}, options(3, false), cb);
  ASSERT_TRUE(results[0].error);
  EXPECT_EQ(results[0].error->kind, "environment");
  EXPECT_NE(results[0].error->message.find("decode step 11"), std::string::npos) << results[0].error->message;
  EXPECT_EQ(results[0].repetitions.size(), 1u);
  EXPECT_FALSE(results[1].error);
  EXPECT_EQ(results[1].repetitions.size(), 3u);
  EXPECT_EQ(stored, (std::vector<int>{0, 100, 101, 102}));
}

TEST_F(BenchRunner, APrefillOrContextFailureIsAnErrorRowAndTheNextCaseRuns) {
  FakeScript script;
  script.fail_prefill_at = 1;
  script.fail_context_at = 2;
  FakeEngine engine(script);
  const auto results = run(engine, {make_case(8, 0), make_case(8, 0), make_case(8, 0)}, options(2, false));
  ASSERT_TRUE(results[0].error);
  EXPECT_NE(results[0].error->message.find("prefill 1"), std::string::npos);
  ASSERT_TRUE(results[1].error);
  EXPECT_EQ(results[1].error->kind, "bad_input");
  EXPECT_NE(results[1].error->message.find("context 2"), std::string::npos);
  EXPECT_FALSE(results[2].error);
  EXPECT_EQ(results[2].repetitions.size(), 2u);
}

TEST_F(BenchRunner, AnEngineThatCannotPlaceThreadsRefusesACpuMask) {
  FakeScript script;
  script.cpu_placement = false;
  FakeEngine engine(script);
  TestCase masked = make_case(8, 0);
  masked.cpu_mask = "0x1";
  const auto results = run(engine, {masked, make_case(8, 0)}, options(1, false));
  ASSERT_TRUE(results[0].error);
  EXPECT_EQ(results[0].error->kind, "bad_input");
  EXPECT_NE(results[0].error->message.find("cannot place threads"), std::string::npos);
  EXPECT_FALSE(results[1].error);
  EXPECT_EQ(engine.counters().contexts, 1);  // the refusal came before the engine was asked
}

TEST_F(BenchRunner, AStopRequestEndsTheSweepAfterTheRepetitionInFlight) {
  FakeEngine engine;
  int seen = 0;
  RunnerCallbacks cb;
  cb.repetition = [&](size_t, const TestCase&, result::Repetition& rep) {
    ++seen;
    if (rep.index == 1) cb.stop.request_stop();
  };
  const auto results = run(engine, {make_case(4, 2), make_case(4, 2)}, options(5, false), cb);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_FALSE(results[0].error);
  EXPECT_EQ(results[0].repetitions.size(), 2u);
  EXPECT_EQ(seen, 2);
  ASSERT_TRUE(results[1].error);
  EXPECT_EQ(results[1].error->kind, "interrupted");
  EXPECT_EQ(engine.counters().prefills, 2);
}

TEST_F(BenchRunner, StoredRepetitionsAreReusedNotRunAgain) {
  FakeEngine engine;
  RunnerCallbacks cb;
  cb.stored_repetition = [](size_t i, int r) -> std::optional<result::Repetition> {
    if (i == 0 && r < 2) {  // case 0: two of three stored; case 1: all stored
      result::Repetition rep;
      rep.index = r;
      rep.prefill_ms = 123;
      return rep;
    }
    if (i == 1) {
      result::Repetition rep;
      rep.index = r;
      rep.prefill_ms = 456;
      return rep;
    }
    return std::nullopt;
  };
  int recorded = 0;
  cb.repetition = [&](size_t, const TestCase&, result::Repetition&) { ++recorded; };
  const auto results = run(engine, {make_case(8, 0), make_case(8, 0)}, options(3, false), cb);
  ASSERT_EQ(results[0].repetitions.size(), 3u);
  EXPECT_EQ(results[0].repetitions[0].prefill_ms, 123);
  EXPECT_EQ(results[0].repetitions[1].prefill_ms, 123);
  EXPECT_NE(results[0].repetitions[2].prefill_ms, 123);
  EXPECT_EQ(recorded, 1);
  ASSERT_EQ(results[1].repetitions.size(), 3u);
  for (const auto& rep : results[1].repetitions) EXPECT_EQ(rep.prefill_ms, 456);
  EXPECT_EQ(engine.counters().prefills, 1);
  EXPECT_EQ(engine.counters().contexts, 1);  // a case stored whole needs no context
}

}  // namespace
}  // namespace edgeprobe::runner
