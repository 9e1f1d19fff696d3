#pragma once
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "fidelity/fidelity.h"

// How `edgeprobe fidelity` writes its report: md for people, JSON for tools. Reporters
// never measure: everything here comes from a fidelity::Report.
namespace edgeprobe::fidelity {

inline constexpr int kReportSchema = 1;

nlohmann::json to_json(const Report& report);
void write_report(const Report& report, const std::string& format, std::ostream& out);

}  // namespace edgeprobe::fidelity
