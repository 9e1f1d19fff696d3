#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/events.h"
#include "model/gguf_info.h"
#include "probe/ceilings.h"
#include "result/result.h"
#include "telemetry/sampler.h"

namespace edgeprobe::runner {

// Puts telemetry on the results: runs the sampler for the whole sweep, keeps every phase
// event, and summarises each repetition's prefill and decode windows (and the model's
// cold load) from the samples on the same clock.
class TelemetryRecorder {
 public:
  // pid: whose threads the process sources follow (placement, CPU share); 0 = this
  // process, or a local server's (--server-pid) when the work runs there.
  TelemetryRecorder(double sample_hz, const std::string& sysfs_root, const RunClock& clock, int pid = 0);
  ~TelemetryRecorder();
  bool enabled() const { return sampler_ != nullptr; }
  void on_event(const PhaseEvent& event);
  // Telemetry of one window of the run clock (a session turn's prefill or decode).
  nlohmann::json summarize(int64_t start_ns, int64_t end_ns, int64_t tokens);
  // The hottest thermal zone now, NaN when none is readable (for --cooldown temp).
  double current_max_temp_c();
  // Prefill/decode telemetry of one repetition (called as soon as it ends).
  void enrich_repetition(const std::string& test, result::Repetition& repetition);
  // Test-level telemetry (the cold load), and repetitions that have none yet.
  void enrich(result::TestResult& result);
  void stop();
  // Chrome Trace Event JSON (Perfetto, chrome://tracing) of the whole run.
  void write_trace(const std::string& path) const;
  std::vector<std::string> unavailable() const;

 private:
  double sample_hz_;
  std::unique_ptr<telemetry::Sampler> sampler_;
  std::vector<PhaseEvent> events_;
  std::optional<PhaseEvent> cold_load_;
  std::vector<int> usable_cpus_;  // this process's affinity (empty for another process's telemetry)
};

// Ceilings and efficiencies of one result from the device's measured ceilings; none for a
// failed test.
std::optional<result::Roofline> roofline_of(const result::TestResult& result, const model::GgufInfo& info,
                             const probe::DeviceCeilings& ceilings);

}  // namespace edgeprobe::runner
