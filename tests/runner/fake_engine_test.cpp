// The engine seam's own promises, checked on the fake (and on LlamaEngine's provenance,
// which needs no model): the runner tests rely on them.
#include <gtest/gtest.h>

#include "core/clock.h"
#include "core/error.h"
#include "engine/fake_engine.h"
#include "engine/llama_engine.h"

namespace edgeprobe::engine {
namespace {

std::unique_ptr<Context> fake_context(FakeEngine& engine, int n_ctx, std::unique_ptr<LoadedModel>& model) {
  model = engine.load({"m.gguf"});
  ContextOptions o;
  o.n_ctx = n_ctx;
  return model->new_context(o);
}

TEST(FakeEngine, KvStateRoundTripsAndTheGreedyOutputGoesOnWhereItWas) {
  FakeScript script;
  script.reply = "xyz";
  FakeEngine engine(script);
  std::unique_ptr<LoadedModel> model;
  auto ctx = fake_context(engine, 64, model);
  ctx->decode(model->tokenize("hello", true), true);
  ctx->decode_one(ctx->argmax_last());
  const Token next = ctx->argmax_last();
  EXPECT_EQ(next, 'y');
  const auto state = ctx->save_state();
  ASSERT_FALSE(state.empty());

  ctx->clear();
  EXPECT_EQ(ctx->n_past(), 0);
  ASSERT_TRUE(ctx->restore_state(state));
  EXPECT_EQ(ctx->n_past(), 7);  // BOS, 5 bytes, one step
  EXPECT_EQ(ctx->argmax_last(), next);

  // Another context takes the same state: the cache travels.
  auto other = model->new_context({});
  ASSERT_TRUE(other->restore_state(state));
  EXPECT_EQ(other->n_past(), 7);
  EXPECT_EQ(other->save_state(), state);
}

TEST(FakeEngine, RefusesAStateThatIsNotOneOfItsOwn) {
  FakeEngine engine;
  std::unique_ptr<LoadedModel> model;
  auto ctx = fake_context(engine, 64, model);
  ctx->decode({1, 2, 3});
  EXPECT_FALSE(ctx->restore_state({1, 2, 3, 4, 5}));
  EXPECT_FALSE(ctx->restore_state({}));
}

TEST(FakeEngine, WithoutKvStateItSavesNothingAndRestoresNothing) {
  FakeScript script;
  script.kv_state = false;
  FakeEngine engine(script);
  EXPECT_FALSE(engine.capabilities().kv_state);
  std::unique_ptr<LoadedModel> model;
  auto ctx = fake_context(engine, 64, model);
  ctx->decode({1, 2, 3});
  EXPECT_TRUE(ctx->save_state().empty());
  EXPECT_FALSE(ctx->restore_state({1}));
}

TEST(FakeEngine, AFullCacheIsAnErrorAsInLlamaCpp) {
  FakeEngine engine;
  std::unique_ptr<LoadedModel> model;
  auto ctx = fake_context(engine, 4, model);
  ctx->decode({1, 2, 3});
  ctx->decode_one(4);
  EXPECT_EQ(ctx->n_past(), 4);
  try {
    ctx->decode_one(5);
    FAIL() << "a fifth token fitted in a 4-token cache";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kEnvironment);
    EXPECT_NE(std::string(e.what()).find("KV cache is full"), std::string::npos) << e.what();
  }
}

TEST(FakeEngine, TokenizesByteByByteAndBackAndEndsWhereScripted) {
  FakeScript script;
  script.reply = "ab";
  script.eog_after = 3;
  FakeEngine engine(script);
  std::unique_ptr<LoadedModel> model;
  auto ctx = fake_context(engine, 64, model);
  const auto tokens = model->tokenize("hé", true);
  ASSERT_EQ(tokens.size(), 4u);  // BOS and three UTF-8 bytes
  EXPECT_EQ(tokens[0], model->bos_token());
  std::string back;
  for (Token t : tokens) back += model->token_to_piece(t);
  EXPECT_EQ(back, "hé");

  ctx->decode(tokens, true);
  std::string reply;
  Token t = ctx->argmax_last();
  int picks = 1;
  while (!model->is_end_of_generation(t)) {
    reply += model->token_to_piece(t);
    ctx->decode_one(t);
    t = ctx->argmax_last();
    ++picks;
  }
  EXPECT_EQ(reply, "aba");
  EXPECT_EQ(picks, 4);
}

TEST(FakeEngine, ShiftDropsTokensAfterTheKeptOnes) {
  FakeEngine engine;
  std::unique_ptr<LoadedModel> model;
  auto ctx = fake_context(engine, 64, model);
  ctx->decode({1, 2, 3, 4, 5, 6});
  ASSERT_TRUE(ctx->shift(1, 3));
  EXPECT_EQ(ctx->n_past(), 3);
  EXPECT_FALSE(ctx->shift(1, 5));  // more than it holds

  FakeScript no_shift;
  no_shift.context_shift = false;
  FakeEngine rigid(no_shift);
  auto ctx2 = fake_context(rigid, 64, model);
  ctx2->decode({1, 2, 3});
  EXPECT_FALSE(ctx2->shift(1, 1));
  EXPECT_EQ(ctx2->n_past(), 3);
}

TEST(FakeEngine, ScriptedLoadFailureCarriesItsKindAndMessage) {
  FakeScript script;
  script.fail_load["bad.gguf"] = {ErrorKind::kBadInput, "unknown model architecture: 'foo'"};
  FakeEngine engine(script);
  EXPECT_NO_THROW(engine.load({"good.gguf"}));
  try {
    engine.load({"bad.gguf"});
    FAIL() << "the scripted load failure did not happen";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_STREQ(e.what(), "unknown model architecture: 'foo'");
  }
  EXPECT_EQ(engine.counters().loads, 2);
}

TEST(FakeEngine, TakesAtLeastTheScriptedTime) {
  FakeScript script;
  script.prefill_ms_per_token = 0.5;
  script.decode_ms_per_step = 2;
  FakeEngine engine(script);
  std::unique_ptr<LoadedModel> model;
  auto ctx = fake_context(engine, 64, model);
  const RunClock clock;
  const int64_t t0 = clock.now_ns();
  ctx->decode(std::vector<Token>(8, 'a'));
  const int64_t t1 = clock.now_ns();
  ctx->decode_one('a');
  const int64_t t2 = clock.now_ns();
  EXPECT_GE(t1 - t0, 4'000'000);
  EXPECT_GE(t2 - t1, 2'000'000);
}

TEST(FakeEngine, ProvenanceNamesAScriptedEngine) {
  FakeEngine engine;
  const auto p = engine.provenance();
  EXPECT_EQ(p["name"], "fake");
  EXPECT_EQ(p["kind"], "scripted");
  EXPECT_EQ(p["capabilities"]["kv_state"], true);
}

TEST(LlamaEngine, ProvenanceSaysWhichCpuVariantRuns) {
  CpuBackendInfo backend;
  backend.variant = "haswell";
  backend.library_path = "/opt/llama/lib/libggml-cpu-haswell.so";
  backend.features = {{"AVX2", "1"}, {"FMA", "1"}};
  const LlamaEngine engine(backend);
  const auto p = engine.provenance();
  EXPECT_EQ(p["name"], "llama.cpp");
  EXPECT_EQ(p["kind"], "in-process");
  EXPECT_EQ(p["cpu_variant"], "haswell");
  EXPECT_EQ(p["cpu_variant_library"], backend.library_path);
  EXPECT_EQ(p["cpu_variant_features"]["AVX2"], "1");
  EXPECT_FALSE(p["commit"].get<std::string>().empty());
  EXPECT_TRUE(engine.capabilities().kv_state);
}

TEST(EngineHelpers, ParsesCpuMasksAndRefusesBadOnes) {
  EXPECT_EQ(parse_cpu_mask("0x5"), (std::vector<bool>{true, false, true, false}));
  EXPECT_THROW(parse_cpu_mask("0x0"), Error);
  EXPECT_THROW(parse_cpu_mask("0xg"), Error);
  EXPECT_THROW(parse_cpu_mask(""), Error);
}

TEST(EngineHelpers, PlainChatTextEndsWithTheAssistantsTurn) {
  EXPECT_EQ(plain_chat_text({{"user", "hi"}}, true), "user: hi\nassistant: ");
  EXPECT_EQ(plain_chat_text({{"user", "hi"}, {"assistant", "yo"}}, false), "user: hi\nassistant: yo\n");
}

}  // namespace
}  // namespace edgeprobe::engine
