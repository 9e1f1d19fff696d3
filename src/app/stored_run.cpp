#include "app/stored_run.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <filesystem>
#include <map>

#include "analysis/session_analysis.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/text.h"
#include "result/document.h"
#include "result/migrate.h"

namespace edgeprobe::app {

using nlohmann::json;

namespace {

// The last summary of each phase (a resumed run records some twice; the last is whole).
std::map<std::string, json> summaries_by_phase(const json& doc) {
  std::map<std::string, json> out;
  for (const auto& t : doc.value("telemetry", json::array())) out[t.value("phase", "")] = t.value("summary", json());
  return out;
}

result::BenchReport bench_from_store(const json& doc, const result::Provenance& provenance) {
  result::BenchReport report;
  report.provenance = provenance;
  for (const auto& c : doc["configurations"]) {
    const json& config = c["config"];
    result::TestResult r;
    r.config = result::test_case_from_json(config, config.value("model_path", ""));
    for (size_t m = 0; m < provenance.models.size(); ++m)
      if (provenance.models[m].path == r.config.model_path) r.model_index = static_cast<int>(m);
    for (const auto& rep : c["repetitions"]) r.repetitions.push_back(result::repetition_from_json(rep["result"]));
    if (const json& t = c.contains("test") ? c["test"] : json(); t.is_object()) {
      r.load_ms = t.value("load_ms", std::vector<double>{});
      r.page_cache_resident_share = t.value("page_cache_resident_share", -1.0);
      r.telemetry = t.value("telemetry", json(nullptr));
      r.roofline = result::roofline_optional_from_json(t.value("roofline", json(nullptr)));
      r.serving = result::serving_from_json(t.value("serving", json(nullptr)));
      r.placement = result::placement_from_json(t.value("placement", json(nullptr)));
      r.verify = result::greedy_check_from_json(t.value("verify", json(nullptr)));
      r.speculative = result::speculative_from_json(t.value("speculative", json(nullptr)));
      if (t.contains("error") && t["error"].is_object())
        r.error = result::ErrorInfo{t["error"].value("kind", "environment"), t["error"].value("message", "")};
    }
    // A configuration stored as failed before test summaries existed still shows its error.
    if (!r.error && c.value("status", "") == "failed")
      r.error = result::ErrorInfo{"environment", c.value("error", json()).is_string() ? c["error"].get<std::string>() : "failed"};
    report.results.push_back(std::move(r));
  }
  return report;
}

result::SessionReport session_from_store(const json& doc, const result::Provenance& provenance, int64_t run) {
  result::SessionReport report;
  report.run_id = run;
  report.provenance = provenance;
  for (const auto& c : doc["configurations"]) {
    result::SessionConfigResult cr;
    cr.ordinal = c["ordinal"].get<int>();
    cr.config = result::session_config_from_json(c["config"]);
    report.configs.push_back(std::move(cr));
  }
  for (const auto& t : doc["turns"]) {
    const auto ordinal = t["configuration_ordinal"].get<size_t>();
    if (ordinal < report.configs.size()) report.configs[ordinal].turns.push_back(result::turn_from_json(t["result"]));
  }
  // The analysis is a pure function of the turns: computing it again gives what the run
  // printed, and also covers a run stopped before it stored its analysis.
  for (auto& c : report.configs) c.analysis = analysis::analyse_session_turns(c.turns);
  return report;
}

bool is_run_id(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

}  // namespace

StoredRun load_stored_run(const store::Store& store, int64_t run) {
  StoredRun out;
  out.record = store.get_run(run);
  const json doc = store.load_run(run);
  const auto provenance = result::provenance_from_json(result::upgrade_provenance(out.record.provenance));
  try {
    if (out.record.kind == "bench") out.content = bench_from_store(doc, provenance);
    if (out.record.kind == "session") out.content = session_from_store(doc, provenance, run);
    // The result is the run's "doctor" summary; a run stopped before it has none.
    if (out.record.kind == "doctor") {
      const auto summaries = summaries_by_phase(doc);
      if (const auto it = summaries.find("doctor"); it != summaries.end())
        out.content = result::Document(result::doctor_result_from_json(it->second));
    }
  } catch (const json::exception& e) {
    throw_bad_input("run {} in {}: a stored {} unit is not what edgeprobe writes ({})", run, store.location(),
                    out.record.kind, e.what());
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kBadInput) throw;
    throw_bad_input("run {} in {}: a stored {} unit is not what edgeprobe writes ({})", run, store.location(),
                    out.record.kind, e.what());
  }
  return out;
}

json StoredRun::document() const {
  if (content) return result::to_json(*content);
  return {{"schema_version", result::kSchemaVersion}, {"kind", record.kind}, {"provenance", record.provenance}};
}

json resumable_plan(store::Store& store, int64_t run, const std::string& kind) {
  const auto rec = store.get_run(run);
  if (rec.kind != kind) throw_bad_input("--resume {}: that run is a {} run, not a {} run", run, rec.kind, kind);
  if (rec.status == "complete") throw_bad_input("run {} is already complete; nothing to resume", run);
  return rec.plan;
}

namespace {

// What a spec names: a result file (any file but a directory: a pipe or /dev/stdin is
// read too, within the same bound), else a stored run's id; anything else is refused.
struct ResultSource {
  std::string file;  // "" for a run
  int64_t run = 0;
};
ResultSource result_source(const std::string& spec) {
  std::error_code ec;
  if (std::filesystem::exists(spec, ec) && !std::filesystem::is_directory(spec, ec)) return {spec, 0};
  if (std::filesystem::is_directory(spec, ec))
    throw_bad_input("'{}' is a directory: give a result JSON file or a run id (see 'edgeprobe runs')", one_line(spec));
  if (!is_run_id(spec))
    throw_bad_input("cannot read '{}': no such file, and it is not a run id (see 'edgeprobe runs')", one_line(spec));
  int64_t run = 0;
  if (std::from_chars(spec.data(), spec.data() + spec.size(), run).ec != std::errc() || run < 1)
    throw_bad_input("run id {} is out of range: see 'edgeprobe runs' for the ids stored", one_line(spec));
  return {"", run};
}

StoredRun load_run_in(int64_t run, const std::string& db) {
  const auto store = store::open_store(db.empty() ? store::default_db_path() : db, store::Mode::kMustExist);
  return load_stored_run(*store, run);
}

}  // namespace

json load_result_document(const std::string& spec, const std::string& db) {
  const ResultSource source = result_source(spec);
  if (!source.file.empty()) return result::read_result_file(source.file, "result file");
  return load_run_in(source.run, db).document();
}

std::string result_label(const std::string& spec) { return is_run_id(spec) ? "run " + spec : spec; }

result::Document load_result(const std::string& spec, const std::string& db) {
  const ResultSource source = result_source(spec);
  // read_result_file has read it through the typed reader already: this cannot refuse it.
  if (!source.file.empty()) return result::document_from_json(result::read_result_file(source.file, "result file"));
  StoredRun run = load_run_in(source.run, db);
  if (!run.content) throw_bad_input("run {} is a {} run with no stored result", run.record.id, run.record.kind);
  return std::move(*run.content);
}

}  // namespace edgeprobe::app
