#pragma once
#include "app/job.h"
#include "doctor/doctor.h"
#include "doctor/tune.h"

namespace edgeprobe::app {

struct DoctorJobResult {
  doctor::Diagnosis diagnosis;
  JobOutcome outcome;
};

// Runs doctor (its bench children, the checks) and stores the diagnosis as a "doctor"
// run: the primary child's provenance, the options as the plan, the whole result as the
// run's "doctor" summary, so `runs`, `export` and a later `doctor --baseline RUN` find it.
DoctorJobResult run_doctor(const doctor::DoctorOptions& options, const JobContext& context);

// --tune: the search and its measured gain; stored the same way as a "doctor" run.
struct TuneJobResult {
  doctor::TuneResult tune;
  JobOutcome outcome;
};
TuneJobResult run_tune(const doctor::DoctorOptions& options, const JobContext& context);

}  // namespace edgeprobe::app
