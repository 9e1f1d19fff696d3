// -o FORMAT and --output FILE, declared once (src/cli/shared_flags.h), on the real binary:
// in every subcommand family `-o json` parses and --output FILE holds the bytes stdout
// would have; `runs -o json|csv` on a store of two runs; a failed render leaves no file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/run_process.h"

using namespace edgeprobe::test_support;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const std::string kPhone = std::string(EDGEPROBE_TEST_DATA_DIR) + "/fixtures/sysfs/android-phone-3cluster";

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// The words of each line of `runs`' table after its header.
std::vector<std::vector<std::string>> table_rows(const std::string& table) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(table);
  std::string line;
  std::getline(lines, line);  // the header
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::vector<std::string> row;
    for (std::string w; words >> w;) row.push_back(w);
    rows.push_back(row);
  }
  return rows;
}

// A store of two bench runs (one configuration, one repetition each), made once.
class StoreOfTwoRuns : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir;
    for (int i = 0; i < 2; ++i) {
      const auto r = run_edgeprobe({"bench", "-q", "-m", tiny_model(), "-p", "8", "-n", "0", "-r", "1", "-t", "1",
                                    "--ceilings", "off", "--db", db()});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string db() { return dir_->file("store.db"); }
  static TempDir* dir_;
  TempDir out_;  // each test's --output files
};
TempDir* StoreOfTwoRuns::dir_ = nullptr;

// `args` to stdout, then the same with --output FILE: exit 0 both, nothing on stdout the
// second time, the file byte for byte what stdout was; returns those bytes.
std::string same_bytes_to_file(const std::vector<std::string>& args, const TempDir& dir) {
  const auto to_stdout = run_edgeprobe(args, 120);
  EXPECT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  const std::string file = dir.file("out");
  const auto to_file = run_edgeprobe(with(args, {"--output", file}), 120);
  EXPECT_EQ(to_file.exit_code, 0) << to_file.err;
  EXPECT_EQ(to_file.out, "");
  EXPECT_TRUE(fs::exists(file));
  EXPECT_FALSE(fs::exists(file + ".tmp"));
  if (!fs::exists(file)) return "";
  EXPECT_EQ(read_file(file), to_stdout.out) << "--output differs from stdout for " << args[0];
  return to_stdout.out;
}

}  // namespace

TEST_F(StoreOfTwoRuns, RunsJsonIsTheTableTyped) {
  const auto md = run_edgeprobe({"runs", "--db", db()}, 60);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  const auto rows = table_rows(md.out);
  const json runs = json::parse(same_bytes_to_file({"runs", "--db", db(), "-o", "json"}, out_));
  ASSERT_TRUE(runs.is_array());
  ASSERT_EQ(runs.size(), 2u);
  ASSERT_EQ(rows.size(), 2u) << md.out;
  for (size_t i = 0; i < runs.size(); ++i) {
    const json& run = runs[i];
    const auto& row = rows[i];  // ID CREATED KIND STATUS DEVICE CONFIGS REPS TURNS MODEL
    ASSERT_EQ(row.size(), 9u) << md.out;
    ASSERT_TRUE(run["id"].is_number_integer()) << run;
    EXPECT_EQ(std::to_string(run["id"].get<int64_t>()), row[0]);
    EXPECT_EQ(run["created_at"], row[1]);
    EXPECT_EQ(run["kind"], "bench");
    EXPECT_EQ(run["status"], row[3]);
    EXPECT_EQ(run["device_id"], row[4]);
    // What the two benches asked for: one configuration (pp8), one repetition, no turns.
    EXPECT_EQ(run["configurations"], 1);
    EXPECT_EQ(run["repetitions"], 1);
    EXPECT_EQ(run["turns"], 0);
    EXPECT_EQ(run["model"], fs::path(tiny_model()).filename().string());
  }
  EXPECT_LT(runs[0]["id"].get<int64_t>(), runs[1]["id"].get<int64_t>()) << "newest last, as the table";

  const std::string csv = same_bytes_to_file({"runs", "--db", db(), "-o", "csv"}, out_);
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "id,created_at,kind,status,device_id,configurations,repetitions,turns,model");
  for (const json& run : runs) {
    ASSERT_TRUE(std::getline(lines, line)) << csv;
    EXPECT_EQ(line, std::to_string(run["id"].get<int64_t>()) + "," + run["created_at"].get<std::string>() +
                        ",bench," + run["status"].get<std::string>() + "," + run["device_id"].get<std::string>() +
                        ",1,1,0," + run["model"].get<std::string>());
  }
  EXPECT_FALSE(std::getline(lines, line)) << csv;
}

