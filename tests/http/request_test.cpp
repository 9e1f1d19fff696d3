// The request path's pure parts: timing of a streamed answer, the bench request, the
// in-process completer, and the load summary with vLLM's field names.
#include <gtest/gtest.h>

#include "core/error.h"
#include "engine/fake_engine.h"
#include "runner/bench_runner.h"
#include "runner/load_runner.h"
#include "runner/session_runner.h"
#include "runner/request_path.h"

using namespace edgeprobe;

namespace {

engine::CompletionResult result_with_deltas(std::vector<int64_t> t_ms, int completion_tokens) {
  engine::CompletionResult r;
  r.start_ns = 0;
  for (auto t : t_ms) r.deltas.push_back({t * 1000000, "x", 0});
  r.end_ns = (t_ms.empty() ? 0 : t_ms.back() + 2) * 1000000;
  r.completion_tokens = completion_tokens;
  return r;
}

TEST(TimeRequest, TtftAtTheFirstContentItlBetweenChunksTpotOverTokens) {
  const auto t = runner::time_request(result_with_deltas({100, 110, 130, 160}, 4));
  EXPECT_DOUBLE_EQ(t.ttft_ms, 100);
  EXPECT_DOUBLE_EQ(t.e2e_ms, 162);
  ASSERT_EQ(t.itl_ms.size(), 3u);
  EXPECT_DOUBLE_EQ(t.itl_ms[1], 20);
  EXPECT_DOUBLE_EQ(t.tpot_ms, 20);  // (160 - 100) / (4 - 1)
  // Chunks that carried several tokens: TPOT counts the tokens, ITL stays per chunk.
  const auto multi = runner::time_request(result_with_deltas({100, 130, 160}, 7));
  EXPECT_DOUBLE_EQ(multi.tpot_ms, 10);
  EXPECT_EQ(multi.itl_ms.size(), 2u);
  EXPECT_THROW(runner::time_request(result_with_deltas({}, 0)), Error);
}

TEST(RequestPath, InProcessCompleterGivesOneDeltaPerTokenAndStopsAtEndOfGeneration) {
  engine::FakeScript script;
  script.reply = "hi";
  script.eog_after = 3;
  engine::FakeEngine fake(script);
  const auto model = fake.load({"fake.gguf"});
  engine::ContextOptions co;
  co.n_ctx = 64;
  const auto completer = model->new_completer(co);
  engine::CompletionRequest req;
  req.prompt = "hello";
  req.max_tokens = 10;
  const RunClock clock;
  int seen = 0;
  const auto r = completer->complete(req, clock, [&](const engine::ContentDelta&) { ++seen; });
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.completion_tokens, 3);
  EXPECT_EQ(seen, 3);
  EXPECT_EQ(r.text, "hih");
  EXPECT_EQ(r.prompt_tokens, 6);  // one byte per token, and BOS
  req.ignore_eos = true;
  const auto all = completer->complete(req, clock);
  EXPECT_EQ(all.completion_tokens, 10);
  EXPECT_EQ(all.finish_reason, "length");
}

TEST(RequestPath, BenchRequestDrawsTokenIdsWhereTheApiTakesThem) {
  engine::FakeEngine fake;
  const auto model = fake.load({"fake.gguf"});
  workload::TestCase test;
  test.n_prompt = 12;
  test.n_gen = 5;
  const auto tokens = runner::bench_request(*model, test, "completions", 1);
  EXPECT_EQ(tokens.prompt_tokens.size(), 12u);
  EXPECT_EQ(tokens.max_tokens, 5);
  EXPECT_TRUE(tokens.ignore_eos);
  EXPECT_EQ(runner::bench_request(*model, test, "completions", 1).prompt_tokens, tokens.prompt_tokens);
  const auto chat = runner::bench_request(*model, test, "chat", 1);
  ASSERT_EQ(chat.messages.size(), 1u);
  EXPECT_TRUE(chat.prompt_tokens.empty());
  test.n_depth = 4;
  EXPECT_THROW(runner::bench_request(*model, test, "completions", 1), Error);
}

runner::RequestRecord record(double start_s, double ttft, double tpot, double e2el, int tokens) {
  runner::RequestRecord r;
  r.ok = true;
  r.start_s = start_s;
  r.end_s = start_s + e2el / 1e3;
  r.ttft_ms = ttft;
  r.tpot_ms = tpot;
  r.e2el_ms = e2el;
  r.completion_tokens = tokens;
  r.prompt_tokens = 10;
  r.itl_ms = std::vector<double>(static_cast<size_t>(tokens - 1), tpot);
  return r;
}

