#pragma once
#include <string>
#include <vector>

namespace edgeprobe::platform {
struct CpuFeatures;
struct Topology;
struct IsaGap;
}  // namespace edgeprobe::platform
namespace edgeprobe::probe {
struct DeviceCeilings;
}  // namespace edgeprobe::probe
namespace edgeprobe::result {
struct Roofline;
}  // namespace edgeprobe::result
namespace edgeprobe::telemetry {
struct DeviceInfo;
}
namespace edgeprobe::engine {
struct GpuBackendInfo;
}

namespace edgeprobe::report {

// What `probe` and `sysinfo` print for people (their md): rendering only, from the types
// the measurement modules fill; their json is each type's own to_json.
std::string to_text(const platform::CpuFeatures& features);
std::string to_text(const platform::Topology& topology);
std::string to_text(const platform::IsaGap& gap);
// The CPU's figures and each GPU's, with the storage ceiling.
std::string to_text(const probe::DeviceCeilings& ceilings);
std::string to_text(const result::Roofline& roofline);
// sysinfo's sysfs view: clusters, cpufreq, thermal zones, GPUs, power, cgroup.
std::string to_text(const telemetry::DeviceInfo& info);
// One line per GPU backend library and device, and why a library gave none.
std::string gpu_backends_text(const std::vector<engine::GpuBackendInfo>& backends);

}  // namespace edgeprobe::report
