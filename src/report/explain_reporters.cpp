#include "report/explain_reporters.h"

#include <fmt/format.h>

#include <cmath>
#include <ostream>
#include <vector>

#include "core/text.h"
#include "report/formats.h"

namespace edgeprobe::report {
namespace {

using nlohmann::json;

// Cells come from result files (names, titles, fixes): one escaped line each, and no
// column breaks.
std::string md_cell(const json& v, size_t bytes = 240) {
  if (v.is_null()) return "";
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  s = one_line(s, bytes);
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

// Three significant digits, without exponents for the rates a device reaches.
std::string rate(double tokens_per_s) {
  if (tokens_per_s >= 100) return fmt::format("{:.0f}", tokens_per_s);
  return fmt::format("{:.3g}", tokens_per_s);
}

// A phase's speed as a person reads it: tokens/s, or for load the first load's time (the
// explanation holds loads per second so that B/A reads alike in every phase).
std::string speed(const std::string& phase, double value) {
  if (phase == "load") return value > 0 ? fmt::format("{:.4g} ms", 1000 / value) : "? ms";
  return rate(value) + " tok/s";
}

// "2.31x slower", "1.20x faster", "the same speed".
std::string gap_words(double ratio) {
  if (!(ratio > 0)) return "not comparable";
  if (std::abs(ratio - 1) < 0.005) return "as fast as A";
  return ratio < 1 ? fmt::format("{:.3g}x slower than A", 1 / ratio) : fmt::format("{:.3g}x faster than A", ratio);
}

std::string side_line(const char* name, const json& s) {
  std::string variant = md_cell(s.value("cpu_variant", json()), 60);
  if (s.value("best_variant", json()).is_string() && s["best_variant"] != s.value("cpu_variant", json()))
    variant += fmt::format(" (this CPU can run {})", md_cell(s["best_variant"], 60));
  return fmt::format("{}: {} · {} result · {} · ggml CPU variant {}{}\n", name, md_cell(s.value("label", json()), 200),
                     md_cell(s.value("kind", json()), 20), md_cell(s.value("device", json()), 160),
                     variant.empty() ? "?" : variant,
                     s.value("emulated", json()).is_string() ? " · emulated (" + md_cell(s["emulated"], 120) + ")" : "");
}

void write_markdown(const json& e, std::ostream& out) {
  out << "edgeprobe explain: the gap between B and A, factor by factor\n\n";
  out << side_line("A", e.value("a", json::object())) << side_line("B", e.value("b", json::object()));
  const json& diffs = e.value("differences", json::array());
  if (!diffs.empty()) {
    out << "\nsettings that differ (A → B):\n";
    for (const auto& d : diffs)
      out << fmt::format("- {}: {} → {}\n", md_cell(d.value("label", json()), 80), md_cell(d.value("a", json()), 120),
                         md_cell(d.value("b", json()), 120));
  }
  for (const auto& p : e.value("phases", json::array())) {
    const std::string phase = p.value("phase", "");
    out << fmt::format("\n## {}: B is {} (B/A = {:.3f})\n\n", phase, gap_words(p.value("ratio", 0.0)), p.value("ratio", 0.0));
    if (phase == "load")
      out << fmt::format("first load: A {} · B {}\n\n", speed(phase, p.value("a_tokens_per_s", 0.0)),
                         speed(phase, p.value("b_tokens_per_s", 0.0)));
    else
      out << fmt::format("A {} at {} thread(s): {} · B {} at {} thread(s): {} (medians)\n\n",
                         md_cell(p.value("test_a", json()), 40), p.value("threads_a", 0), speed(phase, p.value("a_tokens_per_s", 0.0)),
                         md_cell(p.value("test_b", json()), 40), p.value("threads_b", 0), speed(phase, p.value("b_tokens_per_s", 0.0)));
    out << "| factor | on | x B/A | basis | evidence | fix |\n|---|---|---:|---|---|---|\n";
    for (const auto& f : p.value("factors", json::array()))
      out << fmt::format("| {} | {} | {:.3f} | {} | {} | {} |\n", md_cell(f.value("id", json()), 60),
                         md_cell(f.value("side", json()), 4), f.value("factor", 0.0), md_cell(f.value("basis", json()), 30),
                         md_cell(f.value("detail", json()), 400), md_cell(f.value("fix", json()), 300));
    out << fmt::format("| **product** | | **{:.3f}** | = the measured B/A ({:.3f}) | | |\n\n", p.value("product", 0.0),
                       p.value("ratio", 0.0));
    if (p.value("verdict", json()).is_string()) {
      out << "**" << md_cell(p["verdict"], 600) << "**\n\n";
      for (const auto& c : p.value("closing_commands", json::array())) out << "- to close it: `" << md_cell(c, 400) << "`\n";
      out << "\n";
    }
    if (p.value("chain_withheld", false)) {
      out << fmt::format("What B reaches in {} after each fix: not shown, the factors above do not add up\n", phase);
    } else {
      out << fmt::format("What B reaches in {} after each fix, largest first: {}\n\n", phase, fix_path_line(p));
      out << fmt::format("| step | {} | fix |\n|---|---:|---|\n", phase == "load" ? "first load" : phase);
      for (const auto& s : p.value("steps", json::array()))
        out << fmt::format("| {} | {} | {} |\n", md_cell(s.value("label", json()), 120), speed(phase, s.value("tokens_per_s", 0.0)),
                           md_cell(s.value("fix", json()), 300));
    }
    const json& unmeasured = p.value("unmeasured", json::array());
    if (!unmeasured.empty()) {
      out << "\nnamed without a factor:\n";
      for (const auto& u : unmeasured) out << "- " << md_cell(u, 400) << "\n";
    }
    for (const auto& n : p.value("notes", json::array())) out << "\nnote: " << md_cell(n, 400) << "\n";
  }
  const json& notes = e.value("notes", json::array());
  if (!notes.empty()) out << "\n";
  for (const auto& n : notes) out << "note: " << md_cell(n, 400) << "\n";
  out << "\nEach factor is its share of B/A (below 1: it makes B slower). Hardware is the ratio of the devices' binding "
         "ceilings for this model; a cause is measured where doctor ran the fix in interleaved pairs, else estimated "
         "from telemetry; where two causes overlap (doctor measured one with the other fixed), each is its cost alone, "
         "interaction is what they cost together beyond that, and each step takes its fix's gain in the table's order; "
         "unexplained is what is left, never forced to 1.\n";
}

// One row per factor, for csv and jsonl alike.
std::vector<json> factor_rows(const json& e) {
  std::vector<json> rows;
  for (const auto& p : e.value("phases", json::array()))
    for (const auto& f : p.value("factors", json::array()))
      rows.push_back({{"phase", p.value("phase", "")}, {"factor", f.value("id", "")},
                      {"side", f.value("side", json()).is_string() ? f["side"].get<std::string>() : ""},
                      {"value", f.value("factor", 0.0)}, {"basis", f.value("basis", "")}, {"detail", f.value("detail", "")},
                      {"fix", f.value("fix", json()).is_string() ? f["fix"].get<std::string>() : ""}});
  return rows;
}

void write_csv(const json& e, std::ostream& out) {
  out << "phase,factor,side,value,basis,detail,fix\n";
  for (const auto& r : factor_rows(e)) {
    auto cell = [&](const char* key) { return csv_field(r[key].get<std::string>()); };
    out << fmt::format("{},{},{},{:.6g},{},{},{}\n", cell("phase"), cell("factor"), cell("side"), r["value"].get<double>(),
                       cell("basis"), cell("detail"), cell("fix"));
  }
}

}  // namespace

std::string fix_path_line(const json& phase) {
  const std::string name = phase.value("phase", "");
  // Load in ms, the rest in tok/s with the unit once at the end.
  auto value = [&](double v) { return name == "load" ? speed(name, v) : rate(v); };
  std::string line;
  if (phase.value("chain_withheld", false)) return "not shown: the account does not close";
  const json& steps = phase.value("steps", json::array());
  for (size_t i = 0; i + 1 < steps.size(); ++i) line += (line.empty() ? "" : " → ") + value(steps[i].value("tokens_per_s", 0.0));
  return fmt::format("{} (hardware line {}){}{}", line, value(phase.value("hardware_line_tokens_per_s", 0.0)),
                     name == "load" ? "" : " tok/s", phase.value("closes", true) ? "" : "; the account does not close");
}

void write_explain_lab_report(const json& lab, const std::string& format, std::ostream& out) {
  check_format(OutputKind::kExplain, format);
  if (format == "json") {
    out << lab.dump(2) << "\n";
    return;
  }
  // One row per device, job and phase: the ratio, its hardware share, the largest cause and
  // what is left, and the path of fixes; as data (jsonl), then as text for csv and md.
  std::vector<json> rows;
  for (const auto& r : lab.value("rows", json::array())) {
    const json device = r.value("device", json()), job = r.value("job", json());
    if (r.contains("error")) {
      rows.push_back({{"device", device}, {"job", job}, {"error", r["error"]}});
      continue;
    }
    for (const auto& p : r["explanation"].value("phases", json::array())) {
      json row{{"device", device},   {"job", job},          {"phase", p.value("phase", json())}, {"ratio", p.value("ratio", json())},
               {"hardware", nullptr}, {"largest_cause", nullptr}, {"unexplained", nullptr},   {"fix_path", fix_path_line(p)}};
      double largest = 0;
      for (const auto& f : p.value("factors", json::array())) {
        const std::string id = f.value("id", "");
        const double v = f.value("factor", 1.0);
        if (id == "hardware" || id == "unexplained") row[id] = v;
        else if (std::abs(std::log(v)) > largest) {
          largest = std::abs(std::log(v));
          row["largest_cause"] = {{"id", id}, {"side", f.value("side", json())}, {"factor", v}};
        }
      }
      rows.push_back(std::move(row));
    }
  }
  if (format == "jsonl") {
    for (const auto& r : rows) out << r.dump() << "\n";
    return;
  }
  auto number = [](const json& v) { return v.is_number() ? fmt::format("{:.3f}", v.get<double>()) : std::string(); };
  auto cause = [](const json& r) {
    if (r.contains("error")) return "not explained: " + md_cell(r["error"], 300);
    const json& c = r["largest_cause"];
    return c.is_object() ? fmt::format("{} on {} x{:.3f}", md_cell(c["id"], 60), md_cell(c["side"], 4), c["factor"].get<double>())
                         : std::string();
  };
  auto text = [](const json& r, const char* key, size_t bytes) { return md_cell(r.value(key, json()), bytes); };
  if (format == "csv") {
    out << "device,job,phase,ratio,hardware,largest_cause,unexplained,fix_path\n";
    for (const auto& r : rows)
      out << fmt::format("{},{},{},{},{},{},{},{}\n", csv_field(text(r, "device", 60)), csv_field(text(r, "job", 10)),
                         csv_field(text(r, "phase", 10)), number(r.value("ratio", json())), number(r.value("hardware", json())),
                         csv_field(cause(r)), number(r.value("unexplained", json())), csv_field(text(r, "fix_path", 300)));
    return;
  }
  out << fmt::format("edgeprobe explain: lab run {}, every device against {}\n\n", md_cell(lab.value("lab_run", json()), 20),
                     md_cell(lab.value("baseline", json()), 60));
  out << "| device | job | phase | B/A | hardware | largest cause | unexplained | after each fix (hardware line) |\n"
         "|---|---:|---|---:|---:|---|---:|---|\n";
  for (const auto& r : rows)
    out << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", text(r, "device", 60), text(r, "job", 10),
                       text(r, "phase", 10), number(r.value("ratio", json())), number(r.value("hardware", json())), cause(r),
                       number(r.value("unexplained", json())), text(r, "fix_path", 300));
  out << "\n'edgeprobe explain BASELINE_RUN RUN' shows one device's factors in full.\n";
}

void write_explain_report(const json& e, const std::string& format, std::ostream& out) {
  check_format(OutputKind::kExplain, format);
  if (format == "json") out << e.dump(2) << "\n";
  else if (format == "csv") write_csv(e, out);
  else if (format == "jsonl")
    for (const auto& r : factor_rows(e)) out << r.dump() << "\n";
  else write_markdown(e, out);
}

}  // namespace edgeprobe::report