TEST(LoadSummary, ThroughputGoodputAndPercentilesUnderVllmNames) {
  std::vector<runner::RequestRecord> records = {record(0, 100, 10, 1000, 91), record(0.5, 300, 20, 1500, 61)};
  runner::RequestRecord failed;
  failed.error = "HTTP 500: boom";
  records.push_back(failed);
  const auto j = result::to_json(runner::summarize_load(records, runner::parse_slo("ttft_ms=200,tpot_ms=15")));
  EXPECT_EQ(j["completed"], 2);
  EXPECT_EQ(j["failed"], 1);
  EXPECT_DOUBLE_EQ(j["duration_s"].get<double>(), 2.0);  // 0 .. 0.5 + 1.5
  EXPECT_DOUBLE_EQ(j["request_throughput"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j["output_throughput"].get<double>(), 76.0);  // 152 tokens over 2 s
  EXPECT_DOUBLE_EQ(j["goodput"].get<double>(), 0.5);             // only the first met both bounds
  EXPECT_DOUBLE_EQ(j["mean_ttft_ms"].get<double>(), 200);
  EXPECT_DOUBLE_EQ(j["median_ttft_ms"].get<double>(), 200);
  EXPECT_DOUBLE_EQ(j["p99_ttft_ms"].get<double>(), 298);  // linear between 100 and 300
  EXPECT_TRUE(j.contains("p90_itl_ms"));
  EXPECT_TRUE(j.contains("median_e2el_ms"));
  EXPECT_EQ(j["errors"][0], "HTTP 500: boom");
}

TEST(LoadSummary, SloParsingRefusesUnknownBounds) {
  EXPECT_EQ(runner::parse_slo("ttft_ms=500").at("ttft_ms"), 500);
  EXPECT_THROW(runner::parse_slo("latency=5"), Error);
  EXPECT_THROW(runner::parse_slo("ttft_ms=-1"), Error);
  EXPECT_THROW(runner::parse_slo("ttft_ms"), Error);
}

TEST(LoadLevel, ClosedLoopRunsEveryRequestOnTheInProcessCompleter) {
  engine::FakeScript script;
  script.decode_ms_per_step = 0.2;
  engine::FakeEngine fake(script);
  const auto model = fake.load({"fake.gguf"});
  workload::TestCase test;
  test.n_prompt = 8;
  test.n_gen = 4;
  engine::ContextOptions co;
  co.n_ctx = 64;
  runner::LoadOptions options;
  options.num_requests = 6;
  const RunClock clock;
  const auto j = result::to_json(runner::run_load_level(*model, co, test, "completions", options, 2, 1, clock, StopToken()));
  EXPECT_EQ(j["completed"], 6);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["concurrency"], 2);
  EXPECT_EQ(j["total_output_tokens"], 24);
  EXPECT_GT(j["request_throughput"].get<double>(), 0);
  options.request_rate = 1000;
  options.max_concurrency = 3;
  const auto open = result::to_json(runner::run_load_level(*model, co, test, "completions", options, 0, 1, clock, StopToken()));
  EXPECT_TRUE(open["concurrency"].is_null()) << "an open loop has no concurrency of its own";
  EXPECT_EQ(open["completed"], 6);
  EXPECT_EQ(open["request_rate"], 1000);
  EXPECT_EQ(open["max_concurrency"], 3);
}

TEST(RequestPath, BenchRunsEachRepetitionAsOneRequestWhenAsked) {
  engine::FakeEngine fake;
  workload::TestCase test;
  test.model_path = "m.gguf";
  test.n_prompt = 16;
  test.n_gen = 6;
  runner::RunnerOptions o;
  o.repetitions = 2;
  o.api = "completions";
  const RunClock clock;
  const auto results = runner::run_test_cases(fake, {test}, o, clock, [](const std::string&) { return 0; }, {});
  ASSERT_EQ(results.size(), 1u);
  ASSERT_FALSE(results[0].error) << results[0].error->message;
  ASSERT_EQ(results[0].repetitions.size(), 2u);
  for (const auto& rep : results[0].repetitions) {
    EXPECT_EQ(rep.request["prompt_tokens"], 16);
    EXPECT_EQ(rep.request["completion_tokens"], 6);
    EXPECT_EQ(rep.decode_step_ms.size(), 5u);
    EXPECT_GT(rep.ttft_ms, 0);
  }
  // Warm-up and two repetitions: one prefill each, as many decode steps as tokens after the first.
  EXPECT_EQ(fake.counters().prefills, 3);
  EXPECT_EQ(fake.counters().decode_steps, 15);
  test.n_depth = 8;  // a depth needs the token level
  const auto refused = runner::run_test_cases(fake, {test}, o, clock, [](const std::string&) { return 0; }, {});
  ASSERT_TRUE(refused[0].error);
  EXPECT_EQ(refused[0].error->kind, "bad_input");
}

TEST(RequestPath, SessionTurnsCarryTheHistoryAsChatMessages) {
  engine::FakeScript script;
  script.reply = "ok";
  script.eog_after = 2;
  engine::FakeEngine fake(script);
  runner::SessionOptions o;
  o.rounds = 1;
  o.api = "chat";
  std::vector<runner::TurnResult> turns;
  runner::SessionCallbacks cb;
  cb.turn_done = [&](size_t, runner::TurnResult& t) { turns.push_back(t); };
  const RunClock clock;
  runner::SessionConfig config;
  config.model_path = "m.gguf";
  config.n_ctx = 512;
  config.max_tokens = 8;
  config.n_batch = 64;
  runner::run_session(fake, {config}, {{"c1", "en", {"hi", "again"}}}, o, clock, cb);
  ASSERT_EQ(turns.size(), 2u);
  EXPECT_EQ(turns[0].reply, "ok");
  EXPECT_EQ(turns[0].stop_reason, "end_of_turn");
  ASSERT_TRUE(turns[1].request);
  EXPECT_EQ((*turns[1].request)["api"], "chat");
  // The second request holds the whole conversation: it is longer than the first.
  EXPECT_GT(turns[1].prompt_tokens, turns[0].prompt_tokens + 5);
}

}  // namespace
