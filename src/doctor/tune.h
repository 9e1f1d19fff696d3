#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "doctor/doctor.h"

namespace edgeprobe::doctor {

// One value tried for one setting, and one setting's step of the search, as the document
// keeps them (result/doctor.h).
using result::TuneCandidate;
using result::TuneStep;

struct TuneResult {
  DoctorOptions options;
  RunConfig start, best;
  std::vector<TuneStep> steps;
  // The configuration given and the best one, measured alternately (ABAB) at the
  // doctor's full repetitions: the gain comes from these, not from the search.
  std::vector<Rates> start_rounds, best_rounds;
  std::optional<double> gain;  // median over rounds of start turn seconds / best turn seconds
  double wall_s = 0;
};

// Coordinate search, one setting at a time in the order that matters most on a CPU:
// CPU mask (fastest cluster first), threads, strict placement, polling, ubatch, flash
// attention. Each step is one bench child sweeping that setting's values (one load).
// How many bench children are done of the most the search may run; the total settles
// to the children that ran when the search ends (no confirmation when nothing changed).
using ChildrenFn = std::function<void(size_t done, size_t total)>;
TuneResult tune(const DoctorOptions& options, const ProgressFn& progress = {}, const ChildrenFn& children = {});

// The search as its document holds it: what `-o json` prints and the store keeps.
result::TuneReport to_report(const TuneResult& result);

}  // namespace edgeprobe::doctor
