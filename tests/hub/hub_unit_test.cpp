// The hub's pure parts: the run index (filters, sort, pages, leaderboards), the checks a
// submission passes before it is shown, the token file, and escaping.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "app/stored_run.h"
#include "core/digest.h"
#include "core/error.h"
#include "hub/index.h"
#include "hub/pages.h"
#include "hub/submission.h"
#include "hub/tokens.h"
#include "report/fixtures.h"
#include "result/document.h"
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

namespace {

const std::string kShaA(64, 'a'), kShaB(64, 'b');

hub::RunRow on(hub::RunRow r, const std::string& chip, const std::string& sha) {
  r.chip = chip;
  r.model_sha = sha;
  r.model_params = 1100000000;
  return r;
}

std::vector<std::string> codes(const hub::RunRow& r) {
  std::vector<std::string> out;
  for (const auto& f : r.flags) out.push_back(f.code);
  return out;
}

const hub::RunRow& by_id(const std::vector<hub::RunRow>& rows, int64_t id) {
  return *std::find_if(rows.begin(), rows.end(), [&](const hub::RunRow& r) { return r.id == id; });
}

}  // namespace

// Issue 48: the model's SHA against its name, and a run far outside its device class, are
// flagged with their reasons; nothing is hidden, and the flags do not depend on the order
// the runs arrived in.
TEST(HubFlags, ShaAgainstNameAndOutliersInTheirDeviceClass) {
  std::vector<hub::RunRow> rows = {
      on(row(1, "pixel", "llama", "q4_0", 100, 10), "Tensor G3", kShaA),
      on(row(2, "pixel", "llama", "q4_0", 110, 11), "Tensor G3", kShaA),
      on(row(3, "pixel", "llama", "q4_0", 105, 10.5), "Tensor G3", kShaA),
      on(row(4, "pixel", "llama", "q4_0", 95, 40), "Tensor G3", kShaA),   // decode 3.8x the others' median
      on(row(5, "epyc", "llama", "q4_0", 300, 30), "EPYC", kShaB),        // the same name, another file
      on(row(6, "epyc", "llama", "q4_0", 300, 30), "EPYC", "not-a-sha"),  // malformed
      on(row(7, "epyc", "llama", "q4_0", 300, 30), "EPYC", ""),           // --no-hash
      on(row(8, "epyc", "llama", "q8_0", 200, 20), "EPYC", kShaB),        // another quant: no conflict
  };
  hub::flag_runs(rows);
  const auto check = [](const std::vector<hub::RunRow>& rs) {
    EXPECT_EQ(codes(by_id(rs, 4)), (std::vector<std::string>{"sha-conflict", "outlier-decode"}));
    for (int64_t id : {1, 2, 3, 5})
      EXPECT_EQ(codes(by_id(rs, id)), std::vector<std::string>{"sha-conflict"}) << id;
    EXPECT_EQ(codes(by_id(rs, 6)), std::vector<std::string>{"sha-malformed"});
    EXPECT_EQ(codes(by_id(rs, 7)), std::vector<std::string>{"sha-absent"});
    EXPECT_TRUE(by_id(rs, 8).flags.empty());
  };
  check(rows);
  const std::string& why = by_id(rows, 4).flags[1].reason;
  EXPECT_NE(why.find("tg128 40 tok/s is 3.8x above the median 10.5 tok/s of the 3 other runs"),
            std::string::npos)
      << why;
  EXPECT_NE(by_id(rows, 5).flags[0].reason.find("aaaaaaaaaaaa… (4 runs)"), std::string::npos)
      << by_id(rows, 5).flags[0].reason;
  // Another order, flagged again from scratch: the same flags.
  std::reverse(rows.begin(), rows.end());
  hub::flag_runs(rows);
  check(rows);
  // Fewer than three others: no class to be far from.
  rows.erase(std::remove_if(rows.begin(), rows.end(), [](const hub::RunRow& r) { return r.id == 1; }),
             rows.end());
  hub::flag_runs(rows);
  EXPECT_EQ(codes(by_id(rows, 4)), std::vector<std::string>{"sha-conflict"});
  // The runs list filters by flag and shows each.
  hub::RunQuery q;
  q.filters["flag"] = "malformed";
  const auto page = hub::query_runs(rows, q);
  ASSERT_EQ(page.rows.size(), 1u);
  EXPECT_EQ(page.rows[0].id, 6);
  const std::string list = hub::runs_page(hub::query_runs(rows, {}), {});
  EXPECT_NE(list.find("⚑ sha-malformed"), std::string::npos);
}

