#pragma once
#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>

namespace edgeprobe::report {

// A doctor result in the formats every subcommand shares, from its JSON form
// (doctor::to_json): md is doctor's own text (`markdown`, already rendered; when empty, as
// for a stored diagnosis, a compact rendering of the findings), json the
// whole result, csv one row per finding, jsonl one self-contained object per finding.
void write_doctor_report(const nlohmann::json& doctor_json, const std::string& markdown, const std::string& format,
                         std::ostream& out);

}  // namespace edgeprobe::report
