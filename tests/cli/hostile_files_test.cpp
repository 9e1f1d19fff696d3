// Hostile data files through the real binary: plans, sweeps, prompt sets, result files and
// stores. Each case asserts the exit code, the one line on stderr (its content), that the
// process did not crash or hang (run_process kills at the timeout), and, for stores, that
// the runs stored before still export byte for byte the same.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <thread>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/run_process.h"

using namespace edgeprobe::test_support;
using nlohmann::json;

namespace {

// One line on stderr, the edgeprobe error prefix, and `fragment` in it.
void expect_one_line(const ProcessResult& r, int exit_code, const std::string& fragment,
                     const std::string& label) {
  EXPECT_EQ(r.exit_code, exit_code) << label << ": " << r.err.substr(0, 2000);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << label << ": " << r.err.substr(0, 2000);
  EXPECT_EQ(r.err.rfind("edgeprobe: error: ", 0), 0u) << label << ": " << r.err.substr(0, 2000);
  EXPECT_NE(r.err.find(fragment), std::string::npos) << label << ": " << r.err.substr(0, 2000);
  EXPECT_LT(r.err.size(), 2000u) << label;  // bounded, whatever the input held
}

std::string deep_json(size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

void sql(const std::string& db, const std::string& statement) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  char* message = nullptr;
  const int rc = sqlite3_exec(h, statement.c_str(), nullptr, nullptr, &message);
  EXPECT_EQ(rc, SQLITE_OK) << (message ? message : "");
  sqlite3_free(message);
  sqlite3_close(h);
}

// One small bench result, measured once per binary and shared by the result-file cases.
const json& bench_result() {
  static const json doc = [] {
    const auto r = run_edgeprobe({"bench", "-q", "-m", tiny_model(), "-p", "8", "-n", "4", "-r", "2", "-t",
                                  "1", "--ceilings", "off", "--sample-hz", "0", "--no-store", "-o", "json"},
                                 300);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
  }();
  return doc;
}

}  // namespace

// ---- plans (run --plan) ----

struct PlanCase {
  const char* name;
  std::string plan;      // the file's bytes
  const char* fragment;  // in the error line
};

class HostilePlan : public ::testing::TestWithParam<PlanCase> {};

