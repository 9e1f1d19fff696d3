#include "telemetry/layout.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "telemetry/file_reader.h"

namespace edgeprobe::telemetry {
namespace {

const char kCpuDir[] = "/sys/devices/system/cpu";
const char kCpufreqDir[] = "/sys/devices/system/cpu/cpufreq";
const char kPowerSupplyDir[] = "/sys/class/power_supply";
const char kPowercapDir[] = "/sys/class/powercap";

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::optional<int64_t> read_opt(const FsRoot& fs, const std::string& path) { return fs.read_int(path); }

std::string read_str(const FsRoot& fs, const std::string& path) { return fs.read_text(path).value_or(""); }

}  // namespace

std::string proc_dir(int pid) { return pid <= 0 ? std::string("/proc/self") : "/proc/" + std::to_string(pid); }

// ---- CPUs and clusters ----------------------------------------------------------------

CpuLayout discover_cpus(const FsRoot& fs) {
  CpuLayout layout;
  if (auto online = fs.read_text(std::string(kCpuDir) + "/online")) {
    layout.online = parse_cpu_list(*online);
  } else {
    for (const auto& name : fs.list_dir(kCpuDir)) {
      if (starts_with(name, "cpu") && all_digits(name.substr(3))) layout.online.push_back(std::stoi(name.substr(3)));
    }
    std::sort(layout.online.begin(), layout.online.end());
  }

  for (const auto& name : fs.list_dir(kCpufreqDir)) {
    if (!starts_with(name, "policy") || !all_digits(name.substr(6))) continue;
    CpufreqPolicy policy;
    policy.name = name;
    policy.dir = std::string(kCpufreqDir) + "/" + name;
    auto related = fs.read_text(policy.dir + "/related_cpus");
    if (!related) related = fs.read_text(policy.dir + "/affected_cpus");
    policy.cpus = related ? parse_cpu_list(*related) : std::vector<int>{std::stoi(name.substr(6))};
    policy.cpuinfo_min_khz = read_opt(fs, policy.dir + "/cpuinfo_min_freq");
    policy.cpuinfo_max_khz = read_opt(fs, policy.dir + "/cpuinfo_max_freq");
    policy.scaling_min_khz = read_opt(fs, policy.dir + "/scaling_min_freq");
    policy.scaling_max_khz = read_opt(fs, policy.dir + "/scaling_max_freq");
    policy.cur_khz = read_opt(fs, policy.dir + "/scaling_cur_freq");
    policy.cur_readable = policy.cur_khz.has_value();
    if (!policy.cur_readable) {
      layout.unavailable.push_back("cpufreq " + name + " scaling_cur_freq: unavailable: " + fs.last_error());
    }
    policy.governor = read_str(fs, policy.dir + "/scaling_governor");
    policy.driver = read_str(fs, policy.dir + "/scaling_driver");
    policy.has_time_in_state = fs.read_text(policy.dir + "/stats/time_in_state").has_value();
    layout.policies.push_back(std::move(policy));
  }
  std::sort(layout.policies.begin(), layout.policies.end(),
            [](const CpufreqPolicy& a, const CpufreqPolicy& b) { return a.cpus.front() < b.cpus.front(); });

  auto capacity_of = [&](const std::vector<int>& cpus) -> std::optional<int64_t> {
    if (cpus.empty()) return std::nullopt;
    return fs.read_int(std::string(kCpuDir) + "/cpu" + std::to_string(cpus.front()) + "/cpu_capacity");
  };
  auto fill_limits = [&](Cluster& cluster) {
    for (size_t index : cluster.policies) {
      const auto& p = layout.policies[index];
      if (p.cpuinfo_min_khz) cluster.min_khz = std::min(cluster.min_khz.value_or(*p.cpuinfo_min_khz), *p.cpuinfo_min_khz);
      if (p.cpuinfo_max_khz) cluster.max_khz = std::max(cluster.max_khz.value_or(*p.cpuinfo_max_khz), *p.cpuinfo_max_khz);
      if (cluster.governor.empty()) cluster.governor = p.governor;
      else if (!p.governor.empty() && cluster.governor != p.governor) cluster.governor = "mixed";
    }
  };

  // Intel hybrid parts register one perf PMU per core type, each listing its CPUs
  // (Documentation/admin-guide/perf/ ... "cpu_core"/"cpu_atom"; tools/perf hybrid support).
  const auto core_cpus = fs.read_text("/sys/devices/cpu_core/cpus");
  const auto atom_cpus = fs.read_text("/sys/devices/cpu_atom/cpus");

  if (layout.policies.empty()) {
    layout.unavailable.push_back(
        "cpufreq: unavailable: no /sys/devices/system/cpu/cpufreq/policy* (" +
        std::string(fs.exists(kCpufreqDir) ? "no policies: no cpufreq driver" : "absent") + ")");
    // Without cpufreq, core types still tell clusters apart: the hybrid PMUs, else
    // arm64 cpu_capacity (equal within a cluster).
    if (core_cpus && atom_cpus) {
      layout.clusters.push_back({"cpu_core", "p-core", parse_cpu_list(*core_cpus), {}, {}, {}, "", {}});
      layout.clusters.push_back({"cpu_atom", "e-core", parse_cpu_list(*atom_cpus), {}, {}, {}, "", {}});
      layout.cluster_source = "Intel hybrid core types (no cpufreq policies)";
      return layout;
    }
    std::map<int64_t, std::vector<int>> by_capacity;
    for (int cpu : layout.online) {
      const auto capacity = fs.read_int(std::string(kCpuDir) + "/cpu" + std::to_string(cpu) + "/cpu_capacity");
      if (!capacity) {
        by_capacity.clear();
        break;
      }
      by_capacity[*capacity].push_back(cpu);
    }
    static const std::vector<std::vector<const char*>> kCapacityRoles = {
        {}, {""}, {"little", "big"}, {"little", "mid", "big"}, {"little", "mid", "big", "prime"}};
    if (by_capacity.size() > 1 && by_capacity.size() < kCapacityRoles.size()) {
      size_t rank = 0;
      for (const auto& [capacity, cpus] : by_capacity) {
        Cluster cluster;
        cluster.name = "capacity" + std::to_string(capacity);
        cluster.role = kCapacityRoles[by_capacity.size()][rank++];
        cluster.cpus = cpus;
        cluster.capacity = capacity;
        layout.clusters.push_back(std::move(cluster));
      }
      layout.cluster_source = "cpu_capacity (no cpufreq policies)";
      return layout;
    }
    Cluster all;
    all.name = "cpu";
    all.cpus = layout.online;
    layout.clusters.push_back(std::move(all));
    layout.cluster_source = "one cluster of all online CPUs (no cpufreq policies)";
    return layout;
  }
  const bool one_cpu_policies =
      std::all_of(layout.policies.begin(), layout.policies.end(), [](const auto& p) { return p.cpus.size() == 1; });
  if (core_cpus && atom_cpus) {
    for (const auto& [name, role, list] : {std::tuple{"cpu_core", "p-core", *core_cpus},
                                          std::tuple{"cpu_atom", "e-core", *atom_cpus}}) {
      Cluster cluster;
      cluster.name = name;
      cluster.role = role;
      cluster.cpus = parse_cpu_list(list);
      for (size_t i = 0; i < layout.policies.size(); ++i) {
        for (int cpu : layout.policies[i].cpus) {
          if (std::binary_search(cluster.cpus.begin(), cluster.cpus.end(), cpu)) {
            cluster.policies.push_back(i);
            break;
          }
        }
      }
      fill_limits(cluster);
      layout.clusters.push_back(std::move(cluster));
    }
    layout.cluster_source = "Intel hybrid core types (/sys/devices/cpu_core/cpus, /sys/devices/cpu_atom/cpus)";
  } else if (one_cpu_policies && layout.policies.size() > 1) {
    // One policy per CPU (intel_pstate, amd-pstate, acpi-cpufreq): the policies are not
    // clusters; without a hybrid marker the cores are alike.
    Cluster all;
    all.name = "cpu";
    for (size_t i = 0; i < layout.policies.size(); ++i) {
      all.policies.push_back(i);
      all.cpus.push_back(layout.policies[i].cpus.front());
    }
    std::sort(all.cpus.begin(), all.cpus.end());
    fill_limits(all);
    layout.clusters.push_back(std::move(all));
    layout.cluster_source = "one cluster: one cpufreq policy per CPU and no hybrid core types";
  } else {
    for (size_t i = 0; i < layout.policies.size(); ++i) {
      Cluster cluster;
      cluster.name = layout.policies[i].name;
      cluster.cpus = layout.policies[i].cpus;
      cluster.policies = {i};
      fill_limits(cluster);
      layout.clusters.push_back(std::move(cluster));
    }
    layout.cluster_source = "cpufreq policies (related_cpus)";
    // Name the roles by max frequency: Arm DynamIQ phones ship 2-4 clusters.
    std::vector<size_t> order(layout.clusters.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return layout.clusters[a].max_khz.value_or(0) < layout.clusters[b].max_khz.value_or(0);
    });
    static const std::vector<std::vector<const char*>> kRoles = {
        {}, {""}, {"little", "big"}, {"little", "mid", "big"}, {"little", "mid", "big", "prime"}};
    std::set<int64_t> distinct;
    for (const auto& c : layout.clusters) distinct.insert(c.max_khz.value_or(0));
    // Clusters with the same top speed (Jetson Orin's two A78AE clusters) have no rank.
    if (order.size() < kRoles.size() && distinct.size() == order.size()) {
      for (size_t rank = 0; rank < order.size(); ++rank) layout.clusters[order[rank]].role = kRoles[order.size()][rank];
    }
  }
  for (auto& cluster : layout.clusters) cluster.capacity = capacity_of(cluster.cpus);
  return layout;
}

