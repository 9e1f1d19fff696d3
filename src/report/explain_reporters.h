#pragma once
#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>

namespace edgeprobe::report {

// An explanation (analysis::to_json) in the formats explain prints: md, a table of factors
// per phase with their product and the table of speeds after each fix; json the whole
// explanation; csv one row per factor.
void write_explain_report(const nlohmann::json& explanation, const std::string& format, std::ostream& out);

// A lab run explained device by device against its baseline (app::explain_lab_run): md one
// table, a row per device, job and phase; csv the same rows; json the whole result.
void write_explain_lab_report(const nlohmann::json& lab_explanation, const std::string& format, std::ostream& out);

// "52.2 → 84.2 → 121 (hardware line 130) tok/s": the seed's one-line table for a phase.
std::string fix_path_line(const nlohmann::json& phase);

}  // namespace edgeprobe::report
