#include "report/session_reporters.h"

#include <fmt/format.h>

#include <ostream>

#include "core/error.h"
#include "report/json_cells.h"
#include "core/text.h"
#include "report/formats.h"

namespace edgeprobe::report {
namespace {

using nlohmann::json;

std::string fmt_opt(const json& v, const char* format) {
  return v.is_number() ? fmt::format(fmt::runtime(format), v.get<double>()) : "unavailable";
}

// A turn's --prefill-remote record, as the reports name it.
std::string turn_prefill(const result::Turn& turn) {
  return prefill_path({turn.prefill_remote ? &*turn.prefill_remote : nullptr});
}

// `j` is the JSON form of `r`: the analysis and the provenance are read from it.
void print_markdown(std::ostream& out, const result::SessionReport& r, const json& report) {
  // --prefill-remote: which turns' prefills ran on the server and which fell back here.
  const bool remote_prefill = at(report, "/provenance/prefill_remote").is_string();
  out << "| config | model | ctx | max tokens | threads | turns | ttft ms (median) | decode t/s (median) | CV | drift "
         "| change points | missed frames | QES |"
      << (remote_prefill ? " prefill |\n" : "\n");
  out << "|---|---|---|---|---|---|---|---|---|---|---|---|---|" << (remote_prefill ? "---|\n" : "\n");
  for (const auto& c : r.configs) {
    const json& a = c.analysis;
    const json& st = a["stability"];
    const json& q = a["qes"];
    std::string line = fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |", c.ordinal,
                       c.config.model_path, c.config.n_ctx, c.config.max_tokens,
                       threads_cell(report["provenance"], c.config.n_threads),
                       a["turns_measured"].get<int>(), fmt_opt(a["ttft_ms"]["median"], "{:.1f}"),
                       fmt_opt(a["decode_tokens_per_s"]["median"], "{:.2f}"), fmt_opt(st.value("cv", json()), "{:.3f}"),
                       st.contains("drift") && st["drift"].is_object() ? fmt_opt(st["drift"].value("ratio", json()), "{:.3f}") : "unavailable",
                       st["change_points"].size(), fmt_opt(a["missed_frame_share"], "{:.3f}"),
                       fmt_opt(q.value("total", json()), "{:.1f}"));
    if (remote_prefill) {
      std::vector<const json*> records;
      for (const auto& t : c.turns)
        if (t.prefill_remote) records.push_back(&*t.prefill_remote);
      line += " " + prefill_path(records) + " |";
    }
    out << line << "\n";
  }
  out << "\nQES components (0-100; a component without data is left out of the total and named):\n";
  for (const auto& c : r.configs) {
    const json& q = c.analysis["qes"];
    std::string parts;
    for (const auto& comp : q["components"])
      parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", comp["name"].get<std::string>(),
                           fmt_opt(comp.value("score", json()), "{:.1f}"));
    out << fmt::format("- config {}: {}; rests on: {}\n", c.ordinal, parts, q.value("rests_on", json::array()).dump());
  }
}



// One row per turn; pointers into {"report", "config", "turn"}.
struct Column {
  const char* header;
  const char* pointer;
};
const Column kTurnColumns[] = {
    {"schema_version", "/report/schema_version"},
    {"run_id", "/report/run_id"},
    {"engine", "/report/provenance/engine/name"},
    {"ggml_cpu_variant", "/report/provenance/engine/cpu_variant"},
    {"device_id", "/report/provenance/device/id"},
    {"config", "/config/ordinal"},
    {"model_path", "/config/config/model_path"},
    {"n_ctx", "/config/config/n_ctx"},
    {"max_tokens", "/config/config/max_tokens"},
    {"n_batch", "/config/config/n_batch"},
    {"n_threads", "/config/config/n_threads"},
    {"round", "/turn/round"},
    {"conversation_id", "/turn/conversation_id"},
    {"turn_index", "/turn/turn_index"},
    {"status", "/turn/status"},
    {"error", "/turn/error/message"},
    {"stop_reason", "/turn/stop_reason"},
    {"prompt_tokens", "/turn/prompt_tokens"},
    {"context_tokens", "/turn/context_tokens"},
    {"generated_tokens", "/turn/generated_tokens"},
    {"ttft_ms", "/turn/ttft_ms"},
    {"prefill_tokens_per_s", "/turn/prefill_tokens_per_s"},
    {"decode_tokens_per_s", "/turn/decode_tokens_per_s"},
    {"e2e_ms", "/turn/e2e_ms"},
    {"missed_frame_share_prefill", "/turn/missed_frame_share_prefill"},
    {"missed_frame_share_decode", "/turn/missed_frame_share_decode"},
    {"prefill", "/turn/prefill"},  // --prefill-remote: remote or local (fallback)
};

// The turn columns are the JSON values of each turn (a key a stored turn lacked is an
// empty cell); status and prefill are read from the typed turn.
void write_csv(const result::SessionReport& r, const json& report, std::ostream& out) {
  std::string header;
  for (const auto& c : kTurnColumns) header += (header.empty() ? "" : ",") + std::string(c.header);
  out << header << "\n";
  for (size_t ci = 0; ci < r.configs.size(); ++ci) {
    const json& config = report["configs"][ci];
    for (size_t ti = 0; ti < r.configs[ci].turns.size(); ++ti) {
      const result::Turn& turn = r.configs[ci].turns[ti];
      json t = config["turns"][ti];
      t["status"] = turn.error ? "error" : "ok";
      json cfg = config;
      // Behind an endpoint the threads column is the server's (empty when it did not say).
      if (at(report, "/provenance/engine/kind") == "endpoint")
        cfg["config"]["n_threads"] = at(report, "/provenance/engine/details/server_side/threads");
      t["prefill"] = turn_prefill(turn);
      const json doc = {{"report", report}, {"config", cfg}, {"turn", t}};
      std::string line;
      bool first = true;
      for (const auto& c : kTurnColumns) {
        line += (first ? "" : ",") + csv_field(scalar(at(doc, c.pointer)));
        first = false;
      }
      out << line << "\n";
    }
  }
}

void write_jsonl(const json& report, std::ostream& out) {
  for (const auto& config : report["configs"]) {
    for (const auto& turn : config["turns"]) {
      json line = turn;
      line["schema_version"] = report["schema_version"];
      line["kind"] = "session_turn";
      line["run_id"] = report["run_id"];
      line["config_ordinal"] = config["ordinal"];
      line["config"] = config["config"];
      line["provenance"] = report["provenance"];
      out << line.dump() << "\n";
    }
  }
}

}  // namespace

void write_session_report(const result::SessionReport& report, const std::string& format, std::ostream& out) {
  const json j = result::to_json(report);
  if (format == "md") {
    print_markdown(out, report, j);
    const auto errors = result::session_errors(report, nullptr);
    if (!errors.empty()) out << "\nFailed turns (each ended its conversation; the sweep went on):\n";
    for (const auto& e : errors) out << "- " << e << "\n";
  }
  else if (format == "json") out << j.dump(2) << "\n";
  else if (format == "csv") write_csv(report, j, out);
  else if (format == "jsonl") write_jsonl(j, out);
  else check_format(OutputKind::kResults, format);
  out.flush();
}

}  // namespace edgeprobe::report
