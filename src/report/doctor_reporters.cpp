#include "report/doctor_reporters.h"

#include <fmt/format.h>

#include <filesystem>
#include <ostream>
#include <string_view>

#include "core/error.h"
#include "core/json_read.h"
#include "core/text.h"
#include "doctor/doctor.h"
#include "doctor/tune.h"
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

std::string to_text(const doctor::Diagnosis& d) {
  const auto& e = d.evidence;
  const auto& o = e.options;
  std::string out;
  const auto& report = e.primary.report;
  const result::ModelIdentity m =
      report && !report->provenance.models.empty() ? report->provenance.models.front() : result::ModelIdentity{};
  out += fmt::format("edgeprobe doctor: {} ({:.1f} MiB, {}, {:.2f} bits/weight{})\n",
                     std::filesystem::path(o.model_path).filename().string(), static_cast<double>(m.size_bytes) / (1024.0 * 1024.0),
                     m.dominant_type.empty() ? "?" : m.dominant_type, m.bits_per_weight,
                     m.sha256.empty() ? "" : ", sha256 " + m.sha256.substr(0, 16) + "…");
  out += fmt::format("configuration: {} · ggml CPU variant {} · tests pp{} + tg{}, median of {} · {:.0f} s\n\n",
                     o.config.flags_text(), report && !report->provenance.engine.cpu_variant.empty() ? report->provenance.engine.cpu_variant : "?",
                     o.n_prompt, o.n_gen, o.repetitions, d.wall_s);
  if (const std::string sign = doctor::emulated_run(e); !sign.empty())
    out += fmt::format("timings are emulated ({}): they are not the performance of any device, and every speed-up below is "
                       "marked as coming from this emulated run\n\n", sign);
  int n = 0, warnings = 0;
  for (const auto& f : d.findings) {
    warnings += f.severity != doctor::Severity::kInfo;
    std::string gain;
    if (f.speedup)
      gain = fmt::format(" · x{:.2f} {} if fixed ({}{})", *f.speedup, f.affects, doctor::speedup_basis_word(f),
                         f.data.contains("emulated") ? std::string(", ") + doctor::kEmulatedSpeedup : "");
    out += fmt::format("{}. [{}] {}: {}{}\n", ++n, doctor::severity_name(f.severity), f.id, f.title, gain);
    for (const auto& line : f.evidence) out += "     " + line + "\n";
    if (f.severity != doctor::Severity::kInfo && !f.speedup && !f.speedup_basis.empty()) out += "   speed-up: " + f.speedup_basis + "\n";
    if (!f.fix.empty()) out += "   fix: " + f.fix + "\n";
    out += "\n";
  }
  out += warnings == 0 ? "No warnings: nothing in this configuration slows the model down that doctor can see.\n"
                       : fmt::format("{} finding(s) to act on, largest measured or estimated gain first.\n", warnings);
  return out;
}

std::string to_text(const doctor::TuneResult& r) {
  const auto& o = r.options;
  std::string out = fmt::format("edgeprobe doctor --tune: {} · reference turn pp{} + tg{} · {:.0f} s\n\n",
                                std::filesystem::path(o.model_path).filename().string(), o.n_prompt, o.n_gen, r.wall_s);
  for (const auto& s : r.steps) {
    out += fmt::format("{}:{}\n", s.setting, s.error.empty() ? "" : " not measured: " + s.error);
    for (const auto& c : s.candidates)
      out += fmt::format("  {:<14} {:<40} {}{}\n", c.value, doctor::rates_text(c.rates),
                         c.turn_s ? fmt::format("{:.3f} s/turn", *c.turn_s) : std::string("-"),
                         c.value == s.chosen ? "  <- kept" : "");
  }
  out += "\n";
  if (r.best == r.start) {
    out += "The configuration given is already the fastest found: " + (r.start.flags_text().empty() ? std::string("(defaults)") : r.start.flags_text()) + "\n";
    return out;
  }
  out += fmt::format("best: {}\n", r.best.flags_text());
  for (size_t i = 0; i < r.start_rounds.size(); ++i)
    out += fmt::format("  round {}: given {} · best {}\n", i + 1, doctor::rates_text(r.start_rounds[i]), doctor::rates_text(r.best_rounds[i]));
  out += r.gain ? fmt::format("measured gain over the configuration given: x{:.2f} per turn (median of {} alternating rounds)\n", *r.gain,
                              r.start_rounds.size())
                : "the gain could not be confirmed (a confirmation run failed)\n";
  out += "reproduce: " + shell_join({"edgeprobe", "bench", "-m", o.model_path}) + " " + r.best.flags_text() + "\n";
  out += "llama.cpp: " + shell_join({"llama-bench", "-m", o.model_path}) + " " + r.best.llama_cpp_flags_text() +
         " (llama-cli takes the same flags)\n";
  return out;
}

}  // namespace edgeprobe::report
