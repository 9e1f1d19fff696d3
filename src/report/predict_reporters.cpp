#include "report/predict_reporters.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>

#include "core/text.h"
#include "report/json_cells.h"
#include "report/formats.h"

namespace edgeprobe::report {
namespace {

using nlohmann::json;

// "12.3 (11.0-12.9)"; "unavailable" for null.
std::string estimate_cell(const json& e, const char* unit = "") {
  if (!e.is_object()) return "unavailable";
  return fmt::format("{:.3g}{} ({:.3g}-{:.3g})", e.value("value", 0.0), unit, e.value("low", 0.0), e.value("high", 0.0));
}

std::string mib_or_unknown(const json& bytes) {
  return bytes.is_number() ? fmt::format("{:.0f}", bytes.get<double>() / (1024.0 * 1024.0)) : "?";
}

std::string memory_cell(const json& m) {
  const bool repacked = m.value("repacked_bytes", 0.0) > 0;
  std::string cell = fmt::format("{}{} + {} + {} = {} MiB", mib_or_unknown(m["weights_bytes"]),
                                 repacked ? " (+" + mib_or_unknown(m["repacked_bytes"]) + " repacked)" : "", mib_or_unknown(m["kv_bytes"]),
                                 mib_or_unknown(m["compute_bytes"]), mib_or_unknown(m["total_bytes"]));
  if (m["device_bytes"].is_number())
    cell += fmt::format(" of {}{}", mib_or_unknown(m["device_bytes"]), m.value("fits", true) ? "" : ": will not fit");
  return cell;
}

std::string value_cell(const json& e) {
  return e.is_object() ? fmt::format("{:.6g}", e.value("value", 0.0)) : "";
}

// "41 %", or what stands for a break-even that does not exist.
std::string alpha_cell(const json& a) {
  return a.is_number() ? fmt::format("{:.0f} %", a.get<double>() * 100) : "never";
}

// predict --draft: a line per configuration and draft length (docs/speculative.md).
void write_speculation(const json& doc, std::ostream& out) {
  bool header = false;
  for (const auto& r : doc["rows"]) {
    for (const auto& s : r.value("speculative", json::array())) {
      if (!header) {
        out << "\nSpeculative decoding with draft " << one_line(doc.value("draft", ""))
            << " (alpha: the chance each proposal is accepted after the ones before it):\n\n"
               "| model | t | draft-max | target ms/token | draft ms/token | verify ms | pays above alpha | "
               "alpha | tokens / verify step | speed-up |\n|---|---|---|---|---|---|---|---|---|---|\n";
        header = true;
      }
      const json acc = s.value("acceptance", json());
      out << fmt::format(
          "| {} | {} | {} | {:.3g} | {:.3g} | {:.3g} | {} | {} | {} | {} |\n", one_line(r.value("model", "")),
          scalar(r["config"]["threads"]), scalar(s["draft_max"]), s.value("target_token_ms", 0.0),
          s.value("draft_token_ms", 0.0), s.value("verify_ms", 0.0), alpha_cell(s["break_even_acceptance"]),
          acc.is_object()
              ? fmt::format("{} ({})", alpha_cell(acc["alpha"]), one_line(acc.value("basis", ""), 120))
              : "-",
          acc.is_object() ? fmt::format("{:.2f}", s.value("expected_tokens", 0.0)) : "-",
          acc.is_object() ? fmt::format("x{:.2f}", s.value("speed_up", 0.0)) : "-");
    }
  }
}

}  // namespace

// jsonl: one self-contained object a row, with the document's fields beside it.
static void write_rows_jsonl(const json& doc, std::ostream& out) {
  for (const auto& r : doc["rows"]) {
    json line = r;
    for (const auto& [key, value] : doc.items())
      if (key != "rows") line[key] = value;
    out << line.dump() << "\n";
  }
}

void write_predict_report(const json& doc, const std::string& format, std::ostream& out) {
  check_format(OutputKind::kPredict, format);
  if (format == "json") {
    out << doc.dump(2) << "\n";
    return;
  }
  if (format == "jsonl") return write_rows_jsonl(doc, out);
  const json& rows = doc["rows"];
  if (format == "csv") {
    out << "model,quant,threads,n_prompt,n_gen,n_depth,n_ubatch,type_k,prefill_tokens_per_s,prefill_low,prefill_high,"
           "decode_tokens_per_s,decode_low,decode_high,ttft_ms,generation_ms,weights_bytes,repacked_bytes,kv_bytes,compute_bytes,"
           "device_bytes,fits,load_cold_ms,load_warm_ms,decode_bound,prefill_bound\n";
    for (const auto& r : rows) {
      const json& c = r["config"];
      const json& m = r["memory"];
      auto lo = [](const json& e) { return e.is_object() ? fmt::format("{:.6g}", e.value("low", 0.0)) : std::string(); };
      auto hi = [](const json& e) { return e.is_object() ? fmt::format("{:.6g}", e.value("high", 0.0)) : std::string(); };
      out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n",
                         csv_field(r.value("model", "")), csv_field(r.value("quant", "")), scalar(c["threads"]),
                         scalar(c["n_prompt"]), scalar(c["n_gen"]), scalar(c["n_depth"]), scalar(c["n_ubatch"]),
                         csv_field(c.value("type_k", "")), value_cell(r["prefill_tokens_per_s"]),
                         lo(r["prefill_tokens_per_s"]), hi(r["prefill_tokens_per_s"]), value_cell(r["decode_tokens_per_s"]),
                         lo(r["decode_tokens_per_s"]), hi(r["decode_tokens_per_s"]), value_cell(r["ttft_ms"]),
                         value_cell(r["generation_ms"]), scalar(m["weights_bytes"]), scalar(m["repacked_bytes"]), scalar(m["kv_bytes"]),
                         scalar(m["compute_bytes"]), scalar(m["device_bytes"]), scalar(m["fits"]),
                         value_cell(r["load_cold_ms"]), value_cell(r["load_warm_ms"]), scalar(r["decode_bound"]),
                         scalar(r["prefill_bound"]));
    }
    return;
  }
  out << "Predicted on " << one_line(doc.value("device", "")) << "\n";
  out << "  figures: " << one_line(doc.value("device_basis", "")) << "\n";
  if (doc.value("emulated", false)) out << "  EMULATED: the figures describe the emulator, not the device\n";
  out << "\n| model | t | p | n | d | ub | KV | pp t/s | tg t/s | TTFT ms | gen ms | memory (weights + KV + compute) | "
         "load cold/warm ms | bound (tg / pp) |\n";
  out << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::vector<std::string> notes;
  for (const auto& r : rows) {
    const json& c = r["config"];
    const std::string load = fmt::format("{} / {}", value_cell(r["load_cold_ms"]).empty() ? "?" : fmt::format("{:.0f}", r["load_cold_ms"]["value"].get<double>()),
                                         value_cell(r["load_warm_ms"]).empty() ? "?" : fmt::format("{:.0f}", r["load_warm_ms"]["value"].get<double>()));
    out << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} |\n",
                       one_line(r.value("model", "")),
                       c["threads"] == 0 ? std::string("gpu") : scalar(c["threads"]),  // a GPU's figures have no thread count
                       scalar(c["n_prompt"]), scalar(c["n_gen"]),
                       scalar(c["n_depth"]), scalar(c["n_ubatch"]), scalar(c["type_k"]),
                       estimate_cell(r["prefill_tokens_per_s"]), estimate_cell(r["decode_tokens_per_s"]),
                       estimate_cell(r["ttft_ms"]), estimate_cell(r["generation_ms"]), memory_cell(r["memory"]), load,
                       r["decode_bound"].is_string() ? r["decode_bound"].get<std::string>() : "-",
                       r["prefill_bound"].is_string() ? r["prefill_bound"].get<std::string>() : "-");
    for (const auto& n : r.value("notes", json::array()))
      if (n.is_string() && std::find(notes.begin(), notes.end(), n.get<std::string>()) == notes.end())
        notes.push_back(n.get<std::string>());
  }
  write_speculation(doc, out);
  if (!rows.empty()) {
    out << "\nIntervals: decode from " << one_line(rows[0].value("decode_interval_basis", "")) << "; prefill from "
        << one_line(rows[0].value("prefill_interval_basis", "")) << ".\n";
    out << "Load: " << one_line(rows[0].value("load_basis", "")) << ".\n";
  }
  for (const auto& n : doc.value("notes", json::array()))
    if (n.is_string()) notes.push_back(n.get<std::string>());
  for (const auto& n : notes) out << "note: " << one_line(n, 600) << "\n";
}

