// The checks doctor runs, in the order of the first seed's checklist: the file, its
// precision and the kernels first (software), then threads, contention, throttling, load
// and the ceiling (hardware). Each is a pure function of the Evidence, so a test can feed
// it a measured or a fixture run alike.
#include <fmt/format.h>

#include <algorithm>

#include "doctor/checks_internal.h"

namespace edgeprobe::doctor {
namespace checks {

std::string mib(double bytes) { return fmt::format("{:.1f} MiB", bytes / (1024.0 * 1024.0)); }
std::string pct(double share) { return fmt::format("{:.0f} %", share * 100); }

std::string cpu_list_text(const std::vector<int>& cpus) {
  if (cpus.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + (j == i ? std::to_string(cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]));
    i = j + 1;
  }
  return out;
}

}  // namespace checks

std::vector<Finding> diagnose(const Evidence& e) {
  std::vector<Finding> out;
  checks::check_identity(e, out);
  checks::check_precision(e, out);
  checks::check_memory(e, out);
  checks::check_kernel(e, out);
  checks::check_threads(e, out);
  checks::check_contention(e, out);
  checks::check_cgroup(e, out);
  checks::check_clock_and_heat(e, out);
  checks::check_decode_steps(e, out);
  checks::check_load(e, out);
  checks::check_ceiling(e, out);
  // A thread count measured faster while something else held the CPUs is a symptom: the
  // other processes or the quota are the cause, and fixing them changes the best count.
  const bool cpu_taken = std::any_of(out.begin(), out.end(), [](const Finding& f) {
    return f.id == "contention.other_processes" || f.id == "throttle.cgroup_quota" || f.id == "contention.steal";
  });
  for (auto& f : out) {
    if (f.id != "threads.count" || !cpu_taken) continue;
    f.severity = Severity::kInfo;
    f.evidence.push_back("measured while other processes or a quota held the CPUs: fix that first, then measure again");
  }
  return out;
}

}  // namespace edgeprobe::doctor
