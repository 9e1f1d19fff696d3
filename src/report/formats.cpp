#include "report/formats.h"

#include <algorithm>

#include "core/error.h"

namespace edgeprobe::report {

const std::vector<std::string>& formats_of(OutputKind kind) {
  static const std::vector<std::string> kTables = {"md", "csv", "json", "jsonl"};
  static const std::vector<std::string> kText = {"md", "json"};
  static const std::vector<std::string> kStream = {"jsonl", "lava"};
  static const std::vector<std::string> kHtml = {"html"};
  switch (kind) {
    case OutputKind::kResults:
    case OutputKind::kCompare:
    case OutputKind::kExplain:
    case OutputKind::kPredict:
    case OutputKind::kRuns:
      return kTables;
    case OutputKind::kDeviceText:
    case OutputKind::kLab:
      return kText;
    case OutputKind::kStream:
      return kStream;
    case OutputKind::kHtml:
      return kHtml;
  }
  throw Error(ErrorKind::kBug, "unknown output kind");
}

std::string format_list(const std::vector<std::string>& formats) {
  std::string out;
  for (size_t i = 0; i < formats.size(); ++i) {
    if (i > 0) out += i + 1 == formats.size() ? " or " : ", ";
    out += formats[i];
  }
  return out;
}

void check_format(OutputKind kind, const std::string& format) {
  const auto& names = formats_of(kind);
  if (std::find(names.begin(), names.end(), format) == names.end())
    throw_bad_input("unknown output format '{}'; use {}", format, format_list(names));
}

}  // namespace edgeprobe::report