TEST_F(StoreOfTwoRuns, AnEmptyFilterIsAnEmptyArray) {
  const auto r = run_edgeprobe({"runs", "--db", db(), "--kind", "session", "-o", "json"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out), json::array());
}

TEST_F(StoreOfTwoRuns, ExportCompareAndReportWriteTheirFileAsStdout) {
  EXPECT_TRUE(json::parse(same_bytes_to_file({"export", "1", "--db", db()}, out_)).contains("results"));
  EXPECT_NE(same_bytes_to_file({"export", "2", "--db", db(), "-o", "csv"}, out_).find("pp8"), std::string::npos);
  EXPECT_TRUE(
      json::parse(same_bytes_to_file({"compare", "1", "2", "--db", db(), "-o", "json"}, out_)).contains("metrics"));
  // report's file is its HTML page ('-' is stdout).
  const auto page = run_edgeprobe({"report", "1", "--db", db(), "--output", "-"}, 60);
  ASSERT_EQ(page.exit_code, 0) << page.err;
  const auto file = run_edgeprobe({"report", "1", "--db", db(), "--output", out_.file("r.html")}, 60);
  ASSERT_EQ(file.exit_code, 0) << file.err;
  EXPECT_EQ(read_file(out_.file("r.html")), page.out);
  EXPECT_FALSE(fs::exists(out_.file("r.html.tmp")));
}

TEST_F(StoreOfTwoRuns, AFailedRenderLeavesTheFileAsItWas) {
  const std::string file = out_.file("kept.json");
  write_file(file, "an earlier result\n");
  const auto r = run_edgeprobe({"export", "99", "--db", db(), "--output", file}, 60);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(read_file(file), "an earlier result\n");
  EXPECT_FALSE(fs::exists(file + ".tmp"));
  // A bench that fails before measuring writes no file at all.
  const auto bench = run_edgeprobe(
      {"bench", "-q", "-m", out_.file("missing.gguf"), "--no-store", "--output", out_.file("b.json")}, 60);
  EXPECT_EQ(bench.exit_code, 2) << bench.err;
  EXPECT_FALSE(fs::exists(out_.file("b.json")));
  EXPECT_FALSE(fs::exists(out_.file("b.json.tmp")));
}

TEST(OutputCli, SysinfoProbeAndPredictWriteTheirFileAsStdout) {
  TempDir dir;
  const json sysinfo = json::parse(same_bytes_to_file({"sysinfo", "--sysfs-root", kPhone, "-o", "json"}, dir));
  EXPECT_TRUE(sysinfo.contains("ceilings"));
  const std::string md = same_bytes_to_file({"sysinfo", "--sysfs-root", kPhone}, dir);
  // text is md's old name: the same bytes.
  const auto text = run_edgeprobe({"sysinfo", "--sysfs-root", kPhone, "-o", "text"}, 60);
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out, md);

  const json probe = json::parse(same_bytes_to_file({"probe", "--sysfs-root", kPhone, "-o", "json"}, dir));
  EXPECT_TRUE(probe["ceilings"].is_null()) << "a fixture tree is not measured";
  same_bytes_to_file({"probe", "--sysfs-root", kPhone, "-o", "md"}, dir);

  const std::vector<std::string> predict{"predict-disagg", "--local-rate", "100", "--remote-rate", "400",
                                         "--kv-bytes-per-token", "100000", "--link-mbit", "100"};
  const json prediction = json::parse(same_bytes_to_file(with(predict, {"-o", "json"}), dir));
  EXPECT_EQ(prediction["inputs"]["link_mbit_s"], 100.0);
  EXPECT_EQ(same_bytes_to_file(predict, dir), run_edgeprobe(with(predict, {"-o", "text"}), 60).out);
}