// ---- thermal ------------------------------------------------------------------------

std::vector<ThermalZone> discover_thermal(const FsRoot& fs, std::vector<std::string>* unavailable) {
  std::vector<ThermalZone> zones;
  std::vector<std::string> names;
  for (const auto& name : fs.list_dir(kThermalDir)) {
    if (starts_with(name, "thermal_zone") && all_digits(name.substr(12))) names.push_back(name);
  }
  std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
    return std::stoi(a.substr(12)) < std::stoi(b.substr(12));
  });
  if (names.empty()) {
    unavailable->push_back("thermal: unavailable: no /sys/class/thermal/thermal_zone* (" +
                           std::string(fs.exists(kThermalDir) ? "no zones" : "absent") + ")");
    return zones;
  }
  size_t denied = 0;
  std::string last_reason;
  std::vector<std::string> denied_lines;
  for (const auto& name : names) {
    ThermalZone zone;
    zone.name = name;
    const std::string dir = std::string(kThermalDir) + "/" + name;
    zone.type = read_str(fs, dir + "/type");
    zone.temp_path = dir + "/temp";
    const auto raw = fs.read_int(zone.temp_path);
    if (!raw) {
      ++denied;
      last_reason = fs.last_error();
      denied_lines.push_back("thermal " + name + " (" + zone.type + "): unavailable: " + fs.last_error());
      continue;
    }
    zone.divisor = guess_temp_divisor(*raw);
    zone.temp_c = normalise_temp_c(*raw, zone.divisor);
    zones.push_back(std::move(zone));
  }
  // Android's SELinux denies apps every zone: say so once, not once per zone.
  if (denied > 3) {
    unavailable->push_back("thermal: unavailable: " + std::to_string(denied) + " of " + std::to_string(names.size()) +
                           " zones unreadable (" + last_reason + ")");
  } else {
    unavailable->insert(unavailable->end(), denied_lines.begin(), denied_lines.end());
  }
  return zones;
}

