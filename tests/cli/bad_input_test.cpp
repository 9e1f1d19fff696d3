// A table of bad inputs: each must give one line on stderr naming the problem, exit code
// 2, no crash, no hang (run_process kills after the timeout and the exit code shows it).
#include <gtest/gtest.h>

#include <cstring>

#include "support/run_process.h"

using namespace edgeprobe::test_support;

namespace {

struct BadCase {
  const char* name;
  std::vector<std::string> args;  // "MODEL" is replaced by the tiny model, "DIR/" by a temp dir
  const char* expected;           // a fragment of the error line
};

std::string patched_model(const TempDir& dir, const std::string& name, size_t keep_bytes,
                          const std::string& new_architecture = "") {
  std::string bytes = read_file(tiny_model());
  if (keep_bytes) bytes.resize(keep_bytes);
  if (!new_architecture.empty()) {
    // The value follows the key, a u32 type and a u64 length; same length keeps it valid.
    const auto at = bytes.find("general.architecture");
    EXPECT_NE(at, std::string::npos);
    std::memcpy(bytes.data() + at + std::strlen("general.architecture") + 4 + 8, new_architecture.data(),
                new_architecture.size());
  }
  write_file(dir.file(name), bytes);
  return dir.file(name);
}

}  // namespace

class BadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadInput, OneLineExitTwoNoCrash) {
  TempDir dir;
  const auto size = read_file(tiny_model()).size();
  write_file(dir.file("notgguf.gguf"), "this is a text file, not a model\n");
  patched_model(dir, "truncated.gguf", size * 2 / 3);
  patched_model(dir, "headonly.gguf", 64);
  // Same length as "llama", so the file stays well-formed but names an unknown architecture.
  patched_model(dir, "arch.gguf", 0, "zzzzz");
  std::vector<std::string> args;
  for (auto a : GetParam().args) {
    if (a == "MODEL") a = tiny_model();
    if (a.rfind("DIR/", 0) == 0) a = dir.file(a.substr(4));
    args.push_back(a);
  }
  const auto r = run_edgeprobe(args, 120);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(GetParam().expected), std::string::npos) << r.err;
  // One line: the error, nothing else (progress is off with -q).
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("edgeprobe: error: ", 0), 0u) << r.err;
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadInput,
    ::testing::Values(
        BadCase{"MissingFile", {"bench", "-q", "-m", "DIR/missing.gguf"}, "does not exist"},
        BadCase{"NotGguf", {"bench", "-q", "-m", "DIR/notgguf.gguf"}, "not a GGUF file"},
        BadCase{"Truncated", {"bench", "-q", "-m", "DIR/truncated.gguf"}, "truncated"},
        BadCase{"HeaderOnly", {"bench", "-q", "-m", "DIR/headonly.gguf"}, "not a valid GGUF file"},
        BadCase{"UnknownArchitecture",
                {"bench", "-q", "-r", "1", "-p", "8", "-n", "0", "-m", "DIR/arch.gguf"},
                "zzzzz"},
        BadCase{"Directory", {"bench", "-q", "-m", "DIR/"}, "directory"},
        BadCase{"ZeroThreads", {"bench", "-q", "-m", "MODEL", "-t", "0"}, "-t 0"},
        BadCase{"NotANumber", {"bench", "-q", "-m", "MODEL", "-p", "abc"}, "'abc' for -p"},
        BadCase{"BackwardsRange", {"bench", "-q", "-m", "MODEL", "-n", "64-8"}, "below the start"},
        BadCase{"BadMask", {"bench", "-q", "-m", "MODEL", "-C", "0xzz"}, "CPU mask"},
        BadCase{"BadFormat", {"bench", "-q", "-m", "MODEL", "-o", "xml"}, "output format"},
        BadCase{"BadCacheType", {"bench", "-q", "-m", "MODEL", "-ctk", "q9_9"}, "KV cache type"},
        BadCase{"BadFlashAttn", {"bench", "-q", "-m", "MODEL", "-fa", "maybe"}, "-fa"},
        BadCase{"ZeroRepetitions", {"bench", "-q", "-m", "MODEL", "-r", "0"}, "-r 0"},
        BadCase{"PollOutOfRange", {"bench", "-q", "-m", "MODEL", "--poll", "101"}, "--poll"},
        BadCase{"BadPair", {"bench", "-q", "-m", "MODEL", "-pg", "16"}, "-pg"},
        BadCase{"UnknownVariant",
                {"bench", "-q", "-m", "MODEL", "--cpu-variant", "pentium"},
                "unknown CPU variant"},
        BadCase{"UnknownFlag", {"bench", "-q", "-m", "MODEL", "--frobnicate"}, "frobnicate"},
        BadCase{"UnwritableOutput",
                {"bench", "-q", "-m", "MODEL", "--output", "/nonexistent/dir/out.md"},
                "--output"},
        BadCase{"UnknownShape",
                {"synth", "--shape", "llama-900b", "--output", "DIR/x.gguf"},
                "unknown model shape"},
        BadCase{
            "UnknownQuant", {"synth", "-q", "q9_k", "--output", "DIR/x.gguf"}, "unknown quantization type"},
        BadCase{"UnknownTrained",
                {"bench", "-q", "-m", "trained:huge"},
                "unknown trained model 'huge'; known: trained:main, trained:draft"},
        BadCase{"UnknownTrainedQuant",
                {"bench", "-q", "-m", "trained:main:q9_k"},
                "unknown quantization type 'q9_k'"},
        BadCase{"TrainUnknown", {"train", "huge"}, "unknown trained model 'huge'"},
        BadCase{"SynthOldDashO", {"synth", "--shape", "tiny", "-o", "DIR/x.gguf"}, "use --output"},
        BadCase{"SysinfoOutputIsNotAFormat", {"sysinfo", "--output", "json"}, "--output"},
        // -o and --output are one declaration (src/cli/shared_flags.h): every subcommand
        // refuses a format it does not write and a file it cannot write the same way.
        BadCase{"RunsBadFormat",
                {"runs", "-o", "xml"},
                "unknown output format 'xml'; use md, csv, json or jsonl"},
        BadCase{"SysinfoBadFormat", {"sysinfo", "-o", "csv"}, "unknown output format 'csv'; use md or json"},
        BadCase{"ProbeBadFormat", {"probe", "-o", "jsonl"}, "unknown output format 'jsonl'"},
        BadCase{"PredictBadFormat", {"predict-disagg", "-o", "html"}, "unknown output format 'html'"},
        BadCase{"CompareBadFormat", {"compare", "1", "2", "-o", "html"}, "unknown output format 'html'"},
        BadCase{"ExportBadFormat", {"export", "1", "-o", "html"}, "unknown output format 'html'"},
        BadCase{"LabBadFormat", {"lab", "check", "-o", "csv"}, "unknown output format 'csv'"},
        BadCase{"DoctorBadFormat", {"doctor", "-q", "-o", "xml"}, "unknown output format 'xml'"},
        BadCase{"RunsUnwritableOutput", {"runs", "--output", "/nonexistent/dir/runs.json"}, "--output"},
        BadCase{"SysinfoUnwritableOutput", {"sysinfo", "--output", "/nonexistent/dir/s.md"}, "--output"},
        BadCase{
            "PredictUnwritableOutput", {"predict-disagg", "--output", "/nonexistent/dir/p.md"}, "--output"},
        BadCase{"ExportUnwritableOutput", {"export", "1", "--output", "/nonexistent/dir/e.json"}, "--output"},
        BadCase{"LabUnwritableOutput", {"lab", "check", "--output", "/nonexistent/dir/l.md"}, "--output"},
        BadCase{"ReportUnwritableOutput", {"report", "1", "--output", "/nonexistent/dir/r.html"}, "--output"},
        BadCase{"OutputIsADirectory", {"sysinfo", "--output", "DIR/"}, "is a directory"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return info.param.name; });
