#include "telemetry/device_info.h"

#include <fmt/format.h>

#include <functional>

#include "telemetry/file_reader.h"

namespace edgeprobe::telemetry {
namespace {

std::string mhz(const std::optional<int64_t>& khz) {
  return khz ? fmt::format("{:.0f} MHz", static_cast<double>(*khz) / 1000.0) : "?";
}

std::string gpu_mhz(const std::optional<int64_t>& hz) {
  return hz ? fmt::format("{:.0f} MHz", static_cast<double>(*hz) / 1e6) : "?";
}

// One GPU in a line or two: what it is, how its clock is governed, what feeds it.
void render_gpu(const Gpu& g, const std::function<void(const std::string&)>& line) {
  std::string text = fmt::format("  {} {}", g.kind, g.name);
  if (!g.model.empty()) text += " model " + g.model;
  if (!g.governor.empty()) text += " governor " + g.governor;
  text += fmt::format(" now {} max {}", gpu_mhz(g.cur_hz), gpu_mhz(g.max_hz));
  if (g.cap_hz && g.max_hz && *g.cap_hz < *g.max_hz)
    text += fmt::format(" (capped to {})", gpu_mhz(g.cap_hz));
  if (g.busy_share) text += fmt::format(" busy {:.0f} %", *g.busy_share * 100);
  if (g.temp_c) text += fmt::format(" {:.1f} °C", *g.temp_c);
  line(text);
  if (!g.rail.empty()) {
    line("    power rail " + g.rail +
         (g.rail_shared_with.empty() ? "" : " (shared with " + g.rail_shared_with + ")"));
  }
}

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

std::string render_text(const DeviceInfo& info) {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  if (info.root != "/") line(fmt::format("sysfs root: {}", info.root));
  line(fmt::format("CPUs online: {}", format_cpu_list(info.cpu.online)));
  line(fmt::format("Clusters ({}):", info.cpu.cluster_source));
  for (const auto& c : info.cpu.clusters) {
    std::string text = fmt::format("  {:<10} cpus {:<8}", c.name, format_cpu_list(c.cpus));
    if (!c.role.empty()) text += fmt::format(" {:<7}", c.role);
    if (c.min_khz || c.max_khz) text += fmt::format(" {} - {}", mhz(c.min_khz), mhz(c.max_khz));
    if (!c.governor.empty()) text += " governor " + c.governor;
    if (c.capacity) text += fmt::format(" capacity {}", *c.capacity);
    line(text);
  }
  if (!info.cpu.policies.empty()) line("cpufreq policies:");
  for (const auto& p : info.cpu.policies) {
    line(fmt::format("  {:<10} cpus {:<8} now {} scaling {} - {} driver {}", p.name, format_cpu_list(p.cpus),
                     mhz(p.cur_khz), mhz(p.scaling_min_khz), mhz(p.scaling_max_khz),
                     p.driver.empty() ? "?" : p.driver) +
         (p.has_time_in_state ? " time_in_state" : ""));
  }
  line(fmt::format("Thermal zones: {}", info.thermal.size()));
  for (const auto& z : info.thermal) {
    line(fmt::format("  {:<15} {:<24} {:.1f} °C{}", z.name, z.type, z.temp_c.value_or(0),
                     z.divisor == 1000 ? "" : fmt::format(" (raw unit 1/{} °C, guessed)", z.divisor)));
  }
  const size_t gpus = info.gpu.gpus.size();
  line(gpus == 0 ? std::string("GPU: none found in sysfs") : fmt::format("GPUs: {}", gpus));
  for (const auto& g : info.gpu.gpus) render_gpu(g, line);
  line("Power:");
  for (const auto& b : info.power.batteries) {
    line(fmt::format("  battery {} status {}{}{}", b.name, b.status.empty() ? "?" : b.status,
                     b.discharge_current_ua ? fmt::format(" discharge {:.0f} mA", *b.discharge_current_ua / 1000) : "",
                     b.voltage_uv ? fmt::format(" {:.3f} V", *b.voltage_uv / 1e6) : ""));
    if (b.has_power_now) line("    power_now (µW) instead of current_now");
    if (!b.current_unit_note.empty()) line("    " + b.current_unit_note);
    if (!b.voltage_unit_note.empty()) line("    " + b.voltage_unit_note);
    if (b.charge_counter_uah) line(fmt::format("    charge_counter {:.0f} mAh", *b.charge_counter_uah / 1000));
    if (b.temp_c) line(fmt::format("    temp {:.1f} °C", *b.temp_c));
  }
  for (const auto& z : info.power.rapl) {
    line(fmt::format("  rapl {} ({}){}", z.id, z.name, z.counts_in_total ? " counted in total" : ""));
  }
  for (const auto& r : info.power.rails) {
    line(fmt::format("  ina3221 {} rail {:<16} {:.3f} V {:.3f} A {:.2f} W{}", r.device, r.label,
                     static_cast<double>(r.voltage_mv.value_or(0)) / 1e3, static_cast<double>(r.current_ma.value_or(0)) / 1e3,
                     static_cast<double>(r.voltage_mv.value_or(0) * r.current_ma.value_or(0)) / 1e6,
                     r.counts_in_total ? " counted in total" : ""));
  }
  const auto& cg = info.cgroup;
  if (cg.version != 0) {
    line(fmt::format("cgroup v{} {} (cpu.stat in {})", cg.version, cg.path, cg.cpu_dir));
    line(cg.quota_cpus ? fmt::format("  cpu quota {:.2f} CPUs ({} us per {} us)", *cg.quota_cpus, cg.quota_us.value_or(0),
                                     cg.period_us.value_or(0))
                       : std::string("  cpu quota: none"));
    if (cg.nr_throttled) {
      line(fmt::format("  throttled {} of {} periods, {:.1f} ms", *cg.nr_throttled, cg.nr_periods.value_or(0),
                       static_cast<double>(cg.throttled_us.value_or(0)) / 1000.0));
    }
  }
  if (!cg.cpuset.empty()) line("  cpuset " + format_cpu_list(cg.cpuset));
  if (!cg.allowed_cpus.empty()) line("Allowed CPUs: " + format_cpu_list(cg.allowed_cpus));
  if (!info.unavailable.empty()) {
    line("Not available:");
    for (const auto& u : info.unavailable) line("  " + u);
  }
  return out;
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