// ---- power --------------------------------------------------------------------------

double discharge_current_ua(long long raw, double scale_to_ua, const std::string& status) {
  const double value = static_cast<double>(raw) * scale_to_ua;
  // The status says which way the charge flows, whatever sign the vendor chose.
  if (status == "Discharging") return std::fabs(value);
  if (status == "Charging") return -std::fabs(value);
  return -value;  // "Full", "Not charging", unknown: the ABI's sign (negative = discharging)
}

PowerLayout discover_power(const FsRoot& fs) {
  PowerLayout power;

  // Batteries: /sys/class/power_supply/<name>/type == "Battery".
  bool any_supply = false;
  for (const auto& name : fs.list_dir(kPowerSupplyDir)) {
    any_supply = true;
    const std::string dir = std::string(kPowerSupplyDir) + "/" + name;
    if (read_str(fs, dir + "/type") != "Battery") continue;
    Battery battery;
    battery.name = name;
    battery.dir = dir;
    battery.status = read_str(fs, dir + "/status");
    if (auto raw = fs.read_int(dir + "/current_now")) {
      battery.has_current = true;
      // Some fuel gauges report mA although the ABI says µA; a phone running a model
      // draws hundreds of mA, so a magnitude under 10000 means mA (the heuristic apps use).
      const long long magnitude = *raw < 0 ? -*raw : *raw;
      if (magnitude != 0 && magnitude < 10000) {
        battery.current_scale_to_ua = 1000;
        battery.current_unit_note = "current_now read as mA (|" + std::to_string(*raw) + "| < 10000)";
      } else {
        battery.current_unit_note = "current_now read as µA (ABI)";
      }
      battery.current_ua = static_cast<double>(*raw) * battery.current_scale_to_ua;
      battery.discharge_current_ua = discharge_current_ua(*raw, battery.current_scale_to_ua, battery.status);
    } else if (fs.read_int(dir + "/power_now")) {
      battery.has_power_now = true;
    } else {
      power.unavailable.push_back("battery " + name + " current_now: unavailable: " + fs.last_error());
    }
    if (auto raw = fs.read_int(dir + "/voltage_now")) {
      battery.has_voltage = true;
      if (*raw > 0 && *raw < 100000) {  // a cell reads 3-5 V: under 100000 it is mV
        battery.voltage_scale_to_uv = 1000;
        battery.voltage_unit_note = "voltage_now read as mV (" + std::to_string(*raw) + " < 100000)";
      } else {
        battery.voltage_unit_note = "voltage_now read as µV (ABI)";
      }
      battery.voltage_uv = static_cast<double>(*raw) * battery.voltage_scale_to_uv;
    } else {
      power.unavailable.push_back("battery " + name + " voltage_now: unavailable: " + fs.last_error());
    }
    if (auto raw = fs.read_int(dir + "/charge_counter")) {
      battery.has_charge_counter = true;
      battery.charge_counter_uah = static_cast<double>(*raw);
    }
    if (auto raw = fs.read_int(dir + "/temp")) {  // tenths of a degree C (ABI)
      battery.has_temp = true;
      battery.temp_c = static_cast<double>(*raw) / 10.0;
    }
    power.batteries.push_back(std::move(battery));
  }
  if (power.batteries.empty()) {
    power.unavailable.push_back(any_supply ? "battery: unavailable: no power_supply of type Battery"
                                : fs.exists(kPowerSupplyDir) ? "battery: unavailable: /sys/class/power_supply is empty"
                                                             : "battery: unavailable: no /sys/class/power_supply (absent)");
  }

  // RAPL: intel-rapl:<pkg> and sub-zones intel-rapl:<pkg>:<n>; energy_uj wraps at
  // max_energy_range_uj and is root-only since CVE-2020-8694.
  bool has_psys = false;
  for (const auto& id : fs.list_dir(kPowercapDir)) {
    if (!starts_with(id, "intel-rapl:")) continue;
    const std::string dir = std::string(kPowercapDir) + "/" + id;
    RaplZone zone;
    zone.id = id;
    zone.name = read_str(fs, dir + "/name");
    zone.energy_path = dir + "/energy_uj";
    zone.top_level = std::count(id.begin(), id.end(), ':') == 1;
    if (!fs.read_int(zone.energy_path)) {
      power.unavailable.push_back("rapl " + id + " (" + zone.name + ") energy_uj: unavailable: " + fs.last_error());
      continue;
    }
    zone.max_energy_range_uj = fs.read_int(dir + "/max_energy_range_uj").value_or(0);
    if (zone.name == "psys") has_psys = true;
    power.rapl.push_back(std::move(zone));
  }
  // psys covers the whole SoC (package included); otherwise packages plus DRAM.
  for (auto& zone : power.rapl) {
    zone.counts_in_total = zone.top_level && (has_psys ? zone.name == "psys"
                                                       : (starts_with(zone.name, "package") || zone.name == "dram"));
  }
  if (power.rapl.empty() && !fs.exists(kPowercapDir)) {
    power.unavailable.push_back("rapl: unavailable: no /sys/class/powercap/intel-rapl:* (absent)");
  } else if (power.rapl.empty()) {
    power.unavailable.push_back("rapl: unavailable: no readable intel-rapl zone");
  }

  // INA3221 (Jetson): the hwmon index varies between boots and boards, so walk the
  // driver's devices and each one's hwmon*/ directory.
  std::vector<std::pair<std::string, std::string>> hwmon_dirs;  // (label for device, dir)
  const std::string driver = "/sys/bus/i2c/drivers/ina3221";
  for (const auto& device : fs.list_dir(driver)) {
    if (device.find('-') == std::string::npos) continue;  // "1-0040", skip bind/unbind/uevent
    for (const auto& hw : fs.list_dir(driver + "/" + device + "/hwmon")) {
      if (starts_with(hw, "hwmon")) hwmon_dirs.emplace_back(device + "/" + hw, driver + "/" + device + "/hwmon/" + hw);
    }
  }
  if (hwmon_dirs.empty()) {  // other boards: any hwmon whose name is ina3221
    for (const auto& hw : fs.list_dir("/sys/class/hwmon")) {
      const std::string dir = "/sys/class/hwmon/" + hw;
      if (read_str(fs, dir + "/name") == "ina3221") hwmon_dirs.emplace_back(hw, dir);
    }
  }
  for (const auto& [device, dir] : hwmon_dirs) {
    for (int channel = 1; channel <= 8; ++channel) {
      const std::string n = std::to_string(channel);
      const auto label = fs.read_text(dir + "/in" + n + "_label");
      if (!label) continue;
      // The summation channel (in7/curr4 "sum of shunt voltages") double counts.
      std::string lower = *label;
      std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      if (lower.find("sum") != std::string::npos) continue;
      PowerRail rail;
      rail.label = *label;
      rail.device = device;
      rail.voltage_path = dir + "/in" + n + "_input";
      rail.current_path = dir + "/curr" + n + "_input";
      rail.voltage_mv = fs.read_int(rail.voltage_path);
      rail.current_ma = rail.voltage_mv ? fs.read_int(rail.current_path) : std::nullopt;
      if (!rail.voltage_mv || !rail.current_ma) {
        power.unavailable.push_back("ina3221 rail " + rail.label + ": unavailable: " + fs.last_error());
        continue;
      }
      power.rails.push_back(std::move(rail));
    }
  }
  const bool has_vdd_in =
      std::any_of(power.rails.begin(), power.rails.end(), [](const PowerRail& r) { return r.label == "VDD_IN"; });
  for (auto& rail : power.rails) rail.counts_in_total = has_vdd_in ? rail.label == "VDD_IN" : true;
  if (power.rails.empty()) power.unavailable.push_back("ina3221: unavailable: no INA3221 hwmon rails (absent)");
  return power;
}

