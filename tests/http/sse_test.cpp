#include "http/sse.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "http/client.h"
#include "http/http_engine.h"

using namespace edgeprobe;

namespace {

std::vector<http::SseEvent> parse_in_pieces(const std::string& stream, size_t piece) {
  std::vector<http::SseEvent> events;
  http::SseParser parser([&](const http::SseEvent& e) { events.push_back(e); });
  for (size_t i = 0; i < stream.size(); i += piece) parser.feed(std::string_view(stream).substr(i, piece));
  return events;
}

const std::string kStream =
    ": keep-alive comment\r\n"
    "event: message\r\n"
    "data: {\"a\": 1}\r\n"
    "\r\n"
    "data: first line\n"
    "data: second line\n"
    "\n"
    "id: 7\r"
    "data:no space\r"
    "\r"
    "data: [DONE]\n\n";

TEST(SseParser, EventsAreTheSameWhereverTheChunksAreCut) {
  const auto whole = parse_in_pieces(kStream, kStream.size());
  ASSERT_EQ(whole.size(), 4u);
  EXPECT_EQ(whole[0].event, "message");
  EXPECT_EQ(whole[0].data, "{\"a\": 1}");
  EXPECT_EQ(whole[1].data, "first line\nsecond line");  // multi-line data joins with LF
  EXPECT_EQ(whole[1].event, "");                        // the event field does not carry over
  EXPECT_EQ(whole[2].data, "no space");                 // CR line ends, no space after the colon
  EXPECT_EQ(whole[2].id, "7");
  EXPECT_EQ(whole[3].data, "[DONE]");
  for (size_t piece = 1; piece < kStream.size(); ++piece) {
    const auto cut = parse_in_pieces(kStream, piece);
    ASSERT_EQ(cut.size(), whole.size()) << "pieces of " << piece;
    for (size_t i = 0; i < cut.size(); ++i) {
      EXPECT_EQ(cut[i].data, whole[i].data) << "pieces of " << piece;
      EXPECT_EQ(cut[i].event, whole[i].event) << "pieces of " << piece;
    }
  }
}

TEST(SseParser, CrLfSplitAcrossChunksEndsOneLineNotTwo) {
  std::vector<http::SseEvent> events;
  http::SseParser parser([&](const http::SseEvent& e) { events.push_back(e); });
  parser.feed("data: x\r");
  parser.feed("\ndata: y\r");
  parser.feed("\n\r");
  parser.feed("\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "x\ny");
}

TEST(SseParser, CommentsAndFieldsWithoutDataDispatchNothing) {
  std::vector<http::SseEvent> events;
  http::SseParser parser([&](const http::SseEvent& e) { events.push_back(e); });
  parser.feed(": ping\n\nevent: x\n\nretry: 10\n\n");
  EXPECT_TRUE(events.empty());
  EXPECT_FALSE(parser.finish());
}

TEST(SseParser, FinishReportsAnEventCutMidway) {
  std::vector<http::SseEvent> events;
  http::SseParser parser([&](const http::SseEvent& e) { events.push_back(e); });
  parser.feed("data: {\"complete\": true}\n\ndata: {\"cut\": tr");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_GT(parser.pending_bytes(), 0u);
  EXPECT_TRUE(parser.finish());  // the second event never ended: it is dropped, and said so
  EXPECT_EQ(events.size(), 1u);
}

TEST(RedactUrl, DropsCredentialsQueryAndFragment) {
  EXPECT_EQ(http::redact_url("http://user:secret@host:8080/v1?key=abc#x"), "http://host:8080/v1");
  EXPECT_EQ(http::redact_url("https://host/v1"), "https://host/v1");
  EXPECT_EQ(http::redact_url("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
}

TEST(ValidateEndpoint, RefusesWhatCannotWorkOrWouldLeakASecret) {
  auto bad = [](http::EndpointOptions o) {
    try {
      http::validate_endpoint(o);
    } catch (const Error& e) {
      return e.kind() == ErrorKind::kBadInput;
    }
    return false;
  };
  EXPECT_TRUE(bad({"ftp://host/", "m"}));
  EXPECT_TRUE(bad({"host:8080", "m"}));
  EXPECT_TRUE(bad({"http://host:8080", ""}));
  EXPECT_TRUE(bad({"http://u:p@host:8080", "m"}));
  EXPECT_TRUE(bad({"http://host:8080/v1?api_key=x", "m"}));
  EXPECT_TRUE(bad({"http://host:8080", "m", "embeddings"}));
  EXPECT_FALSE(bad({"http://host:8080/v1", "m", "chat"}));
}

}  // namespace

// Hostile streams at the parser: whatever arrives, it holds at most its bound for the
// event in progress, and says so once it is past it.
TEST(SseParser, DataLinesThatNeverDispatchStopAtTheBound) {
  int events = 0;
  http::SseParser parser([&](const http::SseEvent&) { ++events; }, 4096);
  bool ok = true;
  size_t fed = 0;
  for (int i = 0; i < 100000 && ok; ++i, fed += 8) ok = parser.feed("data: x\n");
  EXPECT_FALSE(ok);
  EXPECT_TRUE(parser.overflowed());
  EXPECT_LE(fed, 20000u);  // two bytes of data per 8-byte line: refused near 16 kB, not after 800 kB
  EXPECT_LE(parser.pending_bytes(), 4096u);
  EXPECT_EQ(events, 0);
  EXPECT_FALSE(parser.feed("\n\ndata: late\n\n")) << "a spent parser takes nothing more";
  EXPECT_EQ(events, 0);
}

TEST(SseParser, ALineWithoutEndStopsAtTheBoundInOneChunk) {
  http::SseParser parser([](const http::SseEvent&) {}, 1000);
  EXPECT_FALSE(parser.feed("data: " + std::string(1 << 20, 'y')));
  EXPECT_LE(parser.pending_bytes(), 1000u);
}

TEST(SseParser, NulAndInvalidUtf8PassThroughAsBytes) {
  std::vector<http::SseEvent> got;
  http::SseParser parser([&](const http::SseEvent& e) { got.push_back(e); });
  EXPECT_TRUE(parser.feed(std::string("data: a\0b\xff\xfe\n\n", 13)));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].data, std::string("a\0b\xff\xfe", 5));
}
