#pragma once
#include <string>
#include <vector>

namespace edgeprobe::report {

// Every kind of output edgeprobe prints, and the formats each is written in: declared once
// here. The CLI's -o takes its choices from it, and each writer refuses a format its kind
// does not list, so the two cannot drift (tests/report/formats_test.cpp renders every pair).
enum class OutputKind {
  kResults,        // bench, session, doctor and export: md, csv, json, jsonl
  kCompare,        // compare
  kExplain,        // explain, of two runs or of a lab run
  kPredict,        // predict and predict --check
  kRuns,           // runs
  kDeviceText,     // probe, sysinfo, predict-disagg: md for people, json
  kLab,            // lab check, deploy, run, import, receive
  kStream,         // run --plan: the wire stream, or framed for a LAVA job log
  kHtml,           // report
};

const std::vector<std::string>& formats_of(OutputKind kind);
// "md, csv, json or jsonl", as help and errors list them.
std::string format_list(const std::vector<std::string>& formats);
// Throws Error(kBadInput) naming the format and the kind's formats when `format` is not one.
void check_format(OutputKind kind, const std::string& format);

}  // namespace edgeprobe::report
