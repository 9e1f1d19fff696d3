#pragma once
#include <nlohmann/json.hpp>

#include <iosfwd>
#include <mutex>

#include "app/job.h"
#include "core/progress.h"

namespace edgeprobe::app {

// The JSON Lines wire format of `edgeprobe run --plan` (docs/wire-format.md): one object
// per line, each with "event" and a sequence number, flushed as it happens, so a
// controller reading over SSH or ADB can commit every unit as it arrives and knows where
// a dropped stream stopped.
inline constexpr int kStreamVersion = 1;

class StreamSink : public JobSink {
 public:
  explicit StreamSink(std::ostream& out) : out_(out) {}
  void start(const std::string& kind, const nlohmann::json& plan);
  void progress(const std::string& step) override;
  void warning(const std::string& text) override;
  // A progress event with done, total, unit and the time left, as the terminal shows it.
  void units(size_t done, size_t total, const std::string& unit) override;
  void bench_begin(const result::Provenance& provenance, const std::vector<workload::TestCase>& cases) override;
  void bench_repetition(size_t case_index, const workload::TestCase& test, const result::Repetition& repetition) override;
  void bench_result(const result::TestResult& result) override;
  void bench_end(const result::BenchReport& report) override;
  void session_begin(const result::Provenance& provenance, const nlohmann::json& plan) override;
  void session_turn(size_t config_index, const result::Turn& turn) override;
  void session_end(const result::SessionReport& report) override;
  void doctor_end(const nlohmann::json& provenance, const nlohmann::json& plan, const result::DoctorResult& report) override;
  // The last line of every stream: how the job ended (or the error that stopped it).
  void end(const JobOutcome& outcome);
  void fatal(const std::string& kind, const std::string& message);

 private:
  void emit(nlohmann::json line);
  std::ostream& out_;
  std::mutex mutex_;
  int64_t seq_ = 0;
  ProgressEstimator estimate_;
};

}  // namespace edgeprobe::app
