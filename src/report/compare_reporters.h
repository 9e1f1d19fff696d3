#pragma once
#include <string>

#include "analysis/compare.h"

namespace edgeprobe::report {

// `compare` in its formats: md starts with a "**not comparable**: ..." line per mismatch,
// then the settings that differ, then the table; json the whole comparison; csv and jsonl
// one row per metric, as the json's "metrics" hold them (csv gives the interval as
// ci_low,ci_high).
std::string compare_report(const analysis::CompareReport& report, const std::string& format,
                           const std::string& label_a, const std::string& label_b);
// The settings that differ, one line each, after the mismatches (which already name
// theirs in bold); "" when none.
std::string compare_differences_text(const analysis::CompareReport& report);

}  // namespace edgeprobe::report
