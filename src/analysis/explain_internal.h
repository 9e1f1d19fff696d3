#pragma once
// Private to explain: the document readers and the per-phase sample that explain.cpp and
// explain_evidence.cpp (the causes a run's own evidence estimates) share.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "analysis/explain.h"

namespace edgeprobe::analysis::explain_detail {

using nlohmann::json;

// Null for anything a document does not hold: result files come from outside.
inline const json& at(const json& j, const char* pointer) {
  static const json kNull;
  const json::json_pointer p(pointer);
  return j.is_object() && j.contains(p) ? j.at(p) : kNull;
}
inline double number_at(const json& j, const char* pointer) {
  const json& v = at(j, pointer);
  return v.is_number() ? v.get<double>() : 0;
}
inline std::string text_at(const json& j, const char* pointer) {
  const json& v = at(j, pointer);
  return v.is_string() ? v.get<std::string>() : "";
}

// The tests of a bench report that measured `phase`, with their repetitions' median.
struct PhaseSample {
  std::string test;
  int threads = 0;
  double median = 0;
  const json* result = nullptr;
};
std::vector<PhaseSample> phase_samples(const json& bench, const std::string& phase);

// B after each fix up to the hardware line (explain_account.cpp), and whether the account
// closes: a verdict, the chain withheld where it would pass the line, the runs that close it.
void fix_table(PhaseExplanation& p);
void judge_account(PhaseExplanation& p, const ExplainSide& a, const ExplainSide& b, const PhaseSample& sa,
                   const PhaseSample& sb);

// The causes one side's own evidence shows for a phase (telemetry, provenance, ceilings, a
// sweep in the same run), each with an estimate bounded by what it can physically cost, as
// factors of B/A. Causes already in `factors` (doctor's, measured or estimated) are left
// alone; a cause with no estimate goes to `unmeasured` with the command that measures it.
void evidence_factors(const ExplainSide& side, const std::string& name, const std::string& phase,
                      const PhaseSample& sample, std::vector<ExplainFactor>& factors,
                      std::vector<std::string>& unmeasured);

// `edgeprobe doctor` with the side's model and settings: the command that measures its
// causes in interleaved pairs.
std::string doctor_command(const ExplainSide& side, const PhaseSample& sample);

}  // namespace edgeprobe::analysis::explain_detail
