#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/fs.h"
#include "platform/thermal_units.h"

// What the device offers, found once before sampling starts: the files to read and the
// static facts (limits, names) that turn raw readings into figures. Absent or denied
// sources come back as "unavailable" lines, never as errors.
namespace edgeprobe::telemetry {

// One cpufreq policy: CPUs that share a clock (Documentation/admin-guide/pm/cpufreq.rst).
struct CpufreqPolicy {
  std::string name;  // "policy4"
  std::string dir;   // "/sys/devices/system/cpu/cpufreq/policy4" (device path, not root-prefixed)
  std::vector<int> cpus;
  std::optional<int64_t> cpuinfo_min_khz, cpuinfo_max_khz, scaling_min_khz, scaling_max_khz, cur_khz;
  std::string governor, driver;
  bool cur_readable = false;
  bool has_time_in_state = false;
};

// A group of CPUs of one kind: a cpufreq policy on Arm big.LITTLE, the P- or E-cores of
// an Intel hybrid part, or all CPUs where nothing tells them apart.
struct Cluster {
  std::string name;  // "policy0", "cpu_core", "cpu_atom", "cpu"
  std::string role;  // "little", "mid", "big", "prime", "p-core", "e-core" or "" when uniform
  std::vector<int> cpus;
  std::vector<size_t> policies;  // indexes into CpuLayout::policies
  std::optional<int64_t> min_khz, max_khz;  // cpuinfo limits over the cluster's policies
  std::string governor;
  std::optional<int64_t> capacity;  // arm64 cpu_capacity (1024 = biggest core)
};

struct CpuLayout {
  std::vector<int> online;
  std::vector<CpufreqPolicy> policies;
  std::vector<Cluster> clusters;
  std::string cluster_source;  // how clusters were formed
  std::vector<std::string> unavailable;
};

// Where thermal zones live: CPU zones are read by discover_thermal, a GPU's zone is matched
// to its GPU by discover_gpus.
inline constexpr char kThermalDir[] = "/sys/class/thermal";

// Thermal zone (Documentation/driver-api/thermal/sysfs-api.rst): temp in millidegrees C.
struct ThermalZone {
  std::string name;  // "thermal_zone3"
  std::string type;  // "cpu-1-0-usr"
  std::string temp_path;
  // Divisor from the raw reading to degrees C: 1000 by the ABI; a few vendors report
  // whole or tenth degrees, recognised by magnitude (see normalise_temp_c).
  double divisor = 1000;
  std::optional<double> temp_c;
};

struct Battery {
  std::string name;  // power_supply entry, usually "battery"
  std::string dir;
  std::string status;  // "Discharging", "Charging", "Full", ...
  bool has_current = false, has_voltage = false, has_charge_counter = false, has_temp = false;
  // Without current_now, ACPI batteries (many laptops) report power_now in µW instead.
  bool has_power_now = false;
  // current_now is µA with negative = discharging by the ABI
  // (Documentation/ABI/testing/sysfs-class-power); vendors differ in both.
  double current_scale_to_ua = 1;  // 1000 when the driver reports mA
  double voltage_scale_to_uv = 1;  // 1000 when the driver reports mV
  std::string current_unit_note, voltage_unit_note;
  std::optional<double> current_ua, voltage_uv, charge_counter_uah, temp_c;  // normalised now
  std::optional<double> discharge_current_ua;  // positive while the battery is drained
};

// intel-rapl powercap zone (Documentation/power/powercap/powercap.rst).
struct RaplZone {
  std::string id;    // "intel-rapl:0", "intel-rapl:0:0"
  std::string name;  // "package-0", "core", "dram", "psys"
  std::string energy_path;
  int64_t max_energy_range_uj = 0;
  bool top_level = false;
  bool counts_in_total = false;  // psys if present, else package-* and dram
};

// INA3221 channel under the hwmon driver (Documentation/hwmon/ina3221.rst; NVIDIA Jetson
// Orin "Platform Power and Performance" docs): in*_input mV, curr*_input mA.
struct PowerRail {
  std::string label;  // "VDD_IN", "VDD_CPU_GPU_CV", ...
  std::string device;  // "1-0040/hwmon3"
  std::string voltage_path, current_path;
  bool counts_in_total = false;  // VDD_IN when present (module input), else every rail
  std::optional<int64_t> voltage_mv, current_ma;  // at discovery
};

struct PowerLayout {
  std::vector<Battery> batteries;
  std::vector<RaplZone> rapl;
  std::vector<PowerRail> rails;
  std::vector<std::string> unavailable;
};

// How a GPU reports how busy it was over its last window.
enum class GpuBusyFormat {
  kNone,
  kPercent,     // kgsl gpu_busy_percentage: "37 %"
  kBusyTotal,   // kgsl gpubusy: "<busy> <total>" over the last window
  kLoadAtFreq,  // Rockchip devfreq load: "37@300000000Hz" (percent busy at a clock)
  kPerMille,    // Jetson <devfreq>/device/load: 0..1000
};

// A GPU found under sysfs, its clock in Hz: Adreno kgsl (Qualcomm's
// drivers/gpu/msm/kgsl_pwrctrl.c), a Mali under devfreq (Rockchip's kbase, mainline
// panfrost/panthor), or a Jetson iGPU under devfreq (jetson_stats jtop/core/gpu.py).
struct Gpu {
  std::string kind;      // "kgsl", "mali", "jetson"
  std::string name;      // "kgsl-3d0", "fb000000.gpu", "17000000.gpu"
  std::string model;     // "Adreno740v2", "Mali-G610", "ga10b"; "" when the device does not say
  std::string governor;  // "msm-adreno-tz", "simple_ondemand", "nvhost_podgov"
  std::string dir;       // the kgsl or devfreq directory (device path)
  std::string freq_path, cap_path, busy_path, temp_path;  // "" when absent
  GpuBusyFormat busy_format = GpuBusyFormat::kNone;
  double temp_divisor = 1000;
  std::optional<int64_t> cur_hz, min_hz, cap_hz;
  std::optional<int64_t> max_hz;             // the hardware's top clock: what shares are of
  std::optional<double> busy_share, temp_c;  // at discovery
  // The INA3221 rail that feeds it (Jetson), and who else that rail feeds.
  std::string rail, rail_shared_with;
};

struct GpuLayout {
  std::vector<Gpu> gpus;
  std::vector<std::string> unavailable;  // only about GPUs that were found
};

// The cgroup the measured process sits in: cpu.stat throttling counters and limits.
// v1: Documentation/scheduler/sched-bwc.rst; v2: Documentation/admin-guide/cgroup-v2.rst.
struct CgroupInfo {
  int version = 0;       // 1 or 2, 0 when unavailable
  std::string path;      // path inside the hierarchy ("/", "/user.slice/...")
  std::string cpu_dir;   // where cpu.stat lives (device path)
  std::optional<double> quota_cpus;  // quota / period, nullopt when unlimited
  std::optional<int64_t> quota_us, period_us;
  std::optional<int64_t> nr_periods, nr_throttled, throttled_us;
  std::vector<int> cpuset;       // cgroup cpuset, empty when unknown
  std::vector<int> allowed_cpus;  // Cpus_allowed_list of the process
  std::vector<std::string> unavailable;
};

// proc paths of the measured process: "/proc/self" or "/proc/<pid>".
std::string proc_dir(int pid);

CpuLayout discover_cpus(const FsRoot& fs);
std::vector<ThermalZone> discover_thermal(const FsRoot& fs, std::vector<std::string>* unavailable);
PowerLayout discover_power(const FsRoot& fs);
CgroupInfo discover_cgroup(const FsRoot& fs, int pid);
// GPUs under /sys/class/kgsl and /sys/class/devfreq; `rails` (discover_power) name the
// rail that feeds a Jetson GPU. Nothing found is no line: most machines have none.
GpuLayout discover_gpus(const FsRoot& fs, const std::vector<PowerRail>& rails = {});
// One busy reading to a share 0..1; nullopt when the text is not in that format.
std::optional<double> parse_gpu_busy(std::string_view text, GpuBusyFormat format);

// The units of a thermal reading: one rule with the lab's device probe.
using platform::guess_temp_divisor;
using platform::normalise_temp_c;

// Battery current to "positive while discharging" µA, from the raw value, the driver's
// scale and the supply status (the sign convention differs between vendors).
double discharge_current_ua(long long raw, double scale_to_ua, const std::string& status);

}  // namespace edgeprobe::telemetry
