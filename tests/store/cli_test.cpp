// The runs/export/compare subcommands, driven through CLI11 as main() would drive them.
#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include "support/run_process.h"
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "app/stored_run.h"
#include "cli/cmd_compare.h"
#include "cli/cmd_export.h"
#include "cli/cmd_runs.h"
#include "core/error.h"
#include "result/migrate.h"
#include "result/result.h"
#include "store/sqlite_store.h"
#include "store/store.h"

namespace edgeprobe::cli {
namespace {

namespace fs = std::filesystem;

using edgeprobe::test_support::TempDir;  // shared with every other test

nlohmann::json provenance(const std::string& sha) {
  return {{"models", {{{"sha256", sha}, {"quant", "Q4_0"}, {"path", "/models/tiny.gguf"}, {"name", "tiny"}}}},
          {"llama_cpp", {{"commit", "80fb11a"}}}};
}

// A fake `edgeprobe bench -o json` document (provisional schema).
nlohmann::json result_file(const std::string& sha, double decode) {
  nlohmann::json reps = nlohmann::json::array();
  for (int i = 0; i < 5; ++i)
    reps.push_back({{"index", i}, {"decode_tokens_per_s", decode + 0.1 * i}, {"ttft_ms", 200.0 - i}});
  return {{"schema_version", 1},
          {"provenance", provenance(sha)},
          {"results", {{{"test", "tg64"}, {"config", {{"n_gen", 64}, {"n_threads", 2}}}, {"repetitions", reps}}}}};
}

// A configuration as `bench` stores it: the whole test case, its model and its name.
nlohmann::json stored_config(int n_gen) {
  workload::TestCase c;
  c.model_path = "/models/tiny.gguf";
  c.kind = workload::TestKind::kGenerate;
  c.n_gen = n_gen;
  c.n_threads = 2;
  nlohmann::json j = result::to_json(c);
  j["model_path"] = c.model_path;
  j["test"] = c.name();
  return j;
}

std::string write_json(const TempDir& dir, const std::string& name, const nlohmann::json& doc) {
  const std::string path = dir.file(name);
  std::ofstream(path) << doc.dump();
  return path;
}

// Parses like main() does and returns what the subcommand printed on stdout.
std::string run_cli(const std::vector<std::string>& args) {
  CLI::App app;
  register_runs(app);
  register_export(app);
  register_compare(app);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  testing::internal::CaptureStdout();
  try {
    app.parse(reversed);
  } catch (...) {
    fflush(stdout);
    const std::string out = testing::internal::GetCapturedStdout();
    std::cerr << out;
    throw;
  }
  fflush(stdout);
  return testing::internal::GetCapturedStdout();
}

TEST(CompareCli, RefusesRunsOfDifferentModelsInBold) {
  TempDir dir;
  const std::string a = write_json(dir, "a.json", result_file(std::string(64, 'a'), 20));
  const std::string b = write_json(dir, "b.json", result_file(std::string(64, 'c'), 30));
  CLI::App app;
  register_compare(app);
  testing::internal::CaptureStdout();
  ErrorKind kind = ErrorKind::kBug;
  std::string message;
  try {
    app.parse(std::vector<std::string>{b, a, "compare"});
  } catch (const Error& e) {
    kind = e.kind();
    message = e.what();
  }
  fflush(stdout);
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(kind, ErrorKind::kBadInput) << message;
  EXPECT_NE(message.find("not comparable"), std::string::npos) << message;
  EXPECT_NE(out.find("**not comparable**: model sha256 differs (aaaaaaaaaaaaaaaa… vs cccccccccccccccc…)"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("| tg64 |"), std::string::npos) << "no ratios without --force:\n" << out;
}

TEST(CompareCli, ForceShowsTheRatiosUnderTheWarning) {
  TempDir dir;
  const std::string a = write_json(dir, "a.json", result_file("aa", 20));
  const std::string b = write_json(dir, "b.json", result_file("cc", 30));
  const std::string out = run_cli({"compare", a, b, "--force"});
  EXPECT_NE(out.find("**not comparable**: model sha256 differs (aa vs cc)"), std::string::npos) << out;
  EXPECT_NE(out.find("| tg64 | decode_tokens_per_s | 20.2 | 30.2 | 1.495 |"), std::string::npos) << out;
}

TEST(CompareCli, ComparesStoredRunsWithVerdicts) {
  TempDir dir;
  const std::string db = dir.file("r.db");
  {
    auto s = store::open_store(db);
    for (double decode : {20.0, 30.0}) {
      const store::RunId run = s->begin_run(store::RunKind::kBench, provenance("same"), {});
      s->add_configuration(run, 0, stored_config(64));
      for (int rep = 0; rep < 5; ++rep)
        s->record_repetition(run, 0, rep,
                             {{"index", rep}, {"decode_tokens_per_s", decode + 0.1 * rep}, {"ttft_ms", 100.0 + rep}});
      s->finish_run(run, store::Status::kComplete);
    }
  }
  const std::string out = run_cli({"compare", "1", "2", "--db", db});
  EXPECT_EQ(out.find("not comparable"), std::string::npos) << out;
  EXPECT_NE(out.find("| tg64 | decode_tokens_per_s | 20.2 | 30.2 | 1.495 |"), std::string::npos) << out;
  EXPECT_NE(out.find("B better"), std::string::npos) << out;
  EXPECT_NE(out.find("| tg64 | ttft_ms | 102 | 102 | 1.000 |"), std::string::npos) << out;
  EXPECT_NE(out.find("| 5/5 | no difference shown (n=5/5) |"), std::string::npos) << out;

  const nlohmann::json j = nlohmann::json::parse(run_cli({"compare", "1", "2", "--db", db, "-o", "json"}));
  EXPECT_TRUE(j["comparable"].get<bool>());
  EXPECT_EQ(j["metrics"][0]["verdict"], "B better");
}

// Result schema v2 moved llama_cpp.commit to engine.commit, and the store migrates stored
// runs to v2: a v1 file still compares with a v2 one of the same build, and two v2 runs
// have their engine checked, not reported as unverified.
TEST(CompareCli, EngineCommitIsCheckedAcrossResultSchemaVersions) {
  TempDir dir;
  const std::string old_file = write_json(dir, "old.json", result_file("same", 20));
  const std::string new_file = write_json(dir, "new.json", result::upgrade_report(result_file("same", 30)));
  std::string out = run_cli({"compare", old_file, new_file});
  EXPECT_EQ(out.find("not comparable"), std::string::npos) << out;
  EXPECT_EQ(out.find("unverified"), std::string::npos) << out;
  EXPECT_NE(out.find("| tg64 | decode_tokens_per_s | 20.2 | 30.2 |"), std::string::npos) << out;

  nlohmann::json other_build = result::upgrade_report(result_file("same", 30));
  other_build["provenance"]["engine"]["commit"] = "b7000aa";
  const std::string other_file = write_json(dir, "other.json", other_build);
  out = run_cli({"compare", old_file, other_file, "--force"});
  EXPECT_NE(out.find("**not comparable**: engine version differs (80fb11a vs b7000aa)"), std::string::npos) << out;
}

TEST(CompareCli, NeitherFileNorRunIdIsBadInput) {
  TempDir dir;
  EXPECT_THROW(app::load_result_document(dir.file("missing.json"), dir.file("r.db")), Error);
  const std::string bad = dir.file("bad.json");
  std::ofstream(bad) << "{ not json";
  try {
    app::load_result_document(bad, "");
    FAIL() << "parsed a broken file";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("not a JSON result file"), std::string::npos) << e.what();
  }
}

TEST(RunsCli, ListsStoredRunsWithTheirCounts) {
  TempDir dir;
  const std::string db = dir.file("r.db");
  {
    auto s = store::open_store(db);
    const store::RunId run = s->begin_run(store::RunKind::kSession, provenance("x"), {});
    s->add_configuration(run, 0, {{"test", "session"}});
    s->record_turn(run, {0, 0, "c01", 0}, {{"ttft_ms", 300.0}});
    s->record_turn(run, {0, 0, "c01", 1}, {{"ttft_ms", 310.0}});
  }
  const std::string out = run_cli({"runs", "--db", db});
  EXPECT_NE(out.find("session"), std::string::npos) << out;
  EXPECT_NE(out.find("running"), std::string::npos) << out;
  EXPECT_NE(out.find("tiny"), std::string::npos) << out;  // model name from provenance
  std::istringstream lines(out);
  std::string header, row;
  std::getline(lines, header);
  std::getline(lines, row);
  EXPECT_NE(header.find("TURNS"), std::string::npos);
  EXPECT_NE(row.find("    1      0      2  tiny.gguf"), std::string::npos) << row;  // 1 config, 0 reps, 2 turns
}

TEST(RunsCli, FiltersByDeviceAndKind) {
  TempDir dir;
  const std::string db = dir.file("r.db");
  {
    auto s = store::open_store(db);
    for (const char* host : {"phone-a", "phone-b"}) {
      nlohmann::json p = provenance("x");
      p["host"] = {{"hostname", host}};
      p["cpu"] = {{"model", "Cortex-A76"}};
      s->begin_run(store::RunKind::kBench, result::upgrade_provenance(p), {});
    }
    s->begin_run(store::RunKind::kDoctor, result::upgrade_provenance(provenance("x")), {});
  }
  const std::string a_id = result::device_id_from("phone-a", "Cortex-A76");
  const std::string out = run_cli({"runs", "--db", db, "--device", a_id.substr(4, 8)});
  EXPECT_NE(out.find(a_id), std::string::npos) << out;
  EXPECT_EQ(out.find(result::device_id_from("phone-b", "Cortex-A76")), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 2) << out;  // the header and run 1
  const std::string doctors = run_cli({"runs", "--db", db, "--kind", "doctor"});
  EXPECT_EQ(std::count(doctors.begin(), doctors.end(), '\n'), 2) << doctors;
  EXPECT_NE(doctors.find("doctor"), std::string::npos) << doctors;
}

TEST(RunsCli, MissingDatabaseGivenExplicitlyIsBadInput) {
  TempDir dir;
  EXPECT_THROW(run_cli({"runs", "--db", dir.file("none.db")}), Error);
  EXPECT_FALSE(fs::exists(dir.file("none.db")));
}

// A stored run loads back into the structs a run produces: export prints what the
// subcommand printed, in every format.
TEST(ExportCli, AStoredBenchRunPrintsAsBenchDidInEveryFormat) {
  TempDir dir;
  const std::string db = dir.file("r.db");
  {
    auto s = store::open_store(db);
    const store::RunId run = s->begin_run(store::RunKind::kBench, result::upgrade_provenance(provenance("x")), {});
    s->add_configuration(run, 0, stored_config(2));
    s->record_repetition(run, 0, 0, {{"index", 0}, {"decode_tokens_per_s", 21.5}, {"decode_step_ms", {40.0, 41.0}}});
    s->record_repetition(run, 0, 1, {{"index", 1}, {"decode_tokens_per_s", 22.5}, {"decode_step_ms", {42.0, 43.0}}});
    s->record_test(run, 0, {{"load_ms", {800.0, 400.0}}, {"roofline", {{"decode_efficiency", 0.5}}}});
    s->finish_run(run, store::Status::kComplete);
  }
  const std::string csv = run_cli({"export", "1", "-o", "csv", "--db", db});
  EXPECT_EQ(csv.rfind("schema_version,model_path,", 0), 0u) << csv;  // bench's own CSV layout
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 2) << csv;    // a header and one row per test
  EXPECT_NE(csv.find(",tg2,"), std::string::npos) << csv;

