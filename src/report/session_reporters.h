#pragma once
#include <iosfwd>
#include <string>

#include "result/session.h"

namespace edgeprobe::report {

// A session report in one of the formats every subcommand shares ("md", "csv", "json",
// "jsonl"), generated from the JSON form of result::SessionReport:
// - md: one row per configuration (medians, stability, QES) and the QES components;
// - csv: one row per turn, with its configuration and identity columns;
// - json: the whole report;
// - jsonl: one self-contained object per turn (schema version, run, configuration,
//   provenance), like bench's one object per test.
void write_session_report(const result::SessionReport& report, const std::string& format, std::ostream& out);

}  // namespace edgeprobe::report
