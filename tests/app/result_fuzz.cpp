// libFuzzer target for the result-file reader (report, compare, export, doctor --baseline
// all start here): bounded parsing, the schema-version check, the v1 -> v2 upgrade, the
// kind, the provenance and the typed reader. Any bytes give a document or edgeprobe::Error(kBadInput);
// never a crash, a JSON type error escaping, or a read out of bounds (ASan/UBSan watch).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/bounded_input.h"
#include "core/error.h"
#include "result/document.h"
#include "result/migrate.h"
#include "result/result.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace edgeprobe;
  try {
    const auto j = parse_json_bounded(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz",
                                      "result file", result::kMaxResultDepth);
    result::check_schema_version(j, "fuzz");
    const auto upgraded = result::upgrade_report(j);
    (void)result::document_kind(upgraded);
    (void)result::document_from_json(upgraded, "fuzz");  // the typed reader every file goes through
    if (upgraded.is_object() && upgraded.contains("provenance")) {
      const auto p = result::provenance_from_json(upgraded["provenance"]);
      (void)result::to_json(p).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kBadInput) __builtin_trap();
  }
  return 0;
}
