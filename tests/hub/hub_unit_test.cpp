// The hub's pure parts: the run index (filters, sort, pages, leaderboards), the checks a
// submission passes before it is shown, the token file, and escaping.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/digest.h"
#include "core/error.h"
#include "hub/index.h"
#include "hub/pages.h"
#include "hub/submission.h"
#include "hub/tokens.h"
#include "report/fixtures.h"
#include "support/run_process.h"

using namespace edgeprobe;
using nlohmann::json;

namespace {

hub::RunRow row(int64_t id, const std::string& device, const std::string& model, const std::string& quant,
                double prefill, double decode) {
  hub::RunRow r;
  r.id = id;
  r.kind = "bench";
  r.status = "complete";
  r.created_at = fmt::format("2026-12-{:02}T10:00:00Z", id);
  r.device_id = "dev-" + device;
  r.device_name = device;
  r.model_name = model;
  r.quant = quant;
  r.model_sha = "abc" + model;
  if (prefill > 0) r.prefill = hub::PhaseFigure{"pp512", prefill, prefill / 1000};
  if (decode > 0) r.decode = hub::PhaseFigure{"tg128", decode, std::nullopt};
  return r;
}

std::vector<hub::RunRow> some_runs() {
  return {row(1, "pixel", "llama", "q4_0", 100, 10), row(2, "pixel", "llama", "q4_0", 120, 9),
          row(3, "epyc", "llama", "q4_0", 300, 30), row(4, "epyc", "llama", "q8_0", 200, 20),
          row(5, "jetson", "qwen", "q4_0", 0, 15)};
}

// The fixture's bench document (prefill ~64 tok/s of a 90 ceiling, decode ~30 of 42)
// with every repetition's rates multiplied by `factor`.
json bench_scaled(double factor) {
  json doc = report_test::bench_document(3, 16, false);
  for (auto& r : doc["results"])
    for (auto& rep : r["repetitions"])
      for (const char* k : {"prefill_tokens_per_s", "decode_tokens_per_s"})
        if (rep[k].is_number()) rep[k] = rep[k].get<double>() * factor;
  return doc;
}

}  // namespace

TEST(HubIndex, FiltersSortAndPages) {
  const auto runs = some_runs();
  hub::RunQuery q;
  q.filters["device"] = "PIX";  // any part, any case
  auto page = hub::query_runs(runs, q);
  ASSERT_EQ(page.total, 2u);
  EXPECT_EQ(page.rows[0].id, 2);  // newest first by default
  q = {};
  q.filters["quant"] = "q4_0";
  q.sort = "prefill";
  q.descending = true;
  page = hub::query_runs(runs, q);
  ASSERT_EQ(page.total, 4u);
  EXPECT_EQ(page.rows[0].id, 3);
  EXPECT_EQ(page.rows.back().id, 5);  // no prefill figure sorts last
  q.per_page = 3;
  q.page = 2;
  page = hub::query_runs(runs, q);
  ASSERT_EQ(page.rows.size(), 1u);
  EXPECT_EQ(page.total, 4u);
  q = {};
  q.filters["from"] = "2026-12-03";
  q.filters["to"] = "2026-12-04";
  EXPECT_EQ(hub::query_runs(runs, q).total, 2u);
  q = {};
  q.filters["sha"] = "abcqw";  // a prefix
  EXPECT_EQ(hub::query_runs(runs, q).total, 1u);
}

TEST(HubIndex, LeaderboardRanksEachDeviceByItsBestRun) {
  const auto board = hub::leaderboard(some_runs(), "llama", "q4_0");
  ASSERT_EQ(board.prefill.size(), 2u);
  EXPECT_EQ(board.prefill[0].run.device_name, "epyc");
  EXPECT_EQ(board.prefill[1].run.id, 2);  // pixel's faster run of two
  ASSERT_EQ(board.decode.size(), 2u);
  EXPECT_EQ(board.decode[1].run.id, 1);  // pixel's best decode is the other run
  const auto boards = hub::leaderboards(some_runs());
  ASSERT_EQ(boards.size(), 3u);
  EXPECT_EQ(boards[0].model, "llama");
  EXPECT_EQ(boards[0].devices, 2u);
  EXPECT_EQ(boards[0].runs, 3u);
}

