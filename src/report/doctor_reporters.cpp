#include "report/doctor_reporters.h"

#include <fmt/format.h>

#include <filesystem>
#include <ostream>
#include <variant>

#include "core/error.h"
#include "core/text.h"
#include "report/formats.h"
#include "report/json_cells.h"

namespace edgeprobe::report {
namespace {

using nlohmann::json;

std::string joined(const json& lines) {
  std::string out;
  if (!lines.is_array()) return scalar(lines);
  for (const auto& l : lines) out += (out.empty() ? "" : "; ") + scalar(l);
  return out;
}

std::string jsonl_line(const json& line) { return line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

void write_diagnosis(const result::DoctorReport& r, const std::string& format, std::ostream& out) {
  std::vector<json> findings;
  for (const auto& f : r.findings) findings.push_back(result::to_json(f));
  if (format == "md" || format == "text") {
    out << to_text(r);
  } else if (format == "json") {
    out << result::to_json(r).dump(2) << "\n";
  } else if (format == "csv") {
    static const char* kColumns[] = {"id",           "severity",       "title", "affects", "speedup", "speedup_basis",
                                     "speedup_detail", "fix", "evidence"};
    std::string header = "schema_version,model";
    for (const char* c : kColumns) header += std::string(",") + c;
    out << header << "\n";
    for (const auto& f : findings) {
      std::string line = std::to_string(r.schema_version) + "," + csv_field(r.model);
      for (const char* c : kColumns)
        line += "," + csv_field(std::string(c) == "evidence" ? joined(f[c]) : scalar(f[c]));
      out << line << "\n";
    }
  } else if (format == "jsonl") {
    for (auto& line : findings) {
      line["schema_version"] = r.schema_version;
      line["kind"] = "doctor_finding";
      line["model"] = r.model;
      line["config"] = r.config;
      out << jsonl_line(line);
    }
  } else {
    check_format(OutputKind::kResults, format);
  }
}

// A search: one row per value tried, in the order tried.
void write_tune(const result::TuneReport& r, const std::string& format, std::ostream& out) {
  const auto rows = [&](auto&& row) {
    for (const auto& s : r.steps)
      for (const auto& c : s.candidates) row(s, c);
  };
  if (format == "md" || format == "text") {
    out << to_text(r);
  } else if (format == "json") {
    out << result::to_json(r).dump(2) << "\n";
  } else if (format == "csv") {
    out << "schema_version,model,setting,value,prefill_tokens_per_s,decode_tokens_per_s,turn_s,chosen,error\n";
    rows([&](const result::TuneStep& s, const result::TuneCandidate& c) {
      out << fmt::format("{},{},{},{},{},{},{},{},{}\n", r.schema_version, csv_field(r.model), csv_field(s.setting),
                         csv_field(c.value), scalar(json_read::number_or_null(c.rates.pp)),
                         scalar(json_read::number_or_null(c.rates.tg)), scalar(json_read::number_or_null(c.turn_s)),
                         c.value == s.chosen ? 1 : 0, csv_field(s.error));
    });
  } else if (format == "jsonl") {
    rows([&](const result::TuneStep& s, const result::TuneCandidate& c) {
      out << jsonl_line({{"schema_version", r.schema_version},
                         {"kind", "doctor_tune_candidate"},
                         {"model", r.model},
                         {"setting", s.setting},
                         {"value", c.value},
                         {"prefill_tokens_per_s", json_read::number_or_null(c.rates.pp)},
                         {"decode_tokens_per_s", json_read::number_or_null(c.rates.tg)},
                         {"turn_s", json_read::number_or_null(c.turn_s)},
                         {"chosen", c.value == s.chosen},
                         {"error", s.error}});
    });
  } else {
    check_format(OutputKind::kResults, format);
  }
}

}  // namespace

void write_doctor_report(const result::DoctorResult& result, const std::string& format, std::ostream& out) {
  if (const auto* diagnosis = std::get_if<result::DoctorReport>(&result)) write_diagnosis(*diagnosis, format, out);
  else write_tune(std::get<result::TuneReport>(result), format, out);
  out.flush();
}

std::string to_text(const result::DoctorReport& r) {
  std::string out;
  const result::ModelIdentity m =
      r.primary && !r.primary->provenance.models.empty() ? r.primary->provenance.models.front() : result::ModelIdentity{};
  const std::string variant = r.primary ? r.primary->provenance.engine.cpu_variant : "";
  out += fmt::format("edgeprobe doctor: {} ({:.1f} MiB, {}, {:.2f} bits/weight{})\n",
                     std::filesystem::path(r.model).filename().string(), static_cast<double>(m.size_bytes) / (1024.0 * 1024.0),
                     m.dominant_type.empty() ? "?" : m.dominant_type, m.bits_per_weight,
                     m.sha256.empty() ? "" : ", sha256 " + m.sha256.substr(0, 16) + "…");
  out += fmt::format("configuration: {} · ggml CPU variant {} · tests pp{} + tg{}, median of {} · {:.0f} s\n\n",
                     shell_join(r.config), variant.empty() ? "?" : variant, r.n_prompt, r.n_gen, r.repetitions, r.wall_s);
  if (!r.emulated.empty())
    out += fmt::format("timings are emulated ({}): they are not the performance of any device, and every speed-up below is "
                       "marked as coming from this emulated run\n\n", r.emulated);
  int n = 0, warnings = 0;
  for (const auto& f : r.findings) {
    warnings += f.severity != result::Severity::kInfo;
    std::string gain;
    if (f.speedup)
      gain = fmt::format(" · x{:.2f} {} if fixed ({}{})", *f.speedup, f.affects, result::speedup_basis_word(f),
                         f.data.contains("emulated") ? std::string(", ") + result::kEmulatedSpeedup : "");
    out += fmt::format("{}. [{}] {}: {}{}\n", ++n, result::severity_name(f.severity), f.id, f.title, gain);
    for (const auto& line : f.evidence) out += "     " + line + "\n";
    if (f.severity != result::Severity::kInfo && !f.speedup && !f.speedup_basis.empty()) out += "   speed-up: " + f.speedup_basis + "\n";
    if (!f.fix.empty()) out += "   fix: " + f.fix + "\n";
    out += "\n";
  }
  out += warnings == 0 ? "No warnings: nothing in this configuration slows the model down that doctor can see.\n"
                       : fmt::format("{} finding(s) to act on, largest measured or estimated gain first.\n", warnings);
  return out;
}

std::string to_text(const result::TuneReport& r) {
  // A search stored before its document named the reference turn does not say it.
  const std::string turn = r.n_prompt + r.n_gen > 0 ? fmt::format(" · reference turn pp{} + tg{}", r.n_prompt, r.n_gen) : "";
  std::string out = fmt::format("edgeprobe doctor --tune: {}{} · {:.0f} s\n\n", std::filesystem::path(r.model).filename().string(),
                                turn, r.wall_s);
  for (const auto& s : r.steps) {
    out += fmt::format("{}:{}\n", s.setting, s.error.empty() ? "" : " not measured: " + s.error);
    for (const auto& c : s.candidates)
      out += fmt::format("  {:<14} {:<40} {}{}\n", c.value, result::rates_text(c.rates),
                         c.turn_s ? fmt::format("{:.3f} s/turn", *c.turn_s) : std::string("-"),
                         c.value == s.chosen ? "  <- kept" : "");
  }
  out += "\n";
  if (r.best == r.start) {
    out += "The configuration given is already the fastest found: " + (r.start.empty() ? std::string("(defaults)") : shell_join(r.start)) + "\n";
    return out;
  }
  out += fmt::format("best: {}\n", shell_join(r.best));
  for (size_t i = 0; i < r.start_rounds.size() && i < r.best_rounds.size(); ++i)
    out += fmt::format("  round {}: given {} · best {}\n", i + 1, result::rates_text(r.start_rounds[i]), result::rates_text(r.best_rounds[i]));
  out += r.gain ? fmt::format("measured gain over the configuration given: x{:.2f} per turn (median of {} alternating rounds)\n", *r.gain,
                              r.start_rounds.size())
                : "the gain could not be confirmed (a confirmation run failed)\n";
  out += "reproduce: " + r.edgeprobe_command + "\n";
  out += "llama.cpp: " + r.llama_bench_command + " (llama-cli takes the same flags)\n";
  return out;
}

}  // namespace edgeprobe::report
