#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "telemetry/layout.h"

namespace edgeprobe::telemetry {

// What the device offers for telemetry and what it does not (and why): the content of
// `edgeprobe sysinfo`.
struct DeviceInfo {
  std::string root;
  CpuLayout cpu;
  std::vector<ThermalZone> thermal;
  PowerLayout power;
  GpuLayout gpu;
  CgroupInfo cgroup;
  std::vector<std::string> unavailable;  // every "<what>: unavailable: <why>"
};

DeviceInfo describe_device(const FsRoot& fs, int pid = 0);
nlohmann::json to_json(const DeviceInfo& info);

}  // namespace edgeprobe::telemetry
