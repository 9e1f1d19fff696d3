#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "lab/inventory.h"
#include "lab/transport.h"

namespace edgeprobe::lab {

struct CpufreqPolicy {
  std::string name, governor;
  long cur_khz = 0, min_khz = 0, max_khz = 0, hw_max_khz = 0;
};

// What a device says about itself through one POSIX sh script: identity for `lab check`
// and the thermal/power state recorded before and after every lab job.
struct DeviceState {
  bool reachable = false;
  std::string why_not;       // when not reachable (or the probe failed)
  std::string arch, target;  // uname -m; the bundle target (aarch64-linux-gnu)
  // Named by platform/device_identity.h's rule, as the device's own results name it.
  std::string device_id;  // the id its results will carry ("dev-..."); "" before a probe
  std::string os, kernel, soc, board, cpu;
  int cpus = 0;
  std::vector<std::string> bundles;  // complete bundles in the workdir (directory names)
  std::optional<long> free_kb;       // free space where the workdir is
  std::optional<int> battery_pct;
  std::optional<double> battery_c;   // battery temperature
  std::optional<double> max_temp_c;  // hottest thermal zone
  std::string rooted;                // "root" (we are uid 0), "su" (a su binary exists), "no"
  std::vector<CpufreqPolicy> cpufreq;
  // Frequencies pinned: every policy's min equals its max, or its governor is performance.
  bool pinned() const;
  // The kernel caps a policy below its hardware maximum (thermal or power capping).
  bool capped() const;
};

// The probe script (a single sh -c line safe for ssh, adb shell and local sh).
std::string state_script(const std::string& workdir);
DeviceState parse_state(const std::string& text);
// `cancel`, polled while the probe runs: true kills it (a Ctrl-C during `lab check`).
DeviceState read_state(Transport& transport, const Device& device, double timeout_s = 30,
                       std::function<bool()> cancel = {});
nlohmann::json to_json(const DeviceState& state);

// aarch64 / arm64 -> aarch64-linux-gnu; x86_64 -> x86_64-linux-gnu; "" if unknown.
std::string target_of_arch(const std::string& uname_m);

}  // namespace edgeprobe::lab
