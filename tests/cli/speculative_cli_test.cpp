// bench --draft through the edgeprobe binary on the project's trained pair (trained:main
// and trained:draft share a tokenizer, so acceptance is real): the accounting, the greedy
// identity, the stored run, and the refusals.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "support/run_process.h"

using edgeprobe::test_support::read_file;
using edgeprobe::test_support::run_edgeprobe;
using edgeprobe::test_support::TempDir;
using edgeprobe::test_support::tiny_model;
using nlohmann::json;

namespace {

constexpr int kGen = 48;
constexpr int kPairs = 2;

// One line on stderr: the refusal and nothing else.
void expect_one_line(const std::string& err, const std::string& part) {
  EXPECT_NE(err.find(part), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
}

}  // namespace

TEST(SpeculativeCli, TrainedPairMeasuresAcceptanceKeepsGreedyTokensAndAccountsForTheTime) {
  TempDir dir;
  const std::string db = dir.file("r.db");
  const auto r = run_edgeprobe({"bench",
                                "-m",
                                "trained:main",
                                "--draft",
                                "trained:draft",
                                "--draft-max",
                                "4",
                                "-p",
                                "16",
                                "-n",
                                std::to_string(kGen),
                                "-r",
                                std::to_string(kPairs),
                                "-t",
                                "1",
                                "--ceilings",
                                "off",
                                "--sample-hz",
                                "0",
                                "-o",
                                "json",
                                "-q",
                                "--db",
                                db},
                               600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  ASSERT_EQ(doc["results"].size(), 2u);
  // A prefill-only test has nothing to speculate on.
  EXPECT_FALSE(doc["results"][0].contains("speculative")) << doc["results"][0]["test"];
  const json& s = doc["results"][1]["speculative"];
  ASSERT_TRUE(s.is_object()) << doc["results"][1].dump();
  EXPECT_NE(s["draft"]["path"].get<std::string>().find("trained-draft"), std::string::npos) << s["draft"];
  EXPECT_EQ(s["draft"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(s["draft_max"], 4);

  // Greedy: every pair's speculative tokens are plain decoding's, and the check says so.
  EXPECT_TRUE(s["identical"].get<bool>());
  EXPECT_EQ(s["check"]["tokens"].size(), static_cast<size_t>(kGen));
  EXPECT_EQ(s["check"]["reference"]["source"], "plain decoding");
  EXPECT_EQ(s["check"]["reference"]["compared"], kGen);
  EXPECT_TRUE(s["check"]["reference"]["first_divergence"].is_null());

  // Acceptance measured: some draft tokens accepted, not all of them (the draft is a
  // smaller model, not the target).
  const auto drafted = s["drafted"].get<int64_t>(), accepted = s["accepted"].get<int64_t>();
  const auto steps = s["verify_steps"].get<int64_t>(), plain_steps = s["plain_steps"].get<int64_t>();
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, drafted);
  EXPECT_NEAR(s["acceptance_rate"].get<double>(), static_cast<double>(accepted) / drafted, 1e-12);
  EXPECT_NEAR(s["mean_accepted"].get<double>(), static_cast<double>(accepted) / steps, 1e-12);
  // Each step yields its accepted tokens and the target's own: all the tokens after the first.
  EXPECT_EQ(accepted + steps + plain_steps, static_cast<int64_t>(kPairs) * (kGen - 1));
  // Per position: the counts add up, and acceptance is a prefix, so a later position is
  // never accepted more often (its rate may still be higher where fewer drafts reached it).
  ASSERT_EQ(s["positions"].size(), 4u);
  int64_t sum_drafted = 0, sum_accepted = 0;
  for (size_t j = 0; j < s["positions"].size(); ++j) {
    sum_drafted += s["positions"][j]["drafted"].get<int64_t>();
    sum_accepted += s["positions"][j]["accepted"].get<int64_t>();
    if (j > 0)
      EXPECT_LE(s["positions"][j]["accepted"].get<int64_t>(),
                s["positions"][j - 1]["accepted"].get<int64_t>());
  }
  EXPECT_EQ(sum_drafted, drafted);
  EXPECT_EQ(sum_accepted, accepted);

  // The accounting: draft + verify + overhead, each timed on its own, cover the
  // speculative decode's time within 5 %.
  ASSERT_EQ(s["pairs"].size(), static_cast<size_t>(kPairs));
  for (const auto& p : s["pairs"]) {
    EXPECT_EQ(p["tokens"], kGen);
    EXPECT_TRUE(p["identical"].get<bool>());
    EXPECT_GT(p["plain_ms"].get<double>(), 0);
    EXPECT_GT(p["draft_ms"].get<double>(), 0);
    EXPECT_GT(p["verify_ms"].get<double>(), 0);
    const double total = p["spec_ms"].get<double>();
    const double parts =
        p["draft_ms"].get<double>() + p["verify_ms"].get<double>() + p["overhead_ms"].get<double>();
    EXPECT_LE(parts, total * 1.0001) << p.dump();
    EXPECT_GE(parts, total * 0.95) << p.dump();
  }
  const json& sum = s["summary"];
  EXPECT_GT(sum["speed_up"].get<double>(), 0);
  EXPECT_LE(sum["speed_up_min"].get<double>(), sum["speed_up"].get<double>());
  EXPECT_GE(sum["speed_up_max"].get<double>(), sum["speed_up"].get<double>());
  EXPECT_NEAR(sum["draft_share"].get<double>() + sum["verify_share"].get<double>() +
                  sum["overhead_share"].get<double>() + sum["unaccounted_share"].get<double>(),
              1.0, 1e-9);

  // The stored run keeps it: exported from the store, the same counts and pairs.
  const auto exported = run_edgeprobe({"export", "1", "--db", db}, 60);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  const json stored = json::parse(exported.out)["results"][1]["speculative"];
  ASSERT_TRUE(stored.is_object()) << exported.out.substr(0, 2000);
  for (const char* key : {"drafted", "accepted", "verify_steps", "positions", "pairs", "check", "draft"})
    EXPECT_EQ(stored[key], s[key]) << key;

  // And the markdown report says it in three lines under the table.
  const auto md = run_edgeprobe({"export", "1", "--db", db, "-o", "md"}, 60);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("speculative: tg48: draft trained-draft"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("speculative: tg48: acceptance "), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("tokens identical to plain decoding in every pair"), std::string::npos) << md.out;
}

// Without --draft nothing changes: no speculative object, and the table has no such line.
TEST(SpeculativeCli, WithoutADraftTheResultHasNoSpeculativePart) {
  const auto r = run_edgeprobe({"bench", "-m", tiny_model(), "-p", "0", "-n", "4", "-r", "1", "--ceilings",
                                "off", "--no-store", "-q", "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(json::parse(r.out)["results"][0].contains("speculative"));
}

TEST(SpeculativeCli, ADraftOfAnotherVocabularyIsRefusedNamingBothModels) {
  const auto r = run_edgeprobe({"bench", "-m", "trained:main", "--draft", tiny_model(), "-p", "0", "-n", "8",
                                "-r", "1", "--ceilings", "off", "--no-store", "-q"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  expect_one_line(r.err, "its vocabulary is not the target");
  EXPECT_NE(r.err.find(tiny_model()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("trained-main"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;  // refused before anything ran
}

TEST(SpeculativeCli, ADraftLargerThanTheTargetIsWarnedAndStillRuns) {
  const auto r = run_edgeprobe({"bench",
                                "-m",
                                "trained:draft",
                                "--draft",
                                "trained:main",
                                "--draft-max",
                                "2",
                                "-p",
                                "0",
                                "-n",
                                "8",
                                "-r",
                                "1",
                                "-t",
                                "1",
                                "--ceilings",
                                "off",
                                "--no-store",
                                "-q",
                                "-o",
                                "json"},
                               300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("is not smaller than the target"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("speculation cannot pay"), std::string::npos) << r.err;
  EXPECT_TRUE(json::parse(r.out)["results"][0]["speculative"]["identical"].get<bool>());
}

TEST(SpeculativeCli, DraftLengthsOutOfRangeAreOneLineAndExit2) {
  struct Case {
    std::vector<std::string> flags;
    std::string says;
  };
  for (const auto& c : {Case{{"--draft-max", "0"}, "--draft-max 0 out of range 1..256"},
                        Case{{"--draft-max", "4", "--draft-min", "5"}, "--draft-min 5 out of range 0..4"},
                        Case{{"--draft-min", "-1"}, "--draft-min -1 out of range"}}) {
    std::vector<std::string> args{"bench",      "-m", tiny_model(), "--draft",
                                  tiny_model(), "-n", "4",          "--no-store"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const auto r = run_edgeprobe(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    expect_one_line(r.err, c.says);
  }
  const auto r =
      run_edgeprobe({"bench", "--draft", tiny_model(), "--endpoint", "http://127.0.0.1:9", "--no-store"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  expect_one_line(r.err, "--draft needs the token level");
}
