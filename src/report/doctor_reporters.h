#pragma once
#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>

namespace edgeprobe::doctor {
struct Diagnosis;
struct TuneResult;
}  // namespace edgeprobe::doctor

namespace edgeprobe::report {

// Doctor's human report, ordered by impact (a header with the model and configuration, then
// each finding with its evidence, gain and fix); --tune's steps, the best configuration and
// the commands that reproduce it.
std::string to_text(const doctor::Diagnosis& diagnosis);
std::string to_text(const doctor::TuneResult& result);

// A doctor result in the formats every subcommand shares, from its JSON form
// (doctor::to_json): md is doctor's own text (`markdown`, already rendered; when empty, as
// for a stored diagnosis, a compact rendering of the findings), json the
// whole result, csv one row per finding, jsonl one self-contained object per finding.
void write_doctor_report(const nlohmann::json& doctor_json, const std::string& markdown, const std::string& format,
                         std::ostream& out);

}  // namespace edgeprobe::report
