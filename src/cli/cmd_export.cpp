#include "cli/cmd_export.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <ostream>
#include <vector>

#include "cli/cmd_runs.h"
#include "core/error.h"
#include "store/store.h"

namespace edgeprobe::cli {
namespace {

using Row = std::map<std::string, std::string>;

std::string scalar_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

void flatten(const nlohmann::json& value, const std::string& prefix, Row& row, std::vector<std::string>& columns) {
  auto put = [&](const std::string& key, std::string text) {
    if (!row.contains(key) && std::find(columns.begin(), columns.end(), key) == columns.end()) columns.push_back(key);
    row[key] = std::move(text);
  };
  if (value.is_object()) {
    for (const auto& [k, v] : value.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, row, columns);
  } else if (value.is_array()) {
    const bool scalars = std::all_of(value.begin(), value.end(), [](const auto& e) { return e.is_primitive(); });
    if (scalars) {
      std::string joined;
      for (const auto& e : value) joined += (joined.empty() ? "" : ";") + scalar_text(e);
      put(prefix, joined);
    } else {
      put(prefix, value.dump());  // nested structures stay JSON: nothing is dropped
    }
  } else {
    put(prefix, scalar_text(value));
  }
}

// RFC 4180: quote fields holding a comma, quote or line break; double inner quotes.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void add_telemetry(const nlohmann::json& telemetry, Row& row, std::vector<std::string>& columns) {
  if (!telemetry.is_array()) return;
  for (const nlohmann::json& t : telemetry) flatten(t.value("summary", nlohmann::json()), "telemetry." + t.value("phase", std::string("?")), row, columns);
}

}  // namespace

std::string export_csv(const nlohmann::json& run) {
  std::vector<std::string> columns{"run_id", "unit", "configuration_ordinal", "repetition", "round",
                                   "conversation_id", "turn_index", "recorded_at"};
  std::vector<Row> rows;
  const nlohmann::json none;
  auto field = [&](const nlohmann::json& object, const char* key) -> const nlohmann::json& {
    return object.is_object() && object.contains(key) ? object[key] : none;
  };
  const std::string run_id = scalar_text(field(field(run, "run"), "id"));
  std::map<int64_t, nlohmann::json> configs;
  for (const nlohmann::json& c : run.value("configurations", nlohmann::json::array())) {
    configs[c.value("ordinal", int64_t{0})] = c.value("config", nlohmann::json());
    for (const nlohmann::json& rep : c.value("repetitions", nlohmann::json::array())) {
      Row row{{"run_id", run_id},
              {"unit", "repetition"},
              {"configuration_ordinal", scalar_text(field(c, "ordinal"))},
              {"repetition", scalar_text(field(rep, "ordinal"))},
              {"recorded_at", scalar_text(rep.value("recorded_at", nlohmann::json()))}};
      flatten(c.value("config", nlohmann::json()), "config", row, columns);
      flatten(rep.value("result", nlohmann::json()), "result", row, columns);
      add_telemetry(rep.value("telemetry", nlohmann::json()), row, columns);
      rows.push_back(std::move(row));
    }
  }
  for (const nlohmann::json& t : run.value("turns", nlohmann::json::array())) {
    const int64_t ordinal = t.value("configuration_ordinal", int64_t{0});
    Row row{{"run_id", run_id},
            {"unit", "turn"},
            {"configuration_ordinal", scalar_text(field(t, "configuration_ordinal"))},
            {"round", scalar_text(field(t, "round"))},
            {"conversation_id", scalar_text(field(t, "conversation_id"))},
            {"turn_index", scalar_text(field(t, "turn_index"))},
            {"recorded_at", scalar_text(t.value("recorded_at", nlohmann::json()))}};
    if (configs.contains(ordinal)) flatten(configs[ordinal], "config", row, columns);
    flatten(t.value("result", nlohmann::json()), "result", row, columns);
    add_telemetry(t.value("telemetry", nlohmann::json()), row, columns);
    rows.push_back(std::move(row));
  }
  std::string out;
  for (size_t i = 0; i < columns.size(); ++i) out += (i ? "," : "") + csv_field(columns[i]);
  out += "\n";
  for (const Row& row : rows) {
    for (size_t i = 0; i < columns.size(); ++i) {
      const auto it = row.find(columns[i]);
      out += (i ? "," : "") + csv_field(it == row.end() ? "" : it->second);
    }
    out += "\n";
  }
  return out;
}

void write_export(const nlohmann::json& run, const std::string& format, std::ostream& out) {
  if (format == "json") {
    out << run.dump(2) << "\n";
  } else if (format == "csv") {
    out << export_csv(run);
  } else {
    throw_bad_input("export: unknown format '{}' (json or csv)", format);
  }
}

void register_export(CLI::App& app) {
  struct Args {
    int64_t run = 0;
    std::string format = "json";
    std::string db;
    std::string output_file;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("export", "Dump one stored run as JSON or CSV");
  cmd->add_option("run", a->run, "Run id (see 'edgeprobe runs')")->required();
  cmd->add_option("-o,--output-format", a->format, "json or csv")->capture_default_str()->check(
      CLI::IsMember({"json", "csv"}));
  cmd->add_option("--db", a->db, "Results database (default: $XDG_DATA_HOME/edgeprobe/results.db)");
  cmd->add_option("--output", a->output_file, "Write to FILE instead of stdout");
  cmd->callback([a] {
    const auto s = store::open_store(resolve_db_path(a->db), store::Mode::kMustExist);
    const nlohmann::json run = s->load_run(a->run);
    if (a->output_file.empty()) {
      write_export(run, a->format, std::cout);
      return;
    }
    std::ofstream f(a->output_file);
    if (!f) throw_environment("cannot write {}", a->output_file);
    write_export(run, a->format, f);
    if (!f.flush()) throw_environment("cannot write {}", a->output_file);
  });
}

}  // namespace edgeprobe::cli