TEST(OutputCli, LabCheckWritesItsFileAsStdout) {
  TempDir dir;
  write_file(dir.file("lab.yml"), "all:\n  hosts:\n    pc: {transport: local, workdir: " + dir.file("pc") + "}\n");
  const std::vector<std::string> args{"lab", "check", "-i", dir.file("lab.yml"), "-o", "json"};
  const auto to_stdout = run_edgeprobe(args, 120);
  ASSERT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  const auto to_file = run_edgeprobe(with(args, {"--output", dir.file("check.json")}), 120);
  ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
  EXPECT_EQ(to_file.out, "");
  // Free space moves between two checks (other processes write): all else is the same.
  json a = json::parse(to_stdout.out), b = json::parse(read_file(dir.file("check.json")));
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["device"], "pc");
  a[0]["state"].erase("free_kb");
  b[0]["state"].erase("free_kb");
  EXPECT_EQ(a, b);
}

TEST(OutputCli, BenchJsonGoesToTheFileOnly) {
  TempDir dir;
  const auto r = run_edgeprobe({"bench", "-q", "-m", tiny_model(), "-p", "8", "-n", "0", "-r", "1", "-t", "1",
                                "--ceilings", "off", "--no-store", "-o", "json", "--output", dir.file("b.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  const json doc = json::parse(read_file(dir.file("b.json")));
  ASSERT_EQ(doc["results"].size(), 1u);
  EXPECT_EQ(doc["results"][0]["test"], "pp8");
}

TEST(OutputCli, ADeviceOrPipeIsWrittenInPlace) {
  // stdout is a pipe here: /dev/stdout cannot be renamed over, so it is written directly.
  const auto r = run_edgeprobe({"sysinfo", "--sysfs-root", kPhone, "-o", "json", "--output", "/dev/stdout"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(json::parse(r.out).contains("ceilings"));
}

// A file that exists and cannot be written is refused with the reason of the call that
// failed: before, /proc/version was "No such file or directory" (the errno of the
// temporary file beside it).
TEST(OutputCli, AnOutputThatCannotBeWrittenSaysWhy) {
  TempDir dir;
  auto refusal = [&](const std::string& file) {
    const auto r = run_edgeprobe({"sysinfo", "--sysfs-root", kPhone, "--output", file}, 60);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.out, "");
    return r.err;
  };
  // Root may open /proc/version for writing; no one may create a file beside it.
  const std::string proc = refusal("/proc/version");
  EXPECT_NE(proc.find("cannot write --output '/proc/version': "), std::string::npos) << proc;
  EXPECT_NE(proc.find(geteuid() == 0 ? "'/proc' takes no new files" : "Permission denied"), std::string::npos) << proc;
  EXPECT_EQ(proc.find("No such file or directory"), std::string::npos) << proc;
  const std::string missing = refusal(dir.file("nowhere/out.md"));
  EXPECT_NE(missing.find("its directory '" + dir.file("nowhere") + "' does not exist"), std::string::npos) << missing;
  if (geteuid() != 0) {  // root writes a read-only file anyway
    write_file(dir.file("ro.md"), "kept\n");
    fs::permissions(dir.file("ro.md"), fs::perms::owner_read);
    EXPECT_NE(refusal(dir.file("ro.md")).find("Permission denied"), std::string::npos);
    EXPECT_EQ(read_file(dir.file("ro.md")), "kept\n");
  }
}
