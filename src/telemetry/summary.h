#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "telemetry/timeline.h"

namespace edgeprobe::telemetry {

struct ClusterPhase {
  std::string name, role;
  std::vector<int> cpus;
  std::optional<double> max_khz;  // cpuinfo_max_freq: what the shares are of
  std::optional<double> mean_freq_khz, min_freq_khz, mean_freq_share, min_freq_share;
  // Lowest scaling_max_freq in the phase as a share of cpuinfo_max_freq: < 1 = capped.
  std::optional<double> min_cap_share;
  // From cpufreq stats/time_in_state between the snapshots around the phase.
  std::optional<double> residency_mean_freq_share;
  std::vector<std::pair<int64_t, double>> time_in_state_ms;  // (kHz, ms), non-zero only
  std::optional<double> thread_time_share;  // share of the process's thread-time here
};

// A GPU over one phase: clock as a share of its top clock, busy share, its own temperature.
struct GpuPhase {
  std::string name, kind, model, governor;
  std::optional<double> max_freq_hz;  // the top clock: what the shares are of
  std::optional<double> mean_freq_hz, min_freq_hz, mean_freq_share, min_freq_share;
  std::optional<double> min_cap_share;  // lowest cap over the top clock: < 1 = capped
  std::optional<double> mean_busy_share, max_temp_c;
  // The INA3221 rail that feeds it (Jetson) and its mean power: never the GPU's alone.
  std::string rail, rail_shared_with;
  std::optional<double> rail_mean_power_w;
};

struct ZonePhase {
  std::string zone;
  double max_temp_c = 0;
  double mean_temp_c = 0;
};

struct PowerSourcePhase {
  std::string name;  // "battery", "rapl:package-0", "VDD_IN"
  bool in_total = false;
  std::optional<double> energy_j, mean_power_w;
};

// Telemetry of one phase (load, prefill, decode): every figure is optional and absent
// when the device did not offer it; nothing is estimated from other devices.
struct PhaseTelemetry {
  int64_t start_ns = 0, end_ns = 0, tokens = 0;
  size_t samples = 0;  // samples inside the phase
  std::vector<ClusterPhase> clusters;
  std::vector<GpuPhase> gpus;  // empty where no GPU was found
  std::vector<ZonePhase> thermal;
  std::vector<PowerSourcePhase> power_sources;
  std::string energy_source;  // which source energy_j comes from
  std::optional<double> energy_j, joules_per_token, mean_power_w;
  std::optional<double> discharge_mah;          // ∫ battery discharge current dt
  std::optional<double> charge_counter_drop_mah;  // charge_counter before - after
  std::optional<double> throttled_ms;
  std::optional<double> throttled_periods, periods;
  std::optional<double> other_cpu_share;   // other processes' share of all CPUs' time
  // Their share of the time of the CPUs the run may use (its affinity), where that is fewer
  // than all: what they could take from its threads. Absent when the run may use every CPU.
  std::optional<double> other_usable_cpu_share;
  std::optional<double> process_cpu_share;  // the measured process's share of all CPUs' time
  std::optional<double> max_rss_kb, peak_rss_kb;
  std::optional<double> voluntary_ctx_switches, involuntary_ctx_switches;
  std::vector<std::string> notes;
};

// Figures for [start_ns, end_ns] on the run clock. Counters (energy, CPU time,
// throttling) are interpolated at the phase edges and need samples on both sides; levels
// (frequency, temperature, power) use the samples inside plus the values interpolated
// at the edges, so a phase shorter than a sampling period still gets a figure.
// `usable_cpus`: the CPUs the measured process may run on (empty: not known).
PhaseTelemetry summarize_phase(const Timeline& timeline, int64_t start_ns, int64_t end_ns, int64_t tokens,
                               const std::vector<int>& usable_cpus = {});

nlohmann::json to_json(const PhaseTelemetry& phase);

}  // namespace edgeprobe::telemetry
