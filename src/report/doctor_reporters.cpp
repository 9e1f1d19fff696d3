#include "report/doctor_reporters.h"

#include <fmt/format.h>

#include <ostream>
#include <string_view>

#include "core/error.h"
#include "core/text.h"
#include "report/formats.h"

namespace edgeprobe::report {
namespace {

using nlohmann::json;

std::string cell(const json& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return fmt::format("{:.6g}", v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? "1" : "0";
  return v.dump();
}

std::string joined(const json& lines) {
  std::string out;
  if (!lines.is_array()) return cell(lines);
  for (const auto& l : lines) out += (out.empty() ? "" : "; ") + cell(l);
  return out;
}

// A finding as this version writes it. A diagnosis stored before the speed-up had one
// name carries it as estimated_speedup, with the whole sentence in speedup_basis.
json current_finding(json f) {
  if (!f.contains("speedup") && f.contains("estimated_speedup")) f["speedup"] = f["estimated_speedup"];
  f.erase("estimated_speedup");
  if (!f.contains("speedup_detail")) {
    const std::string sentence = f.value("speedup_basis", json()).is_string() ? f["speedup_basis"].get<std::string>() : "";
    // The sentence starts with its basis, after an emulated run's prefix ("...speed: measured: ...").
    std::string_view rest = sentence;
    if (const auto p = rest.find("speed: "); rest.starts_with("from an emulated run") && p != std::string_view::npos)
      rest.remove_prefix(p + 7);
    std::string word;
    for (const char* w : {"measured", "estimated", "none"})
      if (rest.starts_with(w)) word = w;
    f["speedup_basis"] = word.empty() ? json(nullptr) : json(word);
    f["speedup_detail"] = sentence.empty() || sentence == word ? json(nullptr) : json(sentence);
  }
  return f;
}

}  // namespace

void write_doctor_report(const json& j, const std::string& markdown, const std::string& format, std::ostream& out) {
  const json& d = j.contains("doctor") ? j["doctor"] : json::object();
  json findings = json::array();
  for (const auto& f : d.value("findings", json::array())) findings.push_back(current_finding(f));
  if ((format == "md" || format == "text") && !markdown.empty()) {
    out << markdown;
  } else if (format == "md" || format == "text") {
    // A stored diagnosis: its findings from the JSON, in the order doctor ranked them.
    out << fmt::format("edgeprobe doctor: {} ({})\n", d.value("model", ""), d.value("healthy", false) ? "healthy" : "not healthy");
    for (const auto& f : findings) {
      out << fmt::format("\n[{}] {}: {}\n", cell(f.value("severity", json())), cell(f.value("id", json())),
                         cell(f.value("title", json())));
      for (const auto& e : f.value("evidence", json::array())) out << "  - " << cell(e) << "\n";
      const std::string detail = cell(f.value("speedup_detail", json()));
      if (f.value("speedup", json()).is_number())
        out << fmt::format("  speed-up: {:.2f}x ({})\n", f["speedup"].get<double>(),
                           detail.empty() ? cell(f.value("speedup_basis", json())) : detail);
      else if (!detail.empty())
        out << "  speed-up: " << detail << "\n";
      if (!cell(f.value("fix", json())).empty()) out << "  fix: " << cell(f["fix"]) << "\n";
    }
  } else if (format == "json") {
    json doc = j;
    if (doc.contains("doctor") && doc["doctor"].is_object()) doc["doctor"]["findings"] = findings;
    out << doc.dump(2) << "\n";
  } else if (format == "csv") {
    static const char* kColumns[] = {"id",           "severity",       "title", "affects", "speedup", "speedup_basis",
                                     "speedup_detail", "fix", "evidence"};
    std::string header = "schema_version,model";
    for (const char* c : kColumns) header += std::string(",") + c;
    out << header << "\n";
    for (const auto& f : findings) {
      std::string line = cell(j.value("schema_version", json())) + "," + csv_field(d.value("model", ""));
      for (const char* c : kColumns)
        line += "," + csv_field(std::string(c) == "evidence" ? joined(f.value(c, json())) : cell(f.value(c, json())));
      out << line << "\n";
    }
  } else if (format == "jsonl") {
    for (const auto& f : findings) {
      json line = f;
      line["schema_version"] = j.value("schema_version", json());
      line["kind"] = "doctor_finding";
      line["model"] = d.value("model", "");
      line["config"] = d.value("config", json());
      out << line.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
    }
  } else {
    check_format(OutputKind::kResults, format);
  }
  out.flush();
}

}  // namespace edgeprobe::report
