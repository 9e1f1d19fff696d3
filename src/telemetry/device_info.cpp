#include "telemetry/device_info.h"

#include <fmt/format.h>

#include <functional>

#include "telemetry/file_reader.h"

namespace edgeprobe::telemetry {
namespace {

template <typename T>
void put(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

}  // namespace

DeviceInfo describe_device(const FsRoot& fs, int pid) {
  DeviceInfo info;
  info.root = fs.root();
  info.cpu = discover_cpus(fs);
  info.unavailable = info.cpu.unavailable;
  info.thermal = discover_thermal(fs, &info.unavailable);
  info.power = discover_power(fs);
  info.unavailable.insert(info.unavailable.end(), info.power.unavailable.begin(), info.power.unavailable.end());
  info.gpu = discover_gpus(fs, info.power.rails);
  info.unavailable.insert(info.unavailable.end(), info.gpu.unavailable.begin(), info.gpu.unavailable.end());
  info.cgroup = discover_cgroup(fs, pid);
  info.unavailable.insert(info.unavailable.end(), info.cgroup.unavailable.begin(), info.cgroup.unavailable.end());
  return info;
}

nlohmann::json to_json(const DeviceInfo& info) {
  using nlohmann::json;
  json j;
  j["root"] = info.root;
  j["cpus_online"] = info.cpu.online;
  j["cluster_source"] = info.cpu.cluster_source;
  json clusters = json::array();
  for (const auto& c : info.cpu.clusters) {
    json jc = {{"name", c.name}, {"cpus", c.cpus}};
    if (!c.role.empty()) jc["role"] = c.role;
    put(jc, "min_freq_khz", c.min_khz);
    put(jc, "max_freq_khz", c.max_khz);
    if (!c.governor.empty()) jc["governor"] = c.governor;
    put(jc, "capacity", c.capacity);
    clusters.push_back(jc);
  }
  j["clusters"] = clusters;
  json policies = json::array();
  for (const auto& p : info.cpu.policies) {
    json jp = {{"name", p.name}, {"cpus", p.cpus}, {"governor", p.governor}, {"driver", p.driver},
               {"time_in_state", p.has_time_in_state}};
    put(jp, "cpuinfo_min_freq_khz", p.cpuinfo_min_khz);
    put(jp, "cpuinfo_max_freq_khz", p.cpuinfo_max_khz);
    put(jp, "scaling_min_freq_khz", p.scaling_min_khz);
    put(jp, "scaling_max_freq_khz", p.scaling_max_khz);
    put(jp, "cur_freq_khz", p.cur_khz);
    policies.push_back(jp);
  }
  j["cpufreq_policies"] = policies;
  json zones = json::array();
  for (const auto& z : info.thermal) {
    json jz = {{"zone", z.name}, {"type", z.type}, {"raw_divisor", z.divisor}};
    put(jz, "temp_c", z.temp_c);
    zones.push_back(jz);
  }
  j["thermal_zones"] = zones;
  json batteries = json::array();
  for (const auto& b : info.power.batteries) {
    json jb = {{"name", b.name}, {"status", b.status}, {"current_unit", b.current_unit_note},
               {"voltage_unit", b.voltage_unit_note}, {"power_now", b.has_power_now}};
    put(jb, "discharge_current_ua", b.discharge_current_ua);
    put(jb, "voltage_uv", b.voltage_uv);
    put(jb, "charge_counter_uah", b.charge_counter_uah);
    put(jb, "temp_c", b.temp_c);
    batteries.push_back(jb);
  }
  json rapl = json::array();
  for (const auto& z : info.power.rapl) {
    rapl.push_back({{"id", z.id}, {"name", z.name}, {"max_energy_range_uj", z.max_energy_range_uj},
                    {"in_total", z.counts_in_total}});
  }
  json rails = json::array();
  for (const auto& r : info.power.rails) {
    json jr = {{"label", r.label}, {"device", r.device}, {"in_total", r.counts_in_total}};
    put(jr, "voltage_mv", r.voltage_mv);
    put(jr, "current_ma", r.current_ma);
    rails.push_back(jr);
  }
  json gpus = json::array();
  for (const auto& g : info.gpu.gpus) {
    json jg = {{"kind", g.kind}, {"name", g.name}, {"model", g.model}, {"governor", g.governor}};
    put(jg, "cur_freq_hz", g.cur_hz);
    put(jg, "min_freq_hz", g.min_hz);
    put(jg, "max_freq_hz", g.max_hz);
    put(jg, "cap_freq_hz", g.cap_hz);
    put(jg, "busy_share", g.busy_share);
    put(jg, "temp_c", g.temp_c);
    if (!g.rail.empty()) jg["rail"] = g.rail;
    if (!g.rail_shared_with.empty()) jg["rail_shared_with"] = g.rail_shared_with;
    gpus.push_back(jg);
  }
  j["gpus"] = gpus;
  j["power"] = {{"batteries", batteries}, {"rapl", rapl}, {"ina3221_rails", rails}};
  const auto& cg = info.cgroup;
  json jc = {{"version", cg.version}};
  if (cg.version != 0) {
    jc["path"] = cg.path;
    jc["cpu_dir"] = cg.cpu_dir;
  }
  put(jc, "quota_cpus", cg.quota_cpus);
  put(jc, "quota_us", cg.quota_us);
  put(jc, "period_us", cg.period_us);
  put(jc, "nr_periods", cg.nr_periods);
  put(jc, "nr_throttled", cg.nr_throttled);
  put(jc, "throttled_us", cg.throttled_us);
  if (!cg.cpuset.empty()) jc["cpuset"] = cg.cpuset;
  if (!cg.allowed_cpus.empty()) jc["allowed_cpus"] = cg.allowed_cpus;
  j["cgroup"] = jc;
  j["unavailable"] = info.unavailable;
  return j;
}

}  // namespace edgeprobe::telemetry
