// One set of conventions on every subcommand, checked on the real binary from its own CLI
// definition (`edgeprobe completion commands` walks the CLI11 tree): every command that
// prints takes -o with the shared format names, --output - for stdout and -q; a typo of a
// flag or subcommand gets the nearest one; every error names that command's help.
#include <gtest/gtest.h>
#include <sched.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/run_process.h"

using namespace edgeprobe::test_support;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kPhone = std::string(EDGEPROBE_TEST_DATA_DIR) + "/fixtures/sysfs/android-phone-3cluster";

struct Command {
  std::string path;                  // "edgeprobe lab run"
  std::vector<std::string> words;    // {"lab", "run"}
  std::set<std::string> flags;
};

std::vector<std::string> split(const std::string& text, char by) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string w; std::getline(in, w, by);)
    if (!w.empty()) out.push_back(w);
  return out;
}

// The CLI definition as the binary reports it.
std::vector<Command> commands() {
  const auto r = run_edgeprobe({"completion", "commands"}, 30);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<Command> out;
  for (const std::string& line : split(r.out, '\n')) {
    const auto tab = line.find('\t');
    Command c;
    c.path = line.substr(0, tab);
    c.words = split(c.path, ' ');
    c.words.erase(c.words.begin());  // "edgeprobe"
    for (const auto& f : split(line.substr(tab + 1), ' ')) c.flags.insert(f);
    out.push_back(c);
  }
  return out;
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::string quoted(const std::string& w) {
  std::string out = "'";
  for (char c : w) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// edgeprobe with `args`, run from `dir` (so a file named '-' would show up there).
ProcessResult run_in(const std::string& dir, const std::vector<std::string>& args, int timeout_s = 300) {
  std::string command = "cd " + quoted(dir) + " && exec " + quoted(EDGEPROBE_BINARY);
  for (const auto& a : args) command += " " + quoted(a);
  return run_process({"/bin/sh", "-c", command}, timeout_s);
}

// The formats `-o` takes, from the error an unknown one gives: "...; use md, csv, json or jsonl".
std::vector<std::string> formats_of(const Command& c) {
  const auto r = run_edgeprobe(with(c.words, {"-o", "no-such-format"}), 30);
  EXPECT_EQ(r.exit_code, 2) << c.path << ": " << r.err;
  std::smatch m;
  const std::regex use("unknown output format 'no-such-format'; use ([a-z]+(, [a-z]+)*( or [a-z]+)?)");
  if (!std::regex_search(r.err, m, use)) {
    ADD_FAILURE() << c.path << ": " << r.err;
    return {};
  }
  std::string list = std::regex_replace(m[1].str(), std::regex(" or "), ", ");
  std::vector<std::string> out;
  for (auto& f : split(list, ',')) out.push_back(f.substr(f.find_first_not_of(' ')));
  return out;
}

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
}

// One line on stderr, exit 2, `fragment` in it, and the help of `path` named.
void expect_usage_error(const std::vector<std::string>& args, const std::string& fragment, const std::string& path) {
  const auto r = run_edgeprobe(args, 60);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(see '" + path + " --help')"), std::string::npos) << r.err;
}

// A store with one bench run, an inventory of this machine and a bench plan, made once.
class Conventions : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    const auto r = run_edgeprobe({"bench", "-q", "-m", tiny_model(), "-p", "8", "-n", "0", "-r", "1", "-t", "1",
                                  "--ceilings", "off", "--sample-hz", "0", "--db", dir_->file("store.db")});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    write_file(dir_->file("lab.yml"), "all:\n  hosts:\n    pc: {transport: local, workdir: " + dir_->file("pc") + "}\n");
    const json plan = {{"kind", "bench"},
                       {"sweep", {{"models", {tiny_model()}}, {"n_prompt", {8}}, {"n_gen", {0}}, {"threads", {1}}}},
                       {"repetitions", 1},
                       {"ceilings", "off"},
                       {"env", {{"sample_hz", 0}}}};
    write_file(dir_->file("plan.json"), plan.dump());
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string file(const std::string& name) { return dir_->file(name); }

  // How to run each command that prints, cheaply: the test fails for a printing command
  // missing here, so a new one is checked as soon as it exists.
  static std::map<std::string, std::vector<std::string>> cheap_runs() {
    const std::string db = file("store.db"), model = tiny_model();
    const std::vector<std::string> small{"-m", model, "-p", "8", "-n", "0", "-r", "1", "-t", "1", "--ceilings", "off",
                                         "--sample-hz", "0"};
    return {
        {"edgeprobe bench", with(small, {"--no-store"})},
        {"edgeprobe session",
         {"-m", model, "--rounds", "1", "--conversations", "1", "--max-tokens", "4", "-t", "1", "--sample-hz",
          "0", "--no-store"}},
        {"edgeprobe doctor",
         {"-m", model, "--no-experiments", "-p", "16", "-n", "4", "-r", "1", "-t", "1", "--no-store"}},
        {"edgeprobe sysinfo", {"--sysfs-root", kPhone}},
        {"edgeprobe probe", {"--sysfs-root", kPhone}},
        {"edgeprobe runs", {"--db", db}},
        {"edgeprobe export", {"1", "--db", db}},
        {"edgeprobe compare", {"1", "1", "--db", db}},
        {"edgeprobe report", {"1", "--db", db}},
        // A run against itself: one device, so no ceilings are needed.
        {"edgeprobe explain", {"1", "1", "--db", db}},
        {"edgeprobe run", {"--plan", file("plan.json")}},
        // A model against itself over one short chunk.
        {"edgeprobe fidelity", {"-m", model, "--reference", model, "-c", "32", "--chunks", "1", "-t", "1"}},
        // One quantization, one short chunk, one round (-q is its quantization list, as predict's).
        {"edgeprobe frontier",
         {"-m", "synth:tiny", "-q", "q8_0", "-c", "32", "--chunks", "1", "--rounds", "1", "-p", "4", "-n",
          "2", "-t", "1"}},
        // -q is predict's quantization list (issue 25); --quiet is its quiet. A spec: no probe.
        {"edgeprobe predict", {"-m", "tiny", "--bandwidth", "25", "--db", db}},
        {"edgeprobe predict-disagg",
         {"--local-rate", "100", "--remote-rate", "400", "--kv-bytes-per-token", "100000", "--link-mbit",
          "100"}},
        {"edgeprobe lab check", {"-i", file("lab.yml")}},
        {"edgeprobe lab run", with(small, {"-i", file("lab.yml"), "--db", file("lab.db")})},
        // deploy pushes a packaged bundle (scripts/package.sh): its flags are checked, not a run.
        {"edgeprobe lab deploy", {}},
        // submit stages a packaged bundle and import needs a LAVA lab run: tests/lab/lava_cli_test.cpp runs
        // both.
        {"edgeprobe lab submit", {}},
        {"edgeprobe lab import", {}},
        {"edgeprobe lab receive", {}},
    };
  }

  static TempDir* dir_;
};
TempDir* Conventions::dir_ = nullptr;

}  // namespace