TEST_P(HostilePlan, OneLineExitTwo) {
  TempDir dir;
  write_file(dir.file("plan.json"), GetParam().plan);
  const auto r = run_edgeprobe({"run", "--plan", dir.file("plan.json")}, 60);
  expect_one_line(r, 2, GetParam().fragment, GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(
    Table, HostilePlan,
    ::testing::Values(
        PlanCase{"RepetitionsPastInt", R"({"kind": "bench", "repetitions": 4294967297})",
                 "'repetitions' is out of range"},
        PlanCase{"FractionalRepetitions", R"({"kind": "bench", "repetitions": 2.5})",
                 "'repetitions' must be a whole number"},
        PlanCase{"PromptLengthPastInt", R"({"kind": "bench", "sweep": {"n_prompt": [4294967808]}})",
                 "'n_prompt[0]' is out of range"},
        PlanCase{"HugeNegative", R"({"kind": "bench", "sweep": {"n_gen": [-99999999999999999999]}})",
                 "'n_gen[0]' is out of range"},
        PlanCase{"PlanVersionWraps", R"({"kind": "bench", "plan_version": 4294967297})",
                 "plan_version 4294967297"},
        PlanCase{"PlanVersionString", R"({"kind": "bench", "plan_version": "1"})",
                 "'plan_version' must be an integer"},
        PlanCase{"UnknownEnvKey", R"({"kind": "bench", "env": {"sample_hz": 0, "cpu_varient": "x64"}})",
                 "plan env: unknown key 'cpu_varient'"},
        PlanCase{"EnvNotAnObject", R"({"kind": "bench", "env": [1]})", "'env' must be an object"},
        PlanCase{"NulInModelPath", R"({"kind": "bench", "sweep": {"models": ["a.gguf\u0000.txt"]}})",
                 "'models[0]' holds a NUL character"},
        PlanCase{"InvalidUtf8", "{\"kind\": \"bench\", \"sweep\": {\"models\": [\"\xff\xfe.gguf\"]}}",
                 "not a JSON plan"},
        PlanCase{"WrongTypeRepetitions", R"({"kind": "bench", "repetitions": "five"})",
                 "'repetitions' must be an integer"},
        PlanCase{
            "WrongTypeSessionConfig",
            R"({"kind": "session", "configs": [{"model_path": 3, "n_ctx": 64, "max_tokens": 1, "n_batch": 1, "n_threads": 1}]})",
            "'configs[0].model_path' must be a string"},
        PlanCase{"WrongTypeCase",
                 R"({"kind": "bench", "cases": [{"model_path": "m", "config": {"n_prompt": "8"}}]})",
                 "'cases[0].config.n_prompt' must be an integer"},
        PlanCase{"CasesNotAList", R"({"kind": "bench", "cases": 5})", "'cases' must be a list"},
        PlanCase{"CompletedWrongType",
                 R"({"kind": "bench", "completed": [{"case_index": 0, "repetition": {"index": "x"}}]})",
                 "'completed[0].repetition.index' must be an integer"},
        PlanCase{
            "CompletedStepsWrongType",
            R"({"kind": "bench", "completed": [{"case_index": 0, "repetition": {"index": 0, "decode_step_ms": "fast"}}]})",
            "decode_step_ms' must be a list"},
        PlanCase{
            "CompletedTurnWrongType",
            R"({"kind": "session", "completed": [{"config_index": 0, "turn": {"round": 0, "conversation_id": 7, "turn_index": 0}}]})",
            "'completed[0].turn.conversation_id' must be a string"},
        PlanCase{"CompletedNotAList", R"({"kind": "session", "completed": {"a": 1}})",
                 "'completed' must be a list"},
        PlanCase{"DoctorBaselineFuture",
                 R"({"kind": "doctor", "baseline": {"schema_version": 999, "provenance": {}}})",
                 "schema_version 999 is newer than this edgeprobe reads (1 to 2)"},
        PlanCase{"DeepNesting", R"({"kind": "bench", "env": )" + deep_json(300000) + "}",
                 "nested deeper than 64 levels"}));

TEST(HostilePlanEcho, HundredMegabyteStringComesBackBounded) {
  TempDir dir;
  const std::string huge(100u << 20, 'A');
  for (const std::string& plan :
       {R"({"kind": "bench", ")" + huge + R"(": 1})",
        R"({"kind": "bench", "sweep": {"models": [")" + huge + R"("]}, "repetitions": "x"})",
        R"({"kind": "bench", "ceilings": [")" + huge + R"("]})", R"({"kind": ")" + huge + R"("})"}) {
    write_file(dir.file("plan.json"), plan);
    const auto r = run_edgeprobe({"run", "--plan", dir.file("plan.json")}, 120);
    expect_one_line(r, 2, "plan", plan.substr(0, 40));
    EXPECT_LT(r.out.size(), 2000u);  // the error event on stdout is bounded too
  }
}

// ---- sweeps ----

TEST(HostileSweep, AstronomicalCrossProductIsRefusedWithItsSizeBeforeAnythingRuns) {
  const auto start = std::chrono::steady_clock::now();
  // Each list is within its own cap (10,000 values); the product is 10^8 tests.
  auto r = run_edgeprobe({"bench", "-q", "--no-store", "-m", tiny_model(), "-p", "1-10000", "-n", "0", "-b",
                          "1-10000", "--ceilings", "off"},
                         60);
  expect_one_line(r, 2, "the sweep's cross product is 100000000 tests, over the 10000", "1e8");
  // Past 2^64: the count saturates instead of wrapping to something small.
  r = run_edgeprobe({"bench",  "-q",      "--no-store", "-m",      tiny_model(), "-p",         "1-10000",
                     "-n",     "1-10000", "-b",         "1-10000", "-ub",        "1-10000",    "-d",
                     "0-9999", "--poll",  "0-100",      "-t",      "1-512",      "--ceilings", "off"},
                    60);
  expect_one_line(r, 2, "over 18446744073709551615 tests", "2^64");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  EXPECT_EQ(r.out, "");  // nothing ran, nothing was printed
}

// ---- prompt sets ----

TEST(HostilePromptSet, AFileThatNeverEndsIsRefusedAtTheBound) {
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_edgeprobe(
      {"session", "-q", "--no-store", "-m", tiny_model(), "--prompts", "/dev/zero", "--rounds", "1"}, 60);
  expect_one_line(r, 2, "/dev/zero: over 64 MiB", "/dev/zero");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  TempDir dir;
  write_file(dir.file("p.jsonl"), "{\"id\": 5, \"turns\": [\"hi\"]}\n");
  expect_one_line(
      run_edgeprobe({"session", "-q", "--no-store", "-m", tiny_model(), "--prompts", dir.file("p.jsonl")},
                    60),
      2, "p.jsonl:1: \"id\" must be a string", "id type");
  write_file(dir.file("deep.jsonl"), deep_json(300000) + "\n");
  expect_one_line(
      run_edgeprobe({"session", "-q", "--no-store", "-m", tiny_model(), "--prompts", dir.file("deep.jsonl")},
                    60),
      2, "deep.jsonl:1: nested deeper than 16 levels", "deep");
}

// Text that is not JSON, in any JSON file a user gives: one shape, FILE:LINE:COLUMN and the
// parser's reason, never nlohmann's "[json.exception.parse_error.101]" prefix.
TEST(HostileJsonFiles, SyntaxErrorsSayTheFileLineAndColumn) {
  TempDir dir;
  write_file(dir.file("p.jsonl"), "{\"id\": \"a\", \"turns\": [\"hi\"]}\n\n  hello there\n");
  write_file(dir.file("plan.json"), "{\n  \"kind\": \"bench\",\n  \"repetitions\": 2,,\n}\n");
  write_file(dir.file("result.json"), "{\"schema_version\": 2,\n \"kind\": \"bench\"\n \"results\": []}\n");
  struct Case {
    std::vector<std::string> args;
    std::string fragment;
  };
  const std::vector<Case> cases = {
      {{"session", "-q", "--no-store", "-m", tiny_model(), "--prompts", dir.file("p.jsonl")},
       dir.file("p.jsonl") + ":3:3: not a JSON conversation: syntax error while parsing value - invalid literal"},
      {{"run", "--plan", dir.file("plan.json")},
       dir.file("plan.json") + ":3:20: not a JSON plan: syntax error while parsing object key"},
      {{"report", dir.file("result.json"), "--output", dir.file("r.html")},
       dir.file("result.json") + ":3:10: not a JSON result file: syntax error while parsing object"},
      {{"doctor", "-q", "-m", tiny_model(), "--baseline", dir.file("result.json")},
       dir.file("result.json") + ":3:10: not a JSON --baseline result: syntax error while parsing object"},
  };
  for (const auto& c : cases) {
    const auto r = run_edgeprobe(c.args, 60);
    expect_one_line(r, 2, c.fragment, c.args[0]);
    EXPECT_EQ(r.err.find("json.exception"), std::string::npos) << r.err;
  }
}

// ---- result files (report, compare, doctor --baseline) ----

TEST(HostileResultFile, DeepNestingFutureVersionsAndWrongTypesAreOneLineExitTwo) {
  TempDir dir;
  const json good = bench_result();
  write_file(dir.file("good.json"), good.dump());
  write_file(dir.file("deep.json"), deep_json(300000));
  json future = good;
  future["schema_version"] = 999;
  write_file(dir.file("future.json"), future.dump());
  json wrong = good;
  wrong["results"][0]["config"]["n_prompt"] = "eight";
  write_file(dir.file("wrong.json"), wrong.dump());
  json steps = good;
  steps["results"][0]["repetitions"][1]["decode_step_ms"] = {1.0, "slow"};
  write_file(dir.file("steps.json"), steps.dump());
  json reps = good;
  reps["results"][0]["repetitions"] = "many";
  write_file(dir.file("reps.json"), reps.dump());
  json version_string = good;
  version_string["schema_version"] = "2";
  write_file(dir.file("vstring.json"), version_string.dump());
  write_file(dir.file("nan.json"), R"({"schema_version": 2, "kind": "bench", "results": [NaN]})");
  write_file(dir.file("huge.json"),
             R"({"schema_version": 2, "kind": "bench", "results": [{"ttft_ms": 1e400}]})");

  const std::string good_path = dir.file("good.json");
  struct Case {
    std::string file, fragment;
  };
  const std::vector<Case> cases = {
      {"deep.json", "nested deeper than 128 levels"},
      {"future.json", "schema_version 999 is newer than this edgeprobe reads (1 to 2)"},
      {"vstring.json", "schema_version must be an integer"},
      {"wrong.json", "results[0].config.n_prompt must be a number, got \"eight\""},
      {"steps.json", "results[0].repetitions[1].decode_step_ms[1] must be a number"},
      {"reps.json", "results[0].repetitions must be a list"},
      {"nan.json", "not a JSON"},
      {"huge.json", "number overflow parsing '1e400'"},
  };
  for (const auto& c : cases) {
    const std::string path = dir.file(c.file);
    expect_one_line(run_edgeprobe({"report", good_path, path, "--output", dir.file("r.html")}, 60), 2,
                    c.fragment, "report " + c.file);
    expect_one_line(run_edgeprobe({"compare", good_path, path}, 60), 2, c.fragment, "compare " + c.file);
    expect_one_line(run_edgeprobe({"doctor", "-q", "-m", tiny_model(), "--baseline", path}, 60), 2,
                    c.fragment, "doctor " + c.file);
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("r.html")));  // no page half-written from bad data
}

// Every reader of a result file reads it through one typed reader (result::read_result_file),
// so each refuses the same malformed documents with the same line: exit 2, the file's name
// and the field. Before, report rendered a page of {"kind": 5} and export took no file.
TEST(HostileResultFile, EveryReaderRefusesTheSameMalformedDocumentsNamingTheField) {
  TempDir dir;
  const json good = bench_result();
  write_file(dir.file("good.json"), good.dump());
  json rep_not_object = good;
  rep_not_object["results"][0]["repetitions"][0] = 7;
  const std::string whole = good.dump(1);
  struct Case {
    std::string file, bytes, fragment;
  };
  const std::vector<Case> cases = {
      {"kind-number.json", R"({"kind": 5, "results": []})", "kind must be a string (bench, session or doctor), got 5"},
      {"kind-unknown.json", R"({"schema_version": 2, "kind": "benchmark", "results": []})",
       "kind \"benchmark\" is not a result edgeprobe writes"},
      {"no-results.json", R"({"schema_version": 2, "kind": "bench", "provenance": {}})",
       "a bench result has a \"results\" array and this one has none"},
      {"no-configs.json", R"({"schema_version": 2, "kind": "session", "provenance": {}})",
       "a session result has a \"configs\" list"},
      // Cut between two members, not inside a string (a cut in a string is another error).
      {"truncated.json", whole.substr(0, whole.rfind("\"results\"")), "unexpected end of input"},
      {"results-object.json", R"({"schema_version": 2, "kind": "bench", "results": {"pp8": 1}})",
       "results must be a list"},
      {"result-number.json", R"({"schema_version": 2, "kind": "bench", "results": [7]})",
       "results[0] must be an object"},
      {"repetition-number.json", rep_not_object.dump(), "results[0].repetitions[0] must be an object, got 7"},
      {"array.json", "[1, 2]", "not an edgeprobe result"},
  };
  const std::string good_path = dir.file("good.json");
  for (const auto& c : cases) {
    const std::string path = dir.file(c.file);
    write_file(path, c.bytes);
    const std::vector<std::vector<std::string>> readers = {
        {"report", path, "--output", dir.file("r.html")},
        {"export", path},
        {"compare", good_path, path},
        {"explain", good_path, path},
        {"predict", "--check", path},
        {"predict-disagg", "--result", path},
        {"doctor", "-q", "-m", tiny_model(), "--baseline", path},
    };
    for (const auto& args : readers) {
      const auto r = run_edgeprobe(args, 60);
      expect_one_line(r, 2, path + ":", args[0] + " " + c.file);  // the file, then what is wrong
      expect_one_line(r, 2, c.fragment, args[0] + " " + c.file);
    }
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("r.html")));
  // The good file is read by each of them (export writes it as bench wrote it).
  const auto exported = run_edgeprobe({"export", good_path, "-o", "json"}, 60);
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_EQ(json::parse(exported.out)["results"].size(), good["results"].size());
}

