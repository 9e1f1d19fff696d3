#include "app/explain_lab.h"

#include <fmt/format.h>

#include <map>

#include "analysis/explain.h"
#include "app/stored_run.h"
#include "core/error.h"
#include "core/text.h"

namespace edgeprobe::app {

using nlohmann::json;

json explain_lab_run(const store::Store& store, store::RunId lab_run, const std::string& baseline, bool same_shape) {
  const store::RunRecord lab = store.get_run(lab_run);
  if (lab.kind != "lab") throw_bad_input("run {} is a {} run, not a lab run (see 'edgeprobe runs --kind lab')", lab_run, lab.kind);
  // The device runs it started, by device and job (the plan's index), from their provenance.
  std::map<std::string, std::map<int64_t, store::RunId>> runs;
  for (const auto& summary : store.list_runs({})) {
    if (summary.kind != "bench" && summary.kind != "doctor") continue;
    const json prov = store.get_run(summary.id).provenance;
    const json::json_pointer at("/extra/lab");
    if (!prov.contains(at) || !prov.at(at).is_object()) continue;
    const json& l = prov.at(at);
    if (!l.contains("lab_run") || l["lab_run"] != lab_run || !l.contains("device") || !l["device"].is_string()) continue;
    const int64_t job = l.contains("job") && l["job"].is_number_integer() ? l["job"].get<int64_t>() : 0;
    runs[l["device"].get<std::string>()][job] = summary.id;  // a resumed job's later run wins
  }
  if (!runs.count(baseline)) {
    std::string names;
    for (const auto& [name, _] : runs) names += (names.empty() ? "" : ", ") + one_line(name, 60);
    throw_bad_input("--baseline {}: lab run {} has no run of that device (its devices: {})", one_line(baseline, 60), lab_run,
                    names.empty() ? "none with a stored bench or doctor run" : names);
  }
  json rows = json::array();
  for (const auto& [name, jobs] : runs) {
    if (name == baseline) continue;
    for (const auto& [job, run] : jobs) {
      json row = {{"device", name}, {"job", job}, {"run_id", run}};
      const auto base = runs[baseline].find(job);
      if (base == runs[baseline].end()) {
        row["error"] = fmt::format("the baseline {} has no run of job {}", one_line(baseline, 60), job);
        rows.push_back(std::move(row));
        continue;
      }
      row["baseline_run_id"] = base->second;
      try {
        const auto a = analysis::explain_side(load_stored_run(store, base->second).document(), std::to_string(base->second));
        const auto b = analysis::explain_side(load_stored_run(store, run).document(), std::to_string(run));
        row["explanation"] = analysis::to_json(analysis::explain(a, b, {same_shape}));
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kBadInput) throw;
        row["error"] = e.what();
      } catch (const json::exception& e) {
        row["error"] = fmt::format("a stored field holds a type edgeprobe never writes there ({})", one_line(e.what(), 120));
      }
      rows.push_back(std::move(row));
    }
  }
  return {{"kind", "explain-lab"}, {"lab_run", lab_run}, {"baseline", baseline}, {"rows", rows}};
}

}  // namespace edgeprobe::app