TEST(HubSubmission, APossibleRunPassesAndAForgedOneIsRefusedWithItsReason) {
  const auto ok = hub::check_submission(bench_scaled(1.0).dump());
  EXPECT_EQ(ok.ceilings, "checked");
  try {
    hub::check_submission(bench_scaled(4.3).dump());
    FAIL() << "a run at ~300 % of its ceilings was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("of the device's own ceiling"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("306 %"), std::string::npos) << e.what();
  }
  // The document's own efficiency fields are claims: lowering them changes nothing.
  json lying = bench_scaled(4.3);
  for (auto& r : lying["results"]) r["roofline"]["prefill_efficiency"] = 0.5;
  EXPECT_THROW(hub::check_submission(lying.dump()), Error);
}

TEST(HubSubmission, WithoutCeilingsItSaysUnchecked) {
  json doc = bench_scaled(1.0);
  for (auto& r : doc["results"]) r["roofline"] = nullptr;
  EXPECT_EQ(hub::check_submission(doc.dump()).ceilings, "unchecked");
  EXPECT_EQ(hub::check_submission(report_test::session_document(1, 1, 2, 4).dump()).ceilings, "unchecked");
}

TEST(HubSubmission, RefusesWhatTheResultReadersRefuse) {
  for (const std::string body :
       {std::string("not json"), std::string("[1,2]"), std::string(R"({"kind":"bench"})"),
        std::string(R"({"kind":"evil","results":[]})"), std::string(500, '[') + std::string(500, ']'),
        std::string(R"({"schema_version":99,"kind":"bench","results":[]})")}) {
    EXPECT_THROW(hub::check_submission(body), Error) << body.substr(0, 60);
  }
}

TEST(HubSubmission, TheSameRunHasTheSameKeyWhateverElseChanged) {
  const json doc = bench_scaled(1.0);
  const auto a = hub::check_submission(doc.dump());
  json reformatted = doc;
  reformatted["results"][0]["test"] = "renamed";  // a field the reader recomputes
  EXPECT_EQ(hub::check_submission(reformatted.dump(2)).key, a.key);
  json other = doc;
  other["provenance"]["started_at_utc"] = "2026-01-01T00:00:00Z";
  EXPECT_NE(hub::check_submission(other.dump()).key, a.key);
}

TEST(HubTokens, StoredHashedAdmittedRevokedAndRateLimited) {
  test_support::TempDir dir;
  const std::string file = dir.file("tokens");
  hub::TokenEntry limits;
  limits.name = "lab-1";
  limits.per_minute = 2;
  const std::string token = hub::add_token(file, limits);
  const std::string text = test_support::read_file(file);
  EXPECT_EQ(text.find(token), std::string::npos);  // only its hash is kept
  EXPECT_NE(text.find(sha256_hex(token)), std::string::npos);
  EXPECT_THROW(hub::add_token(file, limits), Error);  // the name is taken

  hub::TokenBook book(file);
  using V = hub::TokenBook::Verdict;
  EXPECT_EQ(book.admit("").verdict, V::kMissing);
  EXPECT_EQ(book.admit("Bearer nope").verdict, V::kUnknown);
  EXPECT_EQ(book.admit("Bearer " + token).verdict, V::kOk);
  EXPECT_EQ(book.admit("Bearer " + token).verdict, V::kOk);
  EXPECT_EQ(book.admit("Bearer " + token).verdict, V::kRateLimited);

  hub::revoke_token(file, "lab-1");
  EXPECT_EQ(book.admit("Bearer " + token).verdict, V::kUnknown);
  EXPECT_THROW(hub::revoke_token(file, "lab-1"), Error);
  test_support::write_file(file, "broken line\n");
  EXPECT_THROW(hub::read_token_file(file), Error);
}

TEST(HubPages, EveryValueIsEscaped) {
  auto runs = some_runs();
  const std::string evil = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>";
  runs[0].device_name = evil;
  runs[0].model_name = evil;
  runs[0].quant = evil;
  runs[0].submitter = evil;
  hub::RunQuery q;
  q.filters["model"] = evil;
  const std::string list = hub::runs_page(hub::query_runs(runs, {}), q);
  const std::string board = hub::leaderboard_page(hub::leaderboard(runs, evil, evil));
  const std::string boards = hub::leaderboards_page(hub::leaderboards(runs));
  for (const std::string& page : {list, board, boards}) {
    EXPECT_EQ(page.find("<script>alert"), std::string::npos);
    EXPECT_EQ(page.find("<img src=x"), std::string::npos);
    EXPECT_EQ(page.find("\"'>"), std::string::npos);
  }
  EXPECT_NE(list.find("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&gt;"), std::string::npos);
  EXPECT_EQ(hub::url_encode("a b&c=<"), "a%20b%26c%3D%3C");
}
