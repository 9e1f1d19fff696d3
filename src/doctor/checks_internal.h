#pragma once
// Private to the doctor checks: the thresholds and text helpers the check families
// share, and the checks diagnose() runs, one family per file:
//   checks_model.cpp   the software: model identity, precision, memory, kernel path
//   checks_cpu.cpp     where the threads run: count, placement, contention, cgroup quota
//   checks_runtime.cpp what happens while it runs: clock and heat, big cores held back,
//                      decode step-downs,
//                      load, the device's ceilings
//   checks_gpu.cpp     GPU backends, offload, ops on the CPU, the GPU against the CPU
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "doctor/doctor.h"

namespace edgeprobe::doctor::checks {

using nlohmann::json;
namespace rv = report_view;

// Thresholds, chosen so that a healthy run on a noisy 2-core VM stays quiet while the
// faults of the suite (factors of 1.3 and more) are named.
constexpr double kMinGain = 1.10;            // a measured alternative this much faster is a finding
constexpr double kContentionShare = 0.10;    // other processes' share of all CPU time
constexpr double kStealShare = 0.05;
constexpr double kThrottledShare = 0.02;     // cgroup-throttled time over wall time
constexpr double kLowClockShare = 0.85;      // mean clock under load over its maximum
constexpr double kPinnedClockShare = 0.60;   // a big cluster held below this share of its clock is pinned
constexpr double kLittleCoreShare = 0.25;    // thread-time on slower clusters
constexpr double kStepDown = 0.15;           // a decode change point at least this much slower
constexpr double kTempRise = 10;             // °C over the run
constexpr double kHotC = 80;

// A member the probes add to the primary run's provenance (cpu_features, isa_gap,
// llama_log, vulkan_devices): null when absent or when the run sent no result.
const json& primary_extra(const Evidence& e, const char* key);

std::string mib(double bytes);
std::string pct(double share);
// "0-3,6": CPU numbers folded into ranges.
std::string cpu_list_text(const std::vector<int>& cpus);

// Puts a paired comparison of the fix into a finding: its figures in the evidence and the
// data, and the speed-up only when the interval lies above 1; otherwise speedup_basis
// says why there is none (slower, no difference, or inconclusive and by how much the
// machine's speed moved). Nothing when `c` is empty.
// Why a warning carries no speed-up, by its id (for the findings that never measure one).
std::string no_speedup_reason(const std::string& id);
void apply_measured(Finding& f, const std::optional<Comparison>& c, const Evidence& e);

void check_identity(const Evidence& e, std::vector<Finding>& out);
void check_precision(const Evidence& e, std::vector<Finding>& out);
void check_memory(const Evidence& e, std::vector<Finding>& out);
void check_kernel(const Evidence& e, std::vector<Finding>& out);

void check_threads(const Evidence& e, std::vector<Finding>& out);
void check_contention(const Evidence& e, std::vector<Finding>& out);
void check_cgroup(const Evidence& e, std::vector<Finding>& out);

void check_clock_and_heat(const Evidence& e, std::vector<Finding>& out);
void check_big_cores(const Evidence& e, std::vector<Finding>& out);
void check_decode_steps(const Evidence& e, std::vector<Finding>& out);
void check_load(const Evidence& e, std::vector<Finding>& out);
void check_ceiling(const Evidence& e, std::vector<Finding>& out);

void check_gpu(const Evidence& e, std::vector<Finding>& out);

// checks_speculative.cpp: a draft model (bench --draft) that measured slower than plain decoding.
void check_speculation(const Evidence& e, std::vector<Finding>& out);

}  // namespace edgeprobe::doctor::checks