void write_predict_check(const json& doc, const std::string& format, std::ostream& out) {
  check_format(OutputKind::kPredict, format);
  if (format == "json") {
    out << doc.dump(2) << "\n";
    return;
  }
  if (format == "jsonl") return write_rows_jsonl(doc, out);
  if (format == "csv") out << "test,phase,predicted_tokens_per_s,measured_best_tokens_per_s,error,note\n";
  else
    out << "| test | phase | predicted t/s | measured (best rep) t/s | error |\n|---|---|---|---|---|\n";
  for (const auto& r : doc["rows"]) {
    const bool has = r.contains("predicted_tokens_per_s");
    std::string error = has && r.contains("best_over_predicted")
                            ? fmt::format("{:+.1f}%", (r["best_over_predicted"].get<double>() - 1) * 100)
                            : "";
    // Measured while the machine did other work: the error is the machine's as much as the model's.
    if (!error.empty() && r.contains("contaminated"))
      error += " (contaminated: " + one_line(r.value("contaminated", ""), 200) + ")";
    if (format == "csv")
      out << fmt::format("{},{},{},{},{},{}\n", csv_field(r.value("test", "")), r.value("phase", ""),
                         has ? scalar(r["predicted_tokens_per_s"]) : "", has ? scalar(r["measured_best_tokens_per_s"]) : "",
                         error, csv_field(r.value("note", "")));
    else
      out << fmt::format("| {} | {} | {} | {} | {} |\n", one_line(r.value("test", "")), r.value("phase", ""),
                         has ? fmt::format("{:.4g}", r["predicted_tokens_per_s"].get<double>()) : "-",
                         has && r.contains("measured_best_tokens_per_s")
                             ? fmt::format("{:.4g}", r["measured_best_tokens_per_s"].get<double>())
                             : "-",
                         error.empty() ? one_line(r.value("note", "")) : error);
  }
}

}  // namespace edgeprobe::report