// ---- cgroup -------------------------------------------------------------------------

namespace {

struct Mount {
  std::string root, point, fstype, super_options;
};

std::vector<Mount> read_mounts(const FsRoot& fs, const std::string& proc) {
  std::vector<Mount> mounts;
  auto text = fs.read_text(proc + "/mountinfo");
  if (!text) text = fs.read_text("/proc/self/mountinfo");
  if (!text) return mounts;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    // id parent maj:min root mountpoint options [optional...] - fstype source superoptions
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string token; fields >> token;) f.push_back(token);
    const auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || dash + 3 > f.end()) continue;
    Mount m{f[3], f[4], *(dash + 1), dash + 3 < f.end() ? *(dash + 3) : ""};
    if (m.fstype == "cgroup" || m.fstype == "cgroup2") mounts.push_back(std::move(m));
  }
  return mounts;
}

bool has_option(const std::string& options, const std::string& wanted) {
  std::istringstream in(options);
  for (std::string item; std::getline(in, item, ',');) {
    if (item == wanted) return true;
  }
  return false;
}

std::string join_cgroup(const std::string& mount_point, const std::string& mount_root, std::string path) {
  // In a container the mount's root is the container's cgroup; /proc/<pid>/cgroup then
  // names paths relative to the host hierarchy.
  if (mount_root != "/" && path.rfind(mount_root, 0) == 0) path = path.substr(mount_root.size());
  if (path.empty() || path == "/") return mount_point;
  return mount_point + (path.front() == '/' ? "" : "/") + path;
}