TEST_F(Conventions, EveryCommandThatPrintsTakesTheSameOutputFlags) {
  const auto all = commands();
  ASSERT_GT(all.size(), 15u) << "the CLI walk found too few commands";
  const auto runs = cheap_runs();
  // lava: run's stream framed for a LAVA job log (app/stream_frames.h).
  const std::set<std::string> known{"md", "csv", "json", "jsonl", "html", "lava"};
  size_t printing = 0;
  for (const Command& c : all) {
    if (!c.flags.count("-o")) continue;
    ++printing;
    SCOPED_TRACE(c.path);
    for (const char* flag : {"-o", "--output-format", "--output", "-q", "--quiet"}) EXPECT_TRUE(c.flags.count(flag)) << flag;
    const auto formats = formats_of(c);
    ASSERT_FALSE(formats.empty());
    for (const auto& f : formats) EXPECT_TRUE(known.count(f)) << f;
    // Where rows exist (csv), all four row formats do.
    if (has(formats, "csv")) {
      EXPECT_TRUE(has(formats, "md") && has(formats, "json") && has(formats, "jsonl"));
    }
    // Every listed format, and text for md, is accepted while parsing (help ends it there).
    std::vector<std::string> accepted = formats;
    if (has(formats, "md")) accepted.push_back("text");
    for (const auto& f : accepted) {
      const auto r = run_edgeprobe(with(c.words, {"-o", f, "--quiet", "--help"}), 30);
      EXPECT_EQ(r.exit_code, 0) << "-o " << f << ": " << r.err;
    }
    const auto run = runs.find(c.path);
    ASSERT_NE(run, runs.end()) << "no cheap run in this test for a command that prints";
    if (run->second.empty()) continue;
    // --output - is stdout (no file named '-'), -q leaves stderr without progress or notes.
    TempDir cwd;
    const std::string format = has(formats, "json") ? "json" : formats.front();
    const auto r = run_in(cwd.path(), with(with(c.words, run->second), {"-o", format, "--output", "-", "--quiet"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(fs::exists(cwd.file("-"))) << "--output - wrote a file named '-'";
    for (const auto& line : split(r.err, '\n')) EXPECT_EQ(line.rfind("edgeprobe: warning: ", 0), 0u) << line;
    if (format == "json") {
      EXPECT_TRUE(json::accept(r.out)) << r.out.substr(0, 300);
    } else if (format == "jsonl") {
      for (const auto& line : split(r.out, '\n')) EXPECT_TRUE(json::accept(line)) << line;
      EXPECT_FALSE(r.out.empty());
    } else {
      EXPECT_NE(r.out.find("<html"), std::string::npos) << r.out.substr(0, 300);
    }
  }
  EXPECT_GE(printing, 13u);
}

TEST_F(Conventions, ATypoGetsTheNearestNameAndTheCommandsHelp) {
  for (const Command& c : commands()) {
    SCOPED_TRACE(c.path);
    // A long flag of five letters or more with two of its letters swapped.
    std::string flag;
    for (const auto& f : c.flags)
      if (f.rfind("--", 0) == 0 && f.size() >= 7 && f != "--help-all" && f != "--version") {
        flag = f;
        break;
      }
    if (flag.empty()) continue;  // only -h/--help (edgeprobe, lab): their subcommands are checked below
    std::string typo = flag;
    std::swap(typo[3], typo[4]);
    if (c.flags.count(typo)) std::swap(typo[4], typo[5]);
    expect_usage_error(with(c.words, {typo}), "unknown flag '" + typo + "' for '" + c.path + "'; did you mean '" + flag + "'?", c.path);
  }
  expect_usage_error({"bnech"}, "unknown subcommand 'bnech' for 'edgeprobe'; did you mean 'bench'?", "edgeprobe");
  expect_usage_error({"lab", "chekc"}, "did you mean 'check'?", "edgeprobe lab");
  expect_usage_error({"bench", "--ouput", "x.json"}, "did you mean '--output'?", "edgeprobe bench");
  expect_usage_error({"lab"}, "'edgeprobe lab' needs a subcommand: check, deploy, run, submit, import, receive or lava-cases", "edgeprobe lab");
  // A flag of a subcommand given before it.
  expect_usage_error({"-q", "bench"}, "put it after the subcommand", "edgeprobe");
}

TEST_F(Conventions, DuplicateFlagsAndStrayArgumentsSayWhich) {
  expect_usage_error({"bench", "--repetitions", "1", "-r", "1"}, "'--repetitions 1' and '-r 1'", "edgeprobe bench");
  expect_usage_error({"run", "plan.json"}, "use --plan plan.json", "edgeprobe run");
  expect_usage_error({"bench", "model.gguf"}, "use -m model.gguf", "edgeprobe bench");
  expect_usage_error({"sysinfo", "extra"}, "unexpected argument 'extra' for 'edgeprobe sysinfo'", "edgeprobe sysinfo");
}

TEST_F(Conventions, FiltersAndPathsThatCannotBeMeantAreRefused) {
  expect_usage_error({"runs", "--db", file("store.db"), "--kind", "benc"},
                     "unknown kind 'benc'; did you mean 'bench'? (kinds: bench, session, doctor or lab)",
                     "edgeprobe runs");
  TempDir dir;
  const auto synth = run_edgeprobe({"synth", "--shape", "tiny", "--output", dir.file("missing/sub/x.gguf")}, 60);
  EXPECT_EQ(synth.exit_code, 2) << synth.err;
  EXPECT_NE(synth.err.find("the directory '" + dir.file("missing/sub") + "' does not exist"), std::string::npos)
      << synth.err;
  EXPECT_FALSE(fs::exists(dir.file("missing")));
  const auto dash = run_in(dir.path(), {"synth", "--shape", "tiny", "--output", "-"}, 60);
  EXPECT_EQ(dash.exit_code, 2) << dash.err;
  EXPECT_NE(dash.err.find("not to stdout"), std::string::npos) << dash.err;
  EXPECT_FALSE(fs::exists(dir.file("-")));
  const auto lab = run_edgeprobe({"lab", "run", "-i", file("lab.yml"), "--db", dir.file("lab.db")}, 60);
  EXPECT_EQ(lab.exit_code, 2) << lab.err;
  EXPECT_NE(lab.err.find("lab run needs plan files or -m MODEL"), std::string::npos) << lab.err;
  EXPECT_FALSE(fs::exists(dir.file("lab.db"))) << "refused before the store was opened";
}

TEST_F(Conventions, MoreThreadsThanCpusIsOneWarningAndTheRunGoesOn) {
  const int threads = std::min(512, usable_cpus() * 2);
  const auto r = run_edgeprobe({"bench", "-q", "-m", tiny_model(), "-p", "8", "-n", "0", "-r", "1", "-t",
                                std::to_string(threads), "--ceilings", "off", "--sample-hz", "0", "--no-store", "-o",
                                "json"},
                               120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "edgeprobe: warning: -t " + std::to_string(threads) + " is more threads than the " +
                       std::to_string(usable_cpus()) + " CPU" + (usable_cpus() == 1 ? "" : "s") +
                       " this process may run on: threads will wait for each other and the figures measure that "
                       "oversubscription (running anyway)\n");
  EXPECT_EQ(json::parse(r.out)["results"][0]["config"]["n_threads"], threads);
  const auto fits = run_edgeprobe({"bench", "-q", "-m", tiny_model(), "-p", "8", "-n", "0", "-r", "1", "-t", "1",
                                   "--ceilings", "off", "--sample-hz", "0", "--no-store"},
                                  120);
  ASSERT_EQ(fits.exit_code, 0) << fits.err;
  EXPECT_EQ(fits.err, "");
}

TEST_F(Conventions, VersionAndProvenanceNameTheBuild) {
  const auto v = run_edgeprobe({"--version"}, 30);
  ASSERT_EQ(v.exit_code, 0) << v.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(v.out, m, std::regex("^edgeprobe [0-9.]+ \\(git ([0-9a-f]{12}|unknown)(-dirty)?, ")))
      << v.out;
  EXPECT_NE(v.out.find("\nllama.cpp "), std::string::npos) << v.out;
  const json doc = json::parse(run_edgeprobe({"export", "1", "--db", file("store.db")}, 60).out);
  const json& build = doc["provenance"]["build"];
  EXPECT_EQ(build["git_commit"], m[1].str());
  EXPECT_EQ(build["git_dirty"], m[2].matched);
  EXPECT_NE(v.out.find(", " + build["build_type"].get<std::string>() + ", " + build["compiler"].get<std::string>()),
            std::string::npos)
      << v.out;
  EXPECT_FALSE(doc["provenance"]["engine"]["backends"].empty()) << doc["provenance"]["engine"];
}

TEST_F(Conventions, CompletionAndHelpAllComeFromTheSameDefinition) {
  TempDir dir;
  const auto script = run_edgeprobe({"completion", "bash"}, 30);
  ASSERT_EQ(script.exit_code, 0) << script.err;
  write_file(dir.file("edgeprobe.bash"), script.out);
  // What bash offers at the cursor, through the generated script.
  auto offered = [&](const std::string& words) {
    const std::string probe = "source " + quoted(dir.file("edgeprobe.bash")) + "; COMP_WORDS=(" + words +
                              "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _edgeprobe; echo \"${COMPREPLY[*]}\"";
    const auto r = run_process({"/bin/bash", "-c", probe}, 30);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  EXPECT_EQ(offered("edgeprobe be"), "bench\n");
  EXPECT_EQ(offered("edgeprobe lab ru"), "run\n");
  EXPECT_EQ(offered("edgeprobe lab r"), "run receive\n");
  EXPECT_EQ(offered("edgeprobe bench --outp"), "--output-format --output\n");
  EXPECT_EQ(offered("edgeprobe lab run --job"), "--job-timeout\n");
  EXPECT_EQ(offered("edgeprobe runs ''"), "\n") << "no subcommands: files";
  const auto zsh = run_edgeprobe({"completion", "zsh"}, 30);
  ASSERT_EQ(zsh.exit_code, 0) << zsh.err;
  EXPECT_EQ(zsh.out.rfind("#compdef edgeprobe\n", 0), 0u);
  expect_usage_error({"completion", "fish"}, "unknown shell 'fish'", "edgeprobe completion");

  const auto help = run_edgeprobe({"--help-all"}, 30);
  ASSERT_EQ(help.exit_code, 0) << help.err;
  for (const Command& c : commands()) {
    EXPECT_NE(help.out.find("Usage: " + c.path + " "), std::string::npos) << c.path;
    for (const auto& f : c.flags) EXPECT_NE(help.out.find(f), std::string::npos) << c.path << " " << f;
  }
  EXPECT_EQ(help.out.find("edgeprobe completion"), std::string::npos) << "the hidden subcommand stays hidden";
}
