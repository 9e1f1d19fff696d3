#include "result/document.h"

#include "core/error.h"
#include "result/migrate.h"

namespace edgeprobe::result {

const char* kind_of(const Document& document) {
  static constexpr const char* kKinds[] = {"bench", "session", "doctor"};  // in the variant's order
  return kKinds[document.index()];
}

nlohmann::json to_json(const Document& document) {
  return std::visit([](const auto& d) { return to_json(d); }, document);
}

Document document_from_json(const nlohmann::json& j) {
  const std::string kind = document_kind(j);
  if (kind == "bench") return bench_report_from_json(j);
  if (kind == "session") return session_report_from_json(j);
  if (kind == "doctor") return doctor_result_from_json(j);
  throw_bad_input("not an edgeprobe result: a bench, session or doctor document names its kind");
}

}  // namespace edgeprobe::result