void parse_cpu_stat(const std::string& text, int version, CgroupInfo* info) {
  std::istringstream in(text);
  std::string key;
  long long value = 0;
  while (in >> key >> value) {
    if (key == "nr_periods") info->nr_periods = value;
    else if (key == "nr_throttled") info->nr_throttled = value;
    else if (version == 1 && key == "throttled_time") info->throttled_us = value / 1000;
    else if (version == 2 && key == "throttled_usec") info->throttled_us = value;
  }
}

}  // namespace

CgroupInfo discover_cgroup(const FsRoot& fs, int pid) {
  CgroupInfo info;
  const std::string proc = proc_dir(pid);
  if (auto status = fs.read_text(proc + "/status")) {
    std::istringstream in(*status);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("Cpus_allowed_list:", 0) == 0) info.allowed_cpus = parse_cpu_list(line.substr(18));
    }
  }
  const auto cgroup_text = fs.read_text(proc + "/cgroup");
  if (!cgroup_text) {
    info.unavailable.push_back("cgroup: unavailable: " + proc + "/cgroup " + fs.last_error());
    return info;
  }
  std::string v1_cpu_path, v1_cpuset_path, v2_path;
  bool has_v2 = false;
  std::istringstream in(*cgroup_text);
  for (std::string line; std::getline(in, line);) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    if (line.substr(0, a) == "0" && controllers.empty()) {
      v2_path = path;
      has_v2 = true;
    }
    if (has_option(controllers, "cpu")) v1_cpu_path = path;
    if (has_option(controllers, "cpuset")) v1_cpuset_path = path;
  }
  const auto mounts = read_mounts(fs, proc);
  auto find_mount = [&](const char* fstype, const char* controller) -> const Mount* {
    for (const auto& m : mounts) {
      if (m.fstype == fstype && (controller == nullptr || has_option(m.super_options, controller))) return &m;
    }
    return nullptr;
  };
  auto fallback_dir = [&](std::initializer_list<const char*> candidates, const char* probe) -> std::string {
    for (const char* c : candidates) {
      if (fs.exists(std::string(c) + "/" + probe)) return c;
    }
    return "";
  };

  if (!v1_cpu_path.empty()) {
    const Mount* m = find_mount("cgroup", "cpu");
    const std::string mount_point =
        m ? m->point : fallback_dir({"/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu"}, "cpu.stat");
    if (!mount_point.empty()) {
      info.version = 1;
      info.path = v1_cpu_path;
      info.cpu_dir = join_cgroup(mount_point, m ? m->root : "/", v1_cpu_path);
      info.quota_us = fs.read_int(info.cpu_dir + "/cpu.cfs_quota_us");
      info.period_us = fs.read_int(info.cpu_dir + "/cpu.cfs_period_us");
      if (info.quota_us && *info.quota_us < 0) info.quota_us.reset();  // -1 = unlimited
    }
    if (!v1_cpuset_path.empty()) {
      const Mount* cs = find_mount("cgroup", "cpuset");
      const std::string cs_point = cs ? cs->point : fallback_dir({"/sys/fs/cgroup/cpuset"}, "cpuset.cpus");
      if (!cs_point.empty()) {
        const std::string dir = join_cgroup(cs_point, cs ? cs->root : "/", v1_cpuset_path);
        auto cpus = fs.read_text(dir + "/cpuset.effective_cpus");
        if (!cpus) cpus = fs.read_text(dir + "/cpuset.cpus");
        if (cpus) info.cpuset = parse_cpu_list(*cpus);
      }
    }
  }
  if (info.version == 0 && has_v2) {
    const Mount* m = find_mount("cgroup2", nullptr);
    const std::string mount_point =
        m ? m->point : fallback_dir({"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}, "cgroup.controllers");
    if (!mount_point.empty()) {
      const std::string dir = join_cgroup(mount_point, m ? m->root : "/", v2_path);
      const auto stat = fs.read_text(dir + "/cpu.stat");
      if (stat && stat->find("nr_throttled") != std::string::npos) {
        info.version = 2;
        info.path = v2_path;
        info.cpu_dir = dir;
        if (auto max = fs.read_text(dir + "/cpu.max")) {  // "max 100000" or "30000 100000"
          std::istringstream fields(*max);
          std::string quota;
          long long period = 0;
          fields >> quota >> period;
          if (period > 0) info.period_us = period;
          if (quota != "max" && !quota.empty()) info.quota_us = std::stoll(quota);
        }
      } else if (stat) {
        info.unavailable.push_back("cgroup v2 " + dir +
                                   "/cpu.stat: unavailable: no throttling counters (cpu controller not enabled)");
      }
      if (auto cpus = fs.read_text(dir + "/cpuset.cpus.effective")) info.cpuset = parse_cpu_list(*cpus);
    }
  }
  if (info.version == 0) {
    info.unavailable.push_back("cgroup: unavailable: no cpu controller hierarchy with cpu.stat for " + proc);
    return info;
  }
  if (auto stat = fs.read_text(info.cpu_dir + "/cpu.stat")) {
    parse_cpu_stat(*stat, info.version, &info);
  } else {
    info.unavailable.push_back("cgroup " + info.cpu_dir + "/cpu.stat: unavailable: " + fs.last_error());
  }
  if (info.quota_us && info.period_us && *info.period_us > 0) {
    info.quota_cpus = static_cast<double>(*info.quota_us) / static_cast<double>(*info.period_us);
  }
  return info;
}

}  // namespace edgeprobe::telemetry
