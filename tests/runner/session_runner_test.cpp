// run_session driven through the scripted fake engine. The fake's chat template renders
// "<|role|>content\n" per message and "<|assistant|>" to open a reply; its tokenizer is
// one token per byte (plus BOS on a conversation's first turn), so token counts below
// are text lengths.
#include <gtest/gtest.h>

#include "engine/fake_engine.h"
#include "runner/bench_runner.h"
#include "runner/session_runner.h"

namespace edgeprobe::runner {
namespace {

using engine::FakeEngine;
using engine::FakeScript;

// What the fake template makes of one user message opening a reply.
std::string user_turn(const std::string& text) { return "<|user|>" + text + "\n<|assistant|>"; }
int first_turn_tokens(const std::string& text) { return static_cast<int>(user_turn(text).size()) + 1; }  // + BOS

SessionConfig config(int n_ctx, int max_tokens, const std::string& model = "m.gguf") {
  SessionConfig c;
  c.model_path = model;
  c.n_ctx = n_ctx;
  c.max_tokens = max_tokens;
  c.n_batch = 64;
  return c;
}

SessionOptions one_round(int conversations = 50) {
  SessionOptions o;
  o.rounds = 1;
  o.conversations = conversations;
  return o;
}

struct Turns {
  std::vector<std::pair<size_t, TurnResult>> done;
  std::vector<std::pair<size_t, result::ErrorInfo>> failed_configs;
  std::vector<std::pair<size_t, std::string>> skipped;  // (turns, why)
  SessionCallbacks callbacks() {
    SessionCallbacks cb;
    cb.turns_skipped = [this](size_t, size_t n, const std::string& why) { skipped.emplace_back(n, why); };
    cb.turn_done = [this](size_t ci, TurnResult& t) { done.emplace_back(ci, t); };
    cb.config_failed = [this](size_t ci, const result::ErrorInfo& e) { failed_configs.emplace_back(ci, e); };
    return cb;
  }
  const TurnResult& at(size_t i) const { return done.at(i).second; }
};

class SessionRunner : public ::testing::Test {
 protected:
  const RunClock clock_;
};

TEST_F(SessionRunner, HistoryStaysInTheCacheSoALaterTurnPrefillsOnlyItsNewText) {
  FakeScript script;
  script.reply = "abcdef";
  script.eog_after = 3;
  script.prefill_ms_per_token = 0.02;
  script.decode_ms_per_step = 0.1;
  FakeEngine engine(script);
  Turns turns;
  auto cb = turns.callbacks();
  int phase_events = 0;
  cb.event = [&](const PhaseEvent&) { ++phase_events; };
  run_session(engine, {config(512, 16)}, {{"c1", "en", {"hi", "how are you"}}}, one_round(), clock_, cb);

  ASSERT_EQ(turns.done.size(), 2u);
  const TurnResult& first = turns.at(0);
  EXPECT_EQ(first.prompt_tokens, first_turn_tokens("hi"));
  EXPECT_EQ(first.reply, "abc");
  EXPECT_EQ(first.generated_tokens, 4);  // a, b, c and the end of generation
  EXPECT_EQ(first.stop_reason, "end_of_turn");
  EXPECT_EQ(first.context_tokens, first.prompt_tokens + 3);
  EXPECT_FALSE(first.error);
  ASSERT_TRUE(first.prefill_ms && first.ttft_ms && first.e2e_ms);
  EXPECT_GE(*first.prefill_ms, first.prompt_tokens * 0.02);
  EXPECT_DOUBLE_EQ(*first.ttft_ms, *first.prefill_ms);
  ASSERT_EQ(first.decode_step_ms.size(), 3u);
  for (double ms : first.decode_step_ms) EXPECT_GE(ms, 0.1);
  EXPECT_GE(*first.e2e_ms, *first.prefill_ms + 0.3);

  const TurnResult& second = turns.at(1);
  const int fresh = static_cast<int>(user_turn("how are you").size());
  EXPECT_EQ(second.turn_index, 1);
  EXPECT_EQ(second.prompt_tokens, fresh);  // not the whole history again, and no BOS
  EXPECT_EQ(second.context_tokens, first.context_tokens + fresh + 3);
  EXPECT_EQ(engine.counters().prefill_sizes, (std::vector<int>{first.prompt_tokens, fresh}));
  EXPECT_EQ(phase_events, 4);  // prefill and decode of each turn
  EXPECT_TRUE(result::to_json(second)["error"].is_null());
}

TEST_F(SessionRunner, MaxTokensEndsATurnThatDoesNotEndItself) {
  FakeScript script;
  script.reply = "abcdefgh";
  script.decode_ms_per_step = 0.1;
  FakeEngine engine(script);
  Turns turns;
  run_session(engine, {config(512, 5)}, {{"c1", "en", {"hi"}}}, one_round(), clock_, turns.callbacks());
  ASSERT_EQ(turns.done.size(), 1u);
  const TurnResult& t = turns.at(0);
  EXPECT_EQ(t.stop_reason, "max_tokens");
  EXPECT_EQ(t.generated_tokens, 5);
  EXPECT_EQ(t.reply, "abcde");
  EXPECT_EQ(t.reply_tokens.size(), 5u);
  ASSERT_EQ(t.decode_step_ms.size(), 4u);
  double sum = 0;
  for (double ms : t.decode_step_ms) sum += ms;
  EXPECT_GE(sum, 0.4);
  ASSERT_TRUE(t.decode_tokens_per_s);
  EXPECT_NEAR(*t.decode_tokens_per_s, 4 / (sum / 1e3), 1e-6);
}

TEST_F(SessionRunner, AFullContextEndsItsConversationAndTheNextOneStartsEmpty) {
  FakeEngine engine;
  Turns turns;
  // 40 tokens: the first turn (25 + up to 5) fits, the second (33 more) does not.
  run_session(engine, {config(40, 5)}, {{"c1", "en", {"hi", "how are you", "bye"}}, {"c2", "en", {"yo"}}},
              one_round(), clock_, turns.callbacks());
  ASSERT_EQ(turns.done.size(), 3u);
  EXPECT_EQ(turns.at(0).stop_reason, "max_tokens");
  const TurnResult& full = turns.at(1);
  EXPECT_EQ(full.stop_reason, "context_full");
  EXPECT_EQ(full.generated_tokens, 0);
  EXPECT_EQ(full.context_tokens, turns.at(0).context_tokens);
  EXPECT_EQ(full.end_ns, 0);  // nothing was timed
  // "bye" will not run: progress is told so it can settle the total.
  ASSERT_EQ(turns.skipped.size(), 1u);
  EXPECT_EQ(turns.skipped[0].first, 1u);
  EXPECT_EQ(turns.skipped[0].second, "the context is full");
  EXPECT_EQ(turns.at(2).conversation_id, "c2");
  EXPECT_EQ(turns.at(2).prompt_tokens, first_turn_tokens("yo"));
  EXPECT_EQ(engine.counters().last_context_options.n_ctx, 40);
}

TEST_F(SessionRunner, ShiftDropsTheOldestHalfOfTheHistoryWhenAsked) {
  FakeEngine engine;
  Turns turns;
  SessionOptions o = one_round();
  o.on_overflow = "shift";
  // Each turn adds 23 prompt tokens and its 4 reply tokens: the fourth needs 109 of 100.
  run_session(engine, {config(100, 4)}, {{"c1", "en", {"a", "a", "a", "a"}}}, o, clock_, turns.callbacks());
  ASSERT_EQ(turns.done.size(), 4u);
  EXPECT_EQ(turns.at(2).context_tokens, 82);
  EXPECT_EQ(turns.at(3).stop_reason, "max_tokens,context_shifted");
  EXPECT_EQ(turns.at(3).context_tokens, 82 - 40 + 23 + 4);  // kept BOS + 41 of 81, then the turn
}

TEST_F(SessionRunner, AnEngineThatCannotShiftFailsThatTurnOnly) {
  FakeScript script;
  script.context_shift = false;
  FakeEngine engine(script);
  Turns turns;
  SessionOptions o = one_round();
  o.on_overflow = "shift";
  run_session(engine, {config(100, 4)}, {{"c1", "en", {"a", "a", "a", "a", "a"}}, {"c2", "en", {"b"}}}, o, clock_,
              turns.callbacks());
  ASSERT_EQ(turns.done.size(), 5u);
  const TurnResult& failed = turns.at(3);
  EXPECT_EQ(failed.stop_reason, "error");
  ASSERT_TRUE(failed.error);
  EXPECT_NE(failed.error->message.find("cannot shift"), std::string::npos) << failed.error->message;
  EXPECT_EQ(turns.at(4).conversation_id, "c2");
}

TEST_F(SessionRunner, AFailingTurnEndsItsConversationAndTheNextConversationRuns) {
  FakeScript script;
  // The second decode step of the second turn: a turn cut at 4 tokens makes 4 steps, 3
  // timed and the untimed one that puts its last token in the cache.
  script.fail_step_at = 6;
  FakeEngine engine(script);
  Turns turns;
  run_session(engine, {config(512, 4)}, {{"c1", "en", {"hi", "how are you", "bye"}}, {"c2", "en", {"yo"}}},
              one_round(), clock_, turns.callbacks());
  ASSERT_EQ(turns.done.size(), 3u);
  EXPECT_FALSE(turns.at(0).error);
  const TurnResult& failed = turns.at(1);
  EXPECT_EQ(failed.conversation_id, "c1");
  EXPECT_EQ(failed.turn_index, 1);
  EXPECT_EQ(failed.stop_reason, "error");
  ASSERT_TRUE(failed.error);
  EXPECT_EQ(failed.error->kind, "environment");
  EXPECT_NE(failed.error->message.find("decode step 6"), std::string::npos);
  EXPECT_EQ(failed.generated_tokens, 2);  // what was measured before the failure is kept
  EXPECT_EQ(failed.end_ns, 0);
  const auto j = result::to_json(failed);
  EXPECT_EQ(j["stop_reason"], "error");
  EXPECT_EQ(j["error"]["kind"], "environment");
  EXPECT_EQ(j["error"]["message"], failed.error->message);
  EXPECT_EQ(turns.at(2).conversation_id, "c2");
  EXPECT_FALSE(turns.at(2).error);
}

TEST_F(SessionRunner, AFailingPrefillIsRecordedInItsTurn) {
  FakeScript script;
  script.fail_prefill_at = 1;
  FakeEngine engine(script);
  Turns turns;
  run_session(engine, {config(512, 4)}, {{"c1", "en", {"hi", "bye"}}, {"c2", "en", {"yo"}}}, one_round(), clock_,
              turns.callbacks());
  ASSERT_EQ(turns.done.size(), 2u);
  EXPECT_EQ(turns.at(0).stop_reason, "error");
  EXPECT_EQ(turns.at(0).prompt_tokens, first_turn_tokens("hi"));
  EXPECT_EQ(turns.at(1).conversation_id, "c2");
  EXPECT_EQ(turns.at(1).stop_reason, "max_tokens");
}

TEST_F(SessionRunner, AConfigWhoseModelDoesNotLoadIsRecordedAndTheNextConfigRuns) {
  FakeScript script;
  script.fail_load["bad.gguf"] = {ErrorKind::kBadInput, "unknown model architecture: 'foo'"};
  FakeEngine engine(script);
  Turns turns;
  run_session(engine, {config(512, 4, "bad.gguf"), config(256, 4, "bad.gguf"), config(512, 4, "good.gguf")},
              {{"c1", "en", {"hi"}}}, one_round(), clock_, turns.callbacks());
  ASSERT_EQ(turns.failed_configs.size(), 2u);
  EXPECT_EQ(turns.failed_configs[0].first, 0u);
  EXPECT_EQ(turns.failed_configs[1].first, 1u);
  EXPECT_EQ(turns.failed_configs[0].second.kind, "bad_input");
  EXPECT_EQ(turns.failed_configs[0].second.message, "unknown model architecture: 'foo'");
  ASSERT_EQ(turns.done.size(), 1u);
  EXPECT_EQ(turns.done[0].first, 2u);
  EXPECT_EQ(engine.counters().loads, 2);  // the bad file once for both of its configs
}

TEST_F(SessionRunner, AContextTheEngineRefusesFailsOnlyItsConfig) {
  FakeScript script;
  script.fail_context_at = 1;
  FakeEngine engine(script);
  Turns turns;
  run_session(engine, {config(512, 4), config(256, 4)}, {{"c1", "en", {"hi"}}}, one_round(), clock_,
              turns.callbacks());
  ASSERT_EQ(turns.failed_configs.size(), 1u);
  EXPECT_EQ(turns.failed_configs[0].first, 0u);
  EXPECT_NE(turns.failed_configs[0].second.message.find("context 1"), std::string::npos);
  ASSERT_EQ(turns.done.size(), 1u);
  EXPECT_EQ(turns.done[0].first, 1u);
  EXPECT_EQ(engine.counters().loads, 1);  // one model for both configs
}

TEST_F(SessionRunner, AStopRequestEndsTheSessionAfterTheTurnInFlight) {
  FakeEngine engine;
  Turns turns;
  auto cb = turns.callbacks();
  const auto record = cb.turn_done;
  cb.turn_done = [&](size_t ci, TurnResult& t) {
    record(ci, t);
    cb.stop.request_stop();
  };
  SessionOptions o;
  o.rounds = 3;
  run_session(engine, {config(512, 4), config(256, 4)}, {{"c1", "en", {"hi", "bye"}}, {"c2", "en", {"yo"}}}, o,
              clock_, cb);
  ASSERT_EQ(turns.done.size(), 1u);
  EXPECT_FALSE(turns.at(0).error);
  EXPECT_EQ(turns.at(0).stop_reason, "max_tokens");  // the turn in flight was finished
  EXPECT_EQ(engine.counters().prefills, 1);
  EXPECT_EQ(engine.counters().contexts, 1);
}

TEST_F(SessionRunner, RoundsRepeatTheFirstConversations) {
  FakeEngine engine;
  Turns turns;
  SessionOptions o;
  o.rounds = 2;
  o.conversations = 1;
  run_session(engine, {config(512, 2)}, {{"c1", "en", {"hi", "bye"}}, {"c2", "en", {"yo"}}}, o, clock_,
              turns.callbacks());
  ASSERT_EQ(turns.done.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(turns.at(i).conversation_id, "c1");
    EXPECT_EQ(turns.at(i).round, static_cast<int>(i / 2));
  }
  // Each conversation starts from an empty cache: the first turn of round 2 has BOS again.
  EXPECT_EQ(turns.at(2).prompt_tokens, first_turn_tokens("hi"));
}

TEST_F(SessionRunner, StoredTurnsAreReplayedUntimedAndTheRunGoesOnFromTheFirstMissingOne) {
  FakeScript script;
  script.reply = "abcdef";
  script.eog_after = 3;
  FakeEngine engine(script);
  Turns turns;
  auto cb = turns.callbacks();
  cb.completed_turn = [](size_t ci, int round, const std::string& conv, int ti) -> std::optional<TurnResult> {
    if (ci != 0 || round != 0 || conv != "c1" || ti != 0) return std::nullopt;
    TurnResult t;
    t.reply = "abc";
    t.stop_reason = "end_of_turn";
    t.reply_tokens = {'a', 'b', 'c'};
    return t;
  };
  run_session(engine, {config(512, 16)}, {{"c1", "en", {"hi", "how are you"}}}, one_round(), clock_, cb);
  ASSERT_EQ(turns.done.size(), 1u);
  const int fresh = static_cast<int>(user_turn("how are you").size());
  EXPECT_EQ(turns.at(0).turn_index, 1);
  EXPECT_EQ(turns.at(0).prompt_tokens, fresh);
  EXPECT_EQ(engine.counters().prefill_sizes, (std::vector<int>{first_turn_tokens("hi"), 3, fresh}));
}

// A resumed run replays stored turns into the cache; the turn after them must see the
// same cache as in a run that was never interrupted, whether the stored reply ended
// itself (its end-of-generation token was picked, never decoded) or was cut at max_tokens.
TEST_F(SessionRunner, AReplayedTurnLeavesTheCacheAsTheMeasuredTurnDid) {
  for (const int eog_after : {3, -1}) {
    FakeScript script;
    script.reply = "abcdefgh";
    script.eog_after = eog_after;
    const std::vector<Conversation> convs{{"c1", "en", {"hi", "how are you"}}};
    FakeEngine straight_engine(script);
    Turns straight;
    run_session(straight_engine, {config(512, 4)}, convs, one_round(), clock_, straight.callbacks());
    ASSERT_EQ(straight.done.size(), 2u);

    FakeEngine resumed_engine(script);
    Turns resumed;
    auto cb = resumed.callbacks();
    const TurnResult stored = straight.at(0);
    cb.completed_turn = [&](size_t, int, const std::string&, int ti) -> std::optional<TurnResult> {
      return ti == 0 ? std::optional<TurnResult>(stored) : std::nullopt;
    };
    run_session(resumed_engine, {config(512, 4)}, convs, one_round(), clock_, cb);
    ASSERT_EQ(resumed.done.size(), 1u);
    EXPECT_EQ(resumed.at(0).context_tokens, straight.at(1).context_tokens) << "eog_after " << eog_after;
    EXPECT_EQ(resumed.at(0).reply, straight.at(1).reply) << "eog_after " << eog_after;
  }
}

}  // namespace
}  // namespace edgeprobe::runner
