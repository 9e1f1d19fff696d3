#include "result/document.h"

#include "core/bounded_input.h"
#include "core/error.h"
#include "core/text.h"
#include "result/migrate.h"

namespace edgeprobe::result {

const char* kind_of(const Document& document) {
  static constexpr const char* kKinds[] = {"bench", "session", "doctor"};  // in the variant's order
  return kKinds[document.index()];
}

nlohmann::json to_json(const Document& document) {
  return std::visit([](const auto& d) { return to_json(d); }, document);
}

void check_document(const nlohmann::json& j) {
  if (!j.is_object()) throw_bad_input("not an edgeprobe result: a result is a JSON object");
  // A "kind" present is the answer; only a document without one is told by its shape.
  if (const auto it = j.find("kind"); it != j.end()) {
    if (!it->is_string())
      throw_bad_input("kind must be a string (bench, session or doctor), got {}",
                      one_line(it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), 80));
    if (document_kind(j).empty())
      throw_bad_input("kind \"{}\" is not a result edgeprobe writes (bench, session or doctor)",
                      one_line(it->get<std::string>(), 80));
  }
  const std::string kind = document_kind(j);
  if (kind.empty()) throw_bad_input("not an edgeprobe result: a bench, session or doctor document names its kind");
  if (kind == "bench" && !(j.contains("results") && j["results"].is_array()))
    throw_bad_input("a bench result has a \"results\" array and this one has none: is it an 'edgeprobe bench -o json' "
                    "result?");
  if (kind == "session" && !(j.contains("configs") && j["configs"].is_array()))
    throw_bad_input("a session result has a \"configs\" list and this one has none: is it an 'edgeprobe session -o "
                    "json' result?");
}

Document document_from_json(const nlohmann::json& j) {
  check_document(j);
  const std::string kind = document_kind(j);
  if (kind == "bench") return bench_report_from_json(j);
  if (kind == "session") return session_report_from_json(j);
  return doctor_result_from_json(j);
}

namespace {

// `read` with its refusals prefixed by `name` (a file), JSON type errors among them.
template <typename F>
auto named(std::string_view name, F&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kBadInput) throw;
    throw_bad_input("{}: {}", name, e.what());
  } catch (const nlohmann::json::exception& e) {
    throw_bad_input("{}: a field holds a type edgeprobe never writes there ({}); is it an edgeprobe result?", name,
                    one_line(e.what(), 120));
  }
}

}  // namespace

Document document_from_json(const nlohmann::json& j, std::string_view name) {
  return named(name, [&] { return document_from_json(j); });
}

nlohmann::json read_result_file(const std::string& path, std::string_view what) {
  nlohmann::json upgraded = read_upgraded_result_file(path, what);
  named(source_name(path), [&] { check_document(upgraded); });
  return upgraded;
}

}  // namespace edgeprobe::result
