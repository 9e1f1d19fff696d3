#pragma once
#include <string>
#include <vector>

#include "result/doctor.h"

namespace edgeprobe::doctor {

// A finding is part of doctor's result document (result/doctor.h); the checks make them.
using result::Finding;
using result::kEmulatedSpeedup;
using result::Severity;
using result::severity_name;
using result::speedup_basis_word;

// Critical first, then by estimated speed-up (largest first), then warnings without an
// estimate, then info; ties keep the order the checks ran in (software before hardware).
// A speed-up from an emulated run (data "emulated") does not rank.
void sort_by_impact(std::vector<Finding>& findings);

}  // namespace edgeprobe::doctor
