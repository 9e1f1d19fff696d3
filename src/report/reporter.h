#pragma once
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "result/result.h"

namespace edgeprobe::report {

// Receives results as they complete, so a long sweep shows rows as it goes and a crash
// later loses nothing already printed. Every format is generated from the JSON form of
// the one result schema (result::to_json), never from runner internals.
class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void begin(const result::Provenance& provenance, const std::vector<workload::TestCase>& plan) = 0;
  virtual void add(const result::TestResult& result) = 0;
  virtual void end(const result::BenchReport& report) = 0;
};

// A format of OutputKind::kResults (report/formats.h); throws kBadInput for anything else.
std::unique_ptr<Reporter> make_reporter(const std::string& format, std::ostream& out);

}  // namespace edgeprobe::report