TEST(HostileResultFile, ScriptInjectionAndExtremeNumbersRenderSafely) {
  TempDir dir;
  json doc = bench_result();
  const std::string script = "</script><script>alert(1)</script><img src=x onerror=alert(2)>\x1b[2J\n";
  // Every string in the document becomes the injection (keys stay: they name the fields).
  std::function<void(json&)> poison = [&](json& j) {
    if (j.is_string())
      j = script + j.get<std::string>();
    else if (j.is_number_float())
      j = 1e308;
    else if (j.is_structured())
      for (auto& v : j) poison(v);
  };
  json hostile = doc;
  poison(hostile["provenance"]);
  poison(hostile["results"]);
  hostile["kind"] = "bench";
  write_file(dir.file("hostile.json"), hostile.dump());
  const auto r = run_edgeprobe({"report", dir.file("hostile.json"), "--output", dir.file("r.html")}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = read_file(dir.file("r.html"));
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
  EXPECT_EQ(page.find("<img"), std::string::npos);
  EXPECT_EQ(count_of(page, "</script>"), 2u);  // the data block's and the renderer's own
  // compare prints markdown: the injected text stays on its lines, no raw escapes.
  const auto c =
      run_edgeprobe({"compare", "--force", dir.file("hostile.json"), dir.file("hostile.json")}, 60);
  EXPECT_TRUE(c.exit_code == 0 || c.exit_code == 2) << c.err;
  EXPECT_EQ(c.out.find('\x1b'), std::string::npos);
}

TEST(HostileResultFile, AMillionSamplesAreHandledInBoundedTime) {
  TempDir dir;
  json doc = bench_result();
  std::vector<double> steps(1000000);
  for (size_t i = 0; i < steps.size(); ++i) steps[i] = 10.0 + static_cast<double>(i % 997) / 100.0;
  for (auto& result : doc["results"])
    for (auto& rep : result["repetitions"]) rep["decode_step_ms"] = steps;
  write_file(dir.file("big.json"), doc.dump());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"compare", dir.file("big.json"), dir.file("big.json")},
        std::vector<std::string>{"report", dir.file("big.json"), "--output", dir.file("r.html")}}) {
    const auto start = std::chrono::steady_clock::now();
    const auto r = run_edgeprobe(args, 120);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_LT(s, 60.0) << args[0];
    std::printf("%s of %zu samples per repetition (%zu MB): %.1f s\n", args[0].c_str(), steps.size(),
                read_file(dir.file("big.json")).size() >> 20, s);
  }
}

