#include "runner/telemetry_recorder.h"

#include <sched.h>

#include <cmath>
#include <fstream>

#include "core/error.h"
#include "probe/roofline.h"
#include "telemetry/chrome_trace.h"
#include "telemetry/summary.h"

namespace edgeprobe::runner {

TelemetryRecorder::TelemetryRecorder(double sample_hz, const std::string& sysfs_root, const RunClock& clock, int pid)
    : sample_hz_(sample_hz) {
  if (sample_hz < 0 || sample_hz > 1000) throw_bad_input("--sample-hz {} out of range 0..1000 (0 = off)", sample_hz);
  if (sample_hz == 0) return;
  telemetry::SamplerOptions options;
  options.hz = sample_hz;
  options.sysfs_root = sysfs_root;
  options.pid = pid;
  if (pid <= 0) {  // the run's own CPUs, so telemetry can say what others took of them
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
      for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &set)) usable_cpus_.push_back(cpu);
  }
  sampler_ = std::make_unique<telemetry::Sampler>(options, clock);
  sampler_->start();
}

TelemetryRecorder::~TelemetryRecorder() { stop(); }

void TelemetryRecorder::stop() {
  if (sampler_ && sampler_->running()) sampler_->stop();
}

void TelemetryRecorder::on_event(const PhaseEvent& event) {
  events_.push_back(event);
  if (event.name == "load" && event.repetition == 0) cold_load_ = event;
}

std::vector<std::string> TelemetryRecorder::unavailable() const {
  return sampler_ ? sampler_->unavailable() : std::vector<std::string>{};
}

void TelemetryRecorder::enrich(result::TestResult& r) {
  if (!sampler_) return;
  sampler_->sample_now();  // a sample after the last phase, so its end is bracketed
  nlohmann::json t = {{"sample_hz", sample_hz_}, {"unavailable", sampler_->unavailable()}};
  t["load"] = cold_load_ ? telemetry::to_json(telemetry::summarize_phase(
                               sampler_->timeline(cold_load_->start_ns, cold_load_->end_ns), cold_load_->start_ns,
                               cold_load_->end_ns, 0))
                         : nlohmann::json(nullptr);
  r.telemetry = t;
  for (auto& rep : r.repetitions)
    if (rep.telemetry.is_null()) enrich_repetition(r.config.name(), rep);
}

void TelemetryRecorder::enrich_repetition(const std::string& test, result::Repetition& rep) {
  if (!sampler_) return;
  sampler_->sample_now();  // brackets the phase that just ended
  const telemetry::Timeline timeline = sampler_->timeline(rep.start_ns, rep.end_ns);
  nlohmann::json phases = nlohmann::json::object();
  for (const auto& e : events_) {
    if (e.category != "phase" || e.test != test || e.repetition != rep.index) continue;
    if (e.start_ns < rep.start_ns || e.end_ns > rep.end_ns) continue;  // an earlier test of the same name
    phases[e.name] = telemetry::to_json(telemetry::summarize_phase(timeline, e.start_ns, e.end_ns, e.tokens, usable_cpus_));
  }
  rep.telemetry = phases;
}

nlohmann::json TelemetryRecorder::summarize(int64_t start_ns, int64_t end_ns, int64_t tokens) {
  if (!sampler_) return nullptr;
  sampler_->sample_now();
  return telemetry::to_json(telemetry::summarize_phase(sampler_->timeline(start_ns, end_ns), start_ns, end_ns, tokens));
}

double TelemetryRecorder::current_max_temp_c() {
  if (!sampler_) return NAN;
  sampler_->sample_now();
  const auto now = sampler_->timeline();
  if (now.t_ns.empty()) return NAN;
  const auto phase = telemetry::summarize_phase(now, now.t_ns.back(), now.t_ns.back(), 0);
  double hottest = NAN;
  for (const auto& zone : phase.thermal)
    if (std::isnan(hottest) || zone.max_temp_c > hottest) hottest = zone.max_temp_c;
  return hottest;
}

void TelemetryRecorder::write_trace(const std::string& path) const {
  if (path.empty()) return;
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw_bad_input("cannot write --trace '{}'", path);
  const telemetry::Timeline timeline = sampler_ ? sampler_->timeline() : telemetry::Timeline{};
  telemetry::write_chrome_trace(out, timeline, events_);
}

std::optional<result::Roofline> roofline_of(const result::TestResult& r, const model::GgufInfo& info,
                                            const probe::DeviceCeilings& ceilings) {
  if (r.error) return std::nullopt;
  const result::TestSummary s = result::summarize(r);
  const double pp = r.config.n_prompt > 0 ? s.prefill_tokens_per_s.median : 0;
  const double tg = r.config.n_gen > 0 ? s.decode_tokens_per_s.median : 0;
  const auto roofline = probe::compute_roofline(info, ceilings, r.config.n_prompt, r.config.n_gen, r.config.n_depth,
                                                pp, tg, s.load_cold_ms,
                                                ceilings.device.empty() ? r.config.n_threads : 0,  // a GPU has no thread count
                                                (probe::kv_type_bytes_per_element(r.config.type_k) +
                                                 probe::kv_type_bytes_per_element(r.config.type_v)) / 2,
                                                r.config.n_batch, r.config.n_ubatch);
  return roofline;
}

}  // namespace edgeprobe::runner