  const std::string out_file = dir.file("run1.json");
  EXPECT_EQ(run_cli({"export", "1", "-o", "json", "--db", db, "--output", out_file}), "");
  std::ifstream in(out_file);
  const nlohmann::json doc = nlohmann::json::parse(in);
  EXPECT_EQ(doc["schema_version"], result::kSchemaVersion);
  ASSERT_EQ(doc["results"].size(), 1u);
  EXPECT_EQ(doc["results"][0]["repetitions"].size(), 2u);
  EXPECT_EQ(doc["results"][0]["load"]["cold_ms"], 800.0);
  EXPECT_EQ(doc["results"][0]["roofline"]["decode_efficiency"], 0.5);
  EXPECT_NEAR(doc["results"][0]["decode"]["tokens_per_s"]["median"].get<double>(), 22.0, 1e-9);
  EXPECT_EQ(doc["provenance"]["engine"]["commit"], "80fb11a");  // the v1 provenance, upgraded

  EXPECT_NE(run_cli({"export", "1", "-o", "md", "--db", db}).find("| tg2 |"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(run_cli({"export", "1", "-o", "jsonl", "--db", db}))["test"], "tg2");
}

TEST(ExportCli, AStoredSessionPrintsOneCsvRowPerTurn) {
  TempDir dir;
  const std::string db = dir.file("r.db");
  {
    auto s = store::open_store(db);
    const store::RunId run = s->begin_run(store::RunKind::kSession, result::upgrade_provenance(provenance("x")), {});
    s->add_configuration(run, 0, {{"model_path", "/m.gguf"}, {"n_ctx", 512}, {"max_tokens", 8}, {"n_batch", 64},
                                  {"n_threads", 1}});
    s->record_turn(run, {0, 0, "c01", 0}, {{"round", 0}, {"conversation_id", "c01"}, {"turn_index", 0},
                                           {"ttft_ms", 300.0}, {"decode_tokens_per_s", 20.0}, {"generated_tokens", 8},
                                           {"reply", "a, \"quoted\" reply"}});
    s->record_turn(run, {0, 0, "c01", 1}, {{"round", 0}, {"conversation_id", "c01"}, {"turn_index", 1},
                                           {"ttft_ms", 310.0}, {"decode_tokens_per_s", 21.0}, {"generated_tokens", 8}});
  }
  const std::string csv = run_cli({"export", "1", "-o", "csv", "--db", db});
  EXPECT_EQ(csv.rfind("schema_version,run_id,", 0), 0u) << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3) << csv;
  const auto doc = nlohmann::json::parse(run_cli({"export", "1", "-o", "json", "--db", db}));
  EXPECT_EQ(doc["kind"], "session");
  EXPECT_EQ(doc["configs"][0]["turns"].size(), 2u);
  EXPECT_EQ(doc["configs"][0]["analysis"]["turns_measured"], 2);
}

TEST(ExportCli, UnknownRunIsBadInput) {
  TempDir dir;
  const std::string db = dir.file("r.db");
  { store::open_store(db); }
  try {
    run_cli({"export", "7", "--db", db});
    FAIL() << "exported a run that does not exist";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
  }
}

// A store written by the previous release (tests/fixtures/previous-release: edgeprobe
// c6c1049, store schema 2; make.sh says how it was made and how its expected exports
// differ from that release's own) opens with this one, is upgraded in place, and every
// run exports the same bytes in every format, and `runs` lists them the same.
TEST(PreviousRelease, AStoreItWroteOpensUpgradedAndExportsTheSameBytes) {
  const std::string fixture = std::string(EDGEPROBE_TEST_DATA_DIR) + "/fixtures/previous-release";
  TempDir dir;
  const std::string db = dir.file("store.db");
  std::filesystem::copy_file(fixture + "/store.db", db);
  for (int run : {1, 2, 3, 4, 5, 6})
    for (const char* format : {"md", "csv", "json", "jsonl"}) {
      const std::string name = "run" + std::to_string(run) + "." + format;
      EXPECT_EQ(run_cli({"export", std::to_string(run), "-o", format, "--db", db}),
                edgeprobe::test_support::read_file(fixture + "/expected/" + name))
          << name << " differs from what this store exported when it was first upgraded";
    }
  EXPECT_EQ(run_cli({"runs", "--db", db}), edgeprobe::test_support::read_file(fixture + "/expected/runs.md"));
  auto store = edgeprobe::store::SqliteStore::open(db, edgeprobe::store::Mode::kMustExist);
  EXPECT_EQ(store->schema_version(), edgeprobe::store::SqliteStore::latest_schema_version());
  EXPECT_GT(store->schema_version(), 2);  // it was written at 2
}

// `runs` on a store that may hold years: the newest N (50 unless --last says otherwise),
// and filters by model and kind; listed oldest first, as ever.
TEST(RunsCli, TheNewestRunsAndFiltersByModelAndKind) {
  const std::string fixture = std::string(EDGEPROBE_TEST_DATA_DIR) + "/fixtures/previous-release";
  TempDir dir;
  const std::string db = dir.file("store.db");
  std::filesystem::copy_file(fixture + "/store.db", db);  // bench, bench, session, doctor x3
  auto ids = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"runs", "-o", "json", "--db", db});
    std::vector<int64_t> out;
    for (const auto& r : nlohmann::json::parse(run_cli(args))) out.push_back(r["id"]);
    return out;
  };
  EXPECT_EQ(ids({}), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(ids({"--last", "2"}), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(ids({"--last", "0"}), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(ids({"--model", "tiny-q4_0.gguf", "--kind", "bench"}), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(ids({"--kind", "doctor"}), (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(ids({"--model", "other.gguf"}), std::vector<int64_t>{});
}

}  // namespace
}  // namespace edgeprobe::cli