// ---- stores ----

class HostileStore : public ::testing::Test {
 protected:
  // Two runs in a store, and what `export` writes of each before anything hostile happens.
  void SetUp() override {
    db_ = dir_.file("results.db");
    for (int i = 0; i < 2; ++i) {
      const auto r = run_edgeprobe(
          {"bench", "-q", "-m",         tiny_model(), "-p",          "8", "-n",   "0", "-r", "1",
           "-t",    "1",  "--ceilings", "off",        "--sample-hz", "0", "--db", db_, "-o", "json"},
          300);
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    for (const char* run : {"1", "2"}) exports_.push_back(export_of(db_, run));
    ASSERT_FALSE(exports_[0].empty());
  }
  std::string export_of(const std::string& db, const std::string& run) {
    const auto r = run_edgeprobe({"export", run, "--db", db, "-o", "json"}, 60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
  void expect_exports_unchanged(const std::string& db) {
    EXPECT_EQ(export_of(db, "1"), exports_[0]);
    EXPECT_EQ(export_of(db, "2"), exports_[1]);
  }
  TempDir dir_;
  std::string db_;
  std::vector<std::string> exports_;
};

TEST_F(HostileStore, DamagedFilesAreOneLineExitTwo) {
  const std::string bytes = read_file(db_);
  write_file(dir_.file("truncated.db"), bytes.substr(0, bytes.size() / 3));
  std::string random(64 * 1024, '\0');
  for (size_t i = 0; i < random.size(); ++i) random[i] = static_cast<char>((i * 2654435761u) >> 13);
  write_file(dir_.file("random.db"), random);
  std::filesystem::create_directory(dir_.file("dir.db"));
  struct Case {
    std::string db, fragment;
  };
  for (const Case& c : std::vector<Case>{{"truncated.db", "damaged"},
                                         {"random.db", "not an edgeprobe results database"},
                                         {"dir.db", "is a directory"}}) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"runs", "--db", dir_.file(c.db)},
          std::vector<std::string>{"export", "1", "--db", dir_.file(c.db)}})
      expect_one_line(run_edgeprobe(args, 60), 2, c.fragment, args[0] + " " + c.db);
  }
  expect_exports_unchanged(db_);
}

