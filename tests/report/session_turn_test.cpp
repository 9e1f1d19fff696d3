// result::Turn and its JSON: every field survives a round trip, a document that lacked
// keys is written back as it was, and a mistyped stored field is one error naming it.
#include <gtest/gtest.h>

#include "core/error.h"
#include "result/session.h"

using namespace edgeprobe;
using nlohmann::json;

namespace {

result::Turn every_field() {
  result::Turn t;
  t.round = 2;
  t.conversation_id = "c07";
  t.turn_index = 3;
  t.prompt_tokens = 41;
  t.context_tokens = 900;
  t.generated_tokens = 16;
  t.stop_reason = "max_tokens,context_shifted";
  t.ttft_ms = 120.5;
  t.prefill_ms = 118.25;
  t.prefill_tokens_per_s = 346.7;
  t.decode_tokens_per_s = 19.75;
  t.e2e_ms = 880.125;
  t.decode_step_ms = {50.5, 51.0, 49.75};
  t.start_ns = 1'000'000'000'123;
  t.prefill_end_ns = 1'000'120'000'000;
  t.end_ns = 1'000'880'000'000;
  t.reply = "a \"quoted\", reply\nwith a comma";
  t.reply_tokens = {1, 32000, 7};
  t.telemetry = {{"prefill", {{"cpu", {{"freq_khz_mean", 2.4e6}}}}}, {"decode", nullptr}};
  t.missed_frame_share_prefill = 0.25;
  t.missed_frame_share_decode = 0.0;
  t.frames_prefill = result::FrameCounts{8, 2, 1};
  t.frames_decode = result::FrameCounts{50, 0, 3};
  t.request = json{{"api", "chat"}, {"finish_reason", "length"}, {"tpot_ms", 50.1}, {"server", json::object()}};
  t.prefill_remote = json{{"mode", "remote"}, {"transfer_ms", 3.5}};
  return t;
}

TEST(SessionTurn, EveryFieldSurvivesARoundTrip) {
  const result::Turn t = every_field();
  const json j = result::to_json(t);
  for (const char* key : {"frames_prefill", "frames_decode", "request", "prefill_remote"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(result::turn_from_json(j), t);
  EXPECT_EQ(result::turn_from_json(json::parse(j.dump())), t);  // through text, as the store keeps it
}

TEST(SessionTurn, FiguresNotMeasuredAreNullAndOptionalPartsAbsent) {
  result::Turn t = every_field();
  t.ttft_ms = t.prefill_ms = t.prefill_tokens_per_s = t.decode_tokens_per_s = t.e2e_ms = std::nullopt;
  t.missed_frame_share_prefill = t.missed_frame_share_decode = std::nullopt;
  t.frames_prefill = t.frames_decode = std::nullopt;
  t.request = t.prefill_remote = std::nullopt;
  const json j = result::to_json(t);
  for (const char* key : {"ttft_ms", "prefill_ms", "prefill_tokens_per_s", "decode_tokens_per_s", "e2e_ms",
                          "missed_frame_share_prefill", "missed_frame_share_decode", "error"}) {
    ASSERT_TRUE(j.contains(key)) << key;
    EXPECT_TRUE(j[key].is_null()) << key;
  }
  for (const char* key : {"frames_prefill", "frames_decode", "request", "prefill_remote"})
    EXPECT_FALSE(j.contains(key)) << key;
  EXPECT_EQ(result::turn_from_json(j), t);
}

TEST(SessionTurn, AFailedTurnKeepsItsErrorAndWhatItMeasured) {
  result::Turn t = every_field();
  t.stop_reason = "error";
  t.e2e_ms = std::nullopt;
  t.decode_tokens_per_s = std::nullopt;
  t.end_ns = 0;
  t.error = result::ErrorInfo{"environment", "llama_decode failed at step 3"};
  const json j = result::to_json(t);
  EXPECT_EQ(j["error"], (json{{"kind", "environment"}, {"message", "llama_decode failed at step 3"}}));
  const result::Turn back = result::turn_from_json(j);
  EXPECT_EQ(back, t);
  ASSERT_TRUE(back.error);
  EXPECT_EQ(back.error->message, "llama_decode failed at step 3");
}

// Turns stored before failed turns were recorded have no "error"; a plan's completed list
// may hold only what a resumed run replays. Written again, they are the same bytes.
TEST(SessionTurn, ADocumentWithoutSomeKeysIsWrittenBackAsItWas) {
  for (const json& doc : {json{{"round", 0}, {"conversation_id", "c01"}, {"turn_index", 1}, {"reply", "hi"},
                               {"stop_reason", "end_of_turn"}, {"reply_tokens", {5, 6}}},
                          json{{"ttft_ms", 300.0}},
                          json::object()}) {
    const result::Turn t = result::turn_from_json(doc);
    EXPECT_EQ(result::to_json(t).dump(), doc.dump());
    EXPECT_FALSE(t.had("error"));
    EXPECT_FALSE(t.error);
  }
  const result::Turn partial = result::turn_from_json({{"ttft_ms", 300.0}});
  EXPECT_EQ(partial.ttft_ms, 300.0);
  EXPECT_FALSE(partial.had("round"));
  EXPECT_TRUE(partial.had("ttft_ms"));
  EXPECT_TRUE(partial.had("request"));  // not one of the keys always written
}

TEST(SessionTurn, AnInvalidUtf8ReplyIsReplacedInJson) {
  result::Turn t;
  t.reply = "ok \xE2\x82";  // a character cut after two of its three bytes
  EXPECT_EQ(result::to_json(t)["reply"], "ok \xEF\xBF\xBD\xEF\xBF\xBD");
}

struct Malformed {
  const char* name;
  json doc;
  const char* field;
};

class MalformedTurn : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedTurn, IsOneBadInputErrorNamingTheField) {
  try {
    (void)result::turn_from_json(GetParam().doc);
    FAIL() << "read " << GetParam().doc.dump();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    const std::string message = e.what();
    EXPECT_NE(message.find(std::string("'") + GetParam().field + "'"), std::string::npos) << message;
    EXPECT_EQ(message.find("json.exception"), std::string::npos) << message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    SessionTurn, MalformedTurn,
    ::testing::Values(Malformed{"FigureAsText", {{"ttft_ms", "fast"}}, "ttft_ms"},
                      Malformed{"CountAsReal", {{"generated_tokens", 1.5}}, "generated_tokens"},
                      Malformed{"CountAsNull", {{"round", nullptr}}, "round"},
                      Malformed{"IdAsNumber", {{"conversation_id", 7}}, "conversation_id"},
                      Malformed{"StepsNotNumbers", {{"decode_step_ms", {1.0, "x"}}}, "decode_step_ms"},
                      Malformed{"TokenOutOfRange", {{"reply_tokens", {1, 5'000'000'000}}}, "reply_tokens"},
                      Malformed{"ErrorAsText", {{"error", "boom"}}, "error"},
                      Malformed{"ErrorMessageAsNumber", {{"error", {{"kind", "bug"}, {"message", 3}}}}, "error.message"},
                      Malformed{"FramesAsText", {{"frames_decode", {{"due", "many"}}}}, "frames_decode.due"},
                      Malformed{"ClockAsText", {{"end_ns", "soon"}}, "end_ns"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(SessionTurn, ATurnThatIsNotAnObjectIsBadInput) {
  try {
    (void)result::turn_from_json(json::array({1, 2}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  }
}

// A session configuration: GPU settings are written only when not the default, so a CPU
// session's config reads and writes back as the five keys it always had.
TEST(SessionConfig, RoundTripsWithAndWithoutGpuSettings) {
  const json cpu = {{"model_path", "m.gguf"}, {"n_ctx", 2048}, {"max_tokens", 16}, {"n_batch", 512}, {"n_threads", 2}};
  EXPECT_EQ(result::session_config_from_json(cpu).to_json().dump(), cpu.dump());
  result::SessionConfig gpu;
  gpu.model_path = "m.gguf";
  gpu.n_ctx = 4096;
  gpu.max_tokens = 32;
  gpu.n_batch = 256;
  gpu.n_threads = 4;
  gpu.n_gpu_layers = 20;
  gpu.devices = "Vulkan0";
  gpu.op_offload = false;
  const json j = gpu.to_json();
  EXPECT_EQ(j["n_gpu_layers"], 20);
  EXPECT_EQ(result::session_config_from_json(j), gpu);
}

TEST(SessionConfig, AMistypedFieldIsOneBadInputErrorNamingIt) {
  for (const auto& [doc, field] : {std::pair{json{{"n_ctx", "big"}}, "'n_ctx'"},
                                   std::pair{json{{"model_path", 3}}, "'model_path'"},
                                   std::pair{json{{"op_offload", "no"}}, "'op_offload'"}}) {
    try {
      (void)result::session_config_from_json(doc);
      ADD_FAILURE() << "read " << doc.dump();
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
}

}  // namespace