// TTFT, energy per token and fidelity come from the document where it measured them, and
// read "—" where it did not.
TEST(HubIndex, EnergyAndFidelityWhereMeasured) {
  json doc = report_test::bench_document(3, 16, false, "model.gguf", kShaA);
  for (auto& rep : doc["results"][1]["repetitions"])
    rep["telemetry"] = {{"decode", {{"joules_per_token", 0.25 + 0.01 * rep["index"].get<int>()}}}};
  doc["results"][1]["verify"] = {
      {"prompt_tokens", {1, 2}},
      {"tokens", {3, 4}},
      {"reference", {{"source", "run 7"}, {"compared", 2}, {"first_divergence", nullptr}}}};
  app::StoredRun run;
  run.record.id = 1;
  run.record.kind = "bench";
  run.record.status = "complete";
  run.content = result::document_from_json(doc, "test");
  const hub::RunRow r = hub::row_of(run, nullptr);
  ASSERT_TRUE(r.decode && r.prefill && r.ttft_ms);
  ASSERT_TRUE(r.decode->joules_per_token);
  EXPECT_NEAR(*r.decode->joules_per_token, 0.26, 1e-9);
  EXPECT_FALSE(r.prefill->joules_per_token);
  EXPECT_EQ(r.fidelity, "greedy tokens as run 7's (2 compared)");
  const std::string board = hub::leaderboard_page(hub::leaderboard({r}, r.model_name, r.quant));
  EXPECT_NE(board.find("<th>TTFT ms</th>"), std::string::npos);
  EXPECT_NE(board.find("<td class=\"n\">0.260</td>"), std::string::npos) << board;
  EXPECT_NE(board.find("<td class=\"n muted\">—</td>"), std::string::npos);  // prefill's energy: not measured
  EXPECT_NE(board.find(">verified</td>"), std::string::npos);
  EXPECT_EQ(hub::to_json(r)["decode"]["joules_per_token"], 0.26);
  EXPECT_TRUE(hub::to_json(r)["prefill"]["joules_per_token"].is_null());
}

TEST(HubPages, DevicePagesAndRunHeaderEscapeEverything) {
  auto runs = some_runs();
  const std::string evil = "<script>alert(1)</script>\"'><img src=x onerror=alert(2)>";
  for (auto& r : runs) {
    r.device_id = "dev-" + evil;
    r.device_name = evil;
    r.chip = evil;
    r.ceilings.push_back({evil, 50, 40, 900, true});
    r.findings.push_back({"warning", evil, evil});
    r.flags.push_back({evil, evil});
  }
  const auto view = hub::device_view(runs, "dev-" + evil);
  EXPECT_EQ(view.runs.size(), runs.size());
  const std::string device = hub::device_page(view);
  const std::string list = hub::devices_page(hub::devices(runs));
  const std::string header = hub::run_header(runs[0]);
  for (const std::string& page : {device, list, header, hub::runs_page(hub::query_runs(runs, {}), {})}) {
    EXPECT_EQ(page.find("<script>alert"), std::string::npos);
    EXPECT_EQ(page.find("<img src=x"), std::string::npos);
    EXPECT_EQ(page.find("\"'>"), std::string::npos);
  }
  EXPECT_NE(device.find("<table id=\"ceilings\">"), std::string::npos);
  EXPECT_NE(device.find(">suspect<"), std::string::npos);
  EXPECT_NE(list.find("href=\"/device?id=dev-%3Cscript%3E"), std::string::npos) << list;
  EXPECT_NE(header.find("href=\"/device?id=dev-%3Cscript%3E"), std::string::npos);
  EXPECT_TRUE(hub::device_view(runs, "dev-none").runs.empty());
}

// The flags are worked out again over the whole index after every submission: what that
// costs on a hub of 10^5 runs (printed; the flags themselves are checked).
TEST(HubFlags, AHundredThousandRuns) {
  std::vector<hub::RunRow> rows;
  for (int64_t i = 1; i <= 100000; ++i) {
    const int device = static_cast<int>(i % 500), model = static_cast<int>(i % 40);
    auto r =
        on(row(i, fmt::format("d{}", device), fmt::format("m{}", model), "q4_0", 100 + i % 7, 10 + i % 3),
           fmt::format("chip{}", device % 50), std::string(63, 'a') + "0123456789abcdef"[model % 16]);
    rows.push_back(std::move(r));
  }
  rows[0].decode->tokens_per_s = 1000;       // far above its class
  rows[2].model_sha = std::string(64, 'f');  // m3 as another file
  const auto start = std::chrono::steady_clock::now();
  hub::flag_runs(rows);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  std::cerr << fmt::format("flag_runs over 10^5 runs: {:.0f} ms\n", ms);
  EXPECT_EQ(codes(rows[0]), std::vector<std::string>{"outlier-decode"});
  EXPECT_TRUE(rows[1].flags.empty());
  EXPECT_EQ(codes(rows[2]), std::vector<std::string>{"sha-conflict"});
  EXPECT_EQ(codes(rows[42]), std::vector<std::string>{"sha-conflict"});  // run 43: m3 too
}

// A doctor run's findings are its device's findings; its device comes from the store's
// record when the document keeps provenance in its primary run.
TEST(HubIndex, ADoctorRunsFindingsAndDevice) {
  app::StoredRun run;
  run.record.id = 9;
  run.record.kind = "doctor";
  run.record.status = "complete";
  run.record.provenance = {{"device", {{"id", "dev-0123456789abcdef"}, {"cpu_model", "Cortex-A76"}}}};
  run.content = result::document_from_json(report_test::doctor_document(), "test");
  const hub::RunRow r = hub::row_of(run, nullptr);
  EXPECT_EQ(r.device_id, "dev-0123456789abcdef");
  EXPECT_EQ(r.chip, "Cortex-A76");
  ASSERT_EQ(r.findings.size(), report_test::doctor_document()["doctor"]["findings"].size());
  EXPECT_EQ(r.findings[0].severity, "critical");
  const std::string page = hub::device_page(hub::device_view({r}, r.device_id));
  EXPECT_NE(page.find("<td>critical</td>"), std::string::npos) << page;
}