TEST_F(HostileStore, AFutureSchemaVersionIsNamed) {
  std::filesystem::copy_file(db_, dir_.file("future.db"));
  sql(dir_.file("future.db"), "PRAGMA user_version = 99");
  expect_one_line(run_edgeprobe({"runs", "--db", dir_.file("future.db")}, 60), 2,
                  "schema v99, written by a newer", "runs");
  expect_one_line(run_edgeprobe({"export", "1", "--db", dir_.file("future.db")}, 60), 2, "schema v99",
                  "export");
  expect_exports_unchanged(db_);
}

TEST_F(HostileStore, DeeplyNestedProvenanceDoesNotCrashExport) {
  sql(db_, "UPDATE runs SET provenance_json = '" + deep_json(300000) + "' WHERE id = 2");
  expect_one_line(run_edgeprobe({"export", "2", "--db", db_}, 60), 2, "nested deeper than 128 levels",
                  "export 2");
  const auto runs = run_edgeprobe({"runs", "--db", db_}, 60);
  EXPECT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_EQ(export_of(db_, "1"), exports_[0]);
}

// A FIFO as --db: open(2) of one waits for a writer that never comes, so every subcommand
// that takes --db (all open it through store::open_store) refuses it before opening it,
// and a device too.
TEST(HostileStorePath, ANamedPipeOrADeviceIsRefusedBeforeItIsOpened) {
  TempDir dir;
  const std::string fifo = dir.file("results.db");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  for (const auto& [db, what] : std::vector<std::pair<std::string, std::string>>{{fifo, "is a named pipe"},
                                                                                {"/dev/null", "is a device"}}) {
    const std::vector<std::vector<std::string>> commands = {
        {"runs", "--db", db},
        {"export", "1", "--db", db},
        {"report", "1", "--db", db, "--output", dir.file("r.html")},
        {"compare", "1", "2", "--db", db},
        {"explain", "1", "2", "--db", db},
        {"bench", "-q", "-m", tiny_model(), "-p", "8", "-n", "0", "-r", "1", "--ceilings", "off", "--db", db},
        {"session", "-q", "-m", tiny_model(), "--rounds", "1", "--db", db},
    };
    for (const auto& args : commands)
      expect_one_line(run_edgeprobe(args, 30), 2, db + ": " + what + ", not a results database", args[0] + " " + db);
  }
}

