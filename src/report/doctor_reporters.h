#pragma once
#include <iosfwd>
#include <string>

#include "result/doctor.h"

namespace edgeprobe::report {

// Doctor's human report, ordered by impact (a header with the model and configuration, then
// each finding with its evidence, gain and fix); --tune's steps, the best configuration and
// the commands that reproduce it. Made from the document, so a stored run reads as the
// run printed it.
std::string to_text(const result::DoctorReport& report);
std::string to_text(const result::TuneReport& report);

// A doctor result in the formats every subcommand shares: md the human report above, json
// the document, csv one row per finding (a search: per candidate tried), jsonl one
// self-contained object per row.
void write_doctor_report(const result::DoctorResult& result, const std::string& format, std::ostream& out);

}  // namespace edgeprobe::report