// A process blocked outside any job (here in open(2) of a FIFO given as a result file,
// which result files may be) ends at the first SIGTERM or Ctrl-C: no job is there to stop
// after its unit, and the kernel restarts the open after the handler.
TEST(HostileStorePath, TheFirstSignalEndsAProcessBlockedOpeningAFifo) {
  TempDir dir;
  const std::string fifo = dir.file("result.json");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0) << std::strerror(errno);
  for (const int sig : {SIGTERM, SIGINT}) {
    const pid_t pid = fork();
    if (pid == 0) {
      const int devnull = open("/dev/null", O_WRONLY);
      dup2(devnull, STDOUT_FILENO);
      dup2(devnull, STDERR_FILENO);
      execl(EDGEPROBE_BINARY, EDGEPROBE_BINARY, "compare", fifo.c_str(), fifo.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    ASSERT_GT(pid, 0);
    // Blocked in the open once its wait channel says so (fifo_open's wait_for_partner;
    // after 5 s anyway, where a kernel names it otherwise).
    for (int i = 0; i < 100; ++i) {
      if (read_file("/proc/" + std::to_string(pid) + "/wchan").find("partner") != std::string::npos) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid, sig);
    int status = 0;
    pid_t done = 0;
    for (int i = 0; i < 100 && done == 0; ++i) {  // 5 s
      done = waitpid(pid, &status, WNOHANG);
      if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (done == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
    EXPECT_NE(done, 0) << "signal " << sig << " did not end a process blocked in open(2) of a FIFO";
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "status " << status;
  }
}

// A small tmpfs of our own (root only): read-only and full filesystems, for real.
class TmpfsStore : public HostileStore {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to mount a tmpfs";
    HostileStore::SetUp();
    mount_ = dir_.file("mnt");
    std::filesystem::create_directory(mount_);
    if (::mount("tmpfs", mount_.c_str(), "tmpfs", 0, "size=4m") != 0) {
      mount_.clear();
      GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
    }
    std::filesystem::copy_file(db_, mount_ + "/results.db");
    db_in_mount_ = mount_ + "/results.db";
  }
  void TearDown() override {
    if (!mount_.empty()) ::umount2(mount_.c_str(), MNT_DETACH);
  }
  std::string mount_, db_in_mount_;
};

TEST_F(TmpfsStore, ReadOnlyFilesystemStillListsAndExportsAndSaysWhyItCannotWrite) {
  ASSERT_EQ(::mount(nullptr, mount_.c_str(), nullptr, MS_REMOUNT | MS_RDONLY, "size=4m"), 0)
      << std::strerror(errno);
  const auto runs = run_edgeprobe({"runs", "--db", db_in_mount_}, 60);
  EXPECT_EQ(runs.exit_code, 0) << runs.err;
  EXPECT_NE(runs.out.find("bench"), std::string::npos) << runs.out;
  expect_exports_unchanged(db_in_mount_);
  const auto bench = run_edgeprobe({"bench", "-q", "-m", tiny_model(), "-p", "8", "-n", "0", "-r", "1", "-t",
                                    "1", "--ceilings", "off", "--sample-hz", "0", "--db", db_in_mount_},
                                   120);
  expect_one_line(bench, 3, "read-only", "bench on a read-only store");
}

TEST_F(TmpfsStore, FullFilesystemNamesTheDiskAndLosesNothing) {
  // Fill what is left of the 4 MiB, then write the first result.
  {
    std::string chunk(64 * 1024, 'x');
    FILE* f = std::fopen((mount_ + "/filler").c_str(), "wb");
    ASSERT_NE(f, nullptr);
    while (std::fwrite(chunk.data(), 1, chunk.size(), f) == chunk.size()) {
    }
    std::fclose(f);
  }
  const auto bench = run_edgeprobe({"bench", "-q", "-m", tiny_model(), "-p", "8", "-n", "0", "-r", "1", "-t",
                                    "1", "--ceilings", "off", "--sample-hz", "0", "--db", db_in_mount_},
                                   120);
  expect_one_line(bench, 3, "disk full", "bench on a full disk");
  EXPECT_EQ(bench.err.find("no transaction is active"), std::string::npos) << bench.err;
  // Reading still works on the full disk, and nothing stored before is lost or changed.
  const auto runs = run_edgeprobe({"runs", "--db", db_in_mount_}, 60);
  EXPECT_EQ(runs.exit_code, 0) << runs.err;
  expect_exports_unchanged(db_in_mount_);
  std::filesystem::remove(mount_ + "/filler");
  expect_exports_unchanged(db_in_mount_);
}
