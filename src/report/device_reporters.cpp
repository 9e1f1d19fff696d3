// The device's facts and ceilings as text: moved here from platform, probe, telemetry and
// the CLI so that measurement modules measure and report/ renders.
#include "report/device_reporters.h"

#include <fmt/format.h>

#include <functional>
#include <map>
#include <tuple>

#include "core/text.h"
#include "engine/backend.h"
#include "platform/cpu_features.h"
#include "platform/isa_gap.h"
#include "platform/topology.h"
#include "probe/ceilings.h"
#include "probe/roofline.h"
#include "telemetry/device_info.h"
#include "telemetry/file_reader.h"

namespace edgeprobe::report {

using namespace platform;
using namespace probe;
using namespace telemetry;

namespace {

std::string format_bytes(uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (1ull << 10)) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

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

// "2 thr" on the CPU; a GPU's figures have no thread count.
std::string threads_label(int threads) { return threads > 0 ? fmt::format("{} thr", threads) : "gpu"; }

// Bandwidth, compute and the model's kernels: the same for the CPU and for each GPU.
std::string figures_text(const DeviceCeilings& c) {
  std::string out;
  out += fmt::format("  memory bandwidth (decode ceiling): {:.1f} GB/s read, {:.1f} GB/s copy; buffer {} MiB\n",
                     c.bandwidth.read_best_gb_per_s, c.bandwidth.copy_best_gb_per_s, c.bandwidth.buffer_bytes >> 20);
  for (const auto& p : c.bandwidth.points)
    out += fmt::format("    {:<5} {:<24} {:>7}  best {:>6.1f}  median {:>6.1f} GB/s  ({} passes, cpu {:.0f}%)\n",
                       p.kernel, p.scope, threads_label(p.threads), p.best_gb_per_s, p.median_gb_per_s, p.passes, p.cpu_share * 100);
  for (const auto& n : c.bandwidth.notes) out += "    note: " + n + "\n";
  if (c.compute_status != "measured") {
    out += "  compute (prefill ceiling): " + c.compute_status + "\n";
  } else {
    out += fmt::format("  compute (prefill ceiling), ggml variant {}:\n", c.compute.variant);
    for (const auto& p : c.compute.points) {
      if (!p.error.empty())
        out += fmt::format("    {:<5} unavailable: {}\n", p.type, p.error);
      else
        out += fmt::format(
            "    {:<5} {}x{} x {} tokens, {}, {:<10}  best {:>7.1f}  median {:>7.1f} GFLOP/s  (cpu {:.0f}%)\n",
            p.type, p.rows, p.cols, p.tokens, threads_label(p.threads), p.weight_buffer, p.best_gflop_per_s, p.median_gflop_per_s,
            p.cpu_share * 100);
    }
    for (const auto& n : c.compute.notes) out += "    note: " + n + "\n";
  }
  for (const auto& n : c.kept_notes) out += "  note: " + n + " (--replace stores the lower figure)\n";
  if (!c.kernels.empty()) {
    out += "  model kernels (prefill at the model's shapes; decode: every matrix x 1 token, weights from memory):\n";
    for (const auto& k : c.kernels) {
      if (!k.error.empty()) {
        out += fmt::format("    {:<7} {} unavailable: {}\n", k.phase, k.type, k.error);
      } else if (k.phase == "prefill") {
        out += fmt::format("    prefill {:<5} {}x{} x {} tokens, {}, {:<10}  best {:>7.1f}  median {:>7.1f} GFLOP/s  (cpu {:.0f}%)\n",
                           k.type, k.rows, k.cols, k.tokens, threads_label(k.threads), k.weight_buffer, k.best_gflop_per_s,
                           k.median_gflop_per_s, k.cpu_share * 100);
      } else {
        out += fmt::format(
            "    decode  {} {} matrices, {} MiB{}, {}, {}  best {:>6.1f}  median {:>6.1f} GB/s  "
            "(median = {:.1f} t/s of matvecs; cpu {:.0f}%)\n",
            k.type, k.matrices, k.weight_bytes >> 20,
            k.model_bytes > k.weight_bytes ? fmt::format(" of {} MiB", k.model_bytes >> 20) : "", threads_label(k.threads),
            k.weight_buffer + (k.weight_memory.empty() ? "" : " (" + k.weight_memory + ")"), k.best_gb_per_s,
            k.median_gb_per_s,
            k.model_bytes > 0 ? k.decode_ceiling_gb_per_s() * 1e9 / static_cast<double>(k.model_bytes) : 0.0,
            k.cpu_share * 100);
      }
    }
  }
  return out;
}

}  // namespace

std::string to_text(const CpuFeatures& features) {
  std::string absent;
  for (const auto& [name, on] : features.named)
    if (!on) absent += (absent.empty() ? "" : " ") + name;
  std::string present;
  for (const auto& name : features.present()) present += (present.empty() ? "" : " ") + name;
  return fmt::format("CPU features ({}, {}): {}\n  absent: {}\n", features.arch, features.source,
                     present.empty() ? "none" : present, absent.empty() ? "none" : absent);
}

std::string to_text(const Topology& t) {
  std::string out = fmt::format("Topology ({}): {} package(s), {} core(s), {} logical CPU(s), {} NUMA node(s)\n", t.source,
                                t.n_packages, t.n_cores, t.n_logical, t.numa_nodes.size());
  for (const auto& c : t.clusters) {
    std::string extra;
    if (c.capacity >= 0) extra += fmt::format(" capacity {}", c.capacity);
    if (c.max_freq_khz > 0) extra += fmt::format(" max {:.2f} GHz", c.max_freq_khz / 1e6);
    if (c.hwloc_efficiency >= 0) extra += fmt::format(" hwloc efficiency {}", c.hwloc_efficiency);
    out += fmt::format("  cluster {} {:<8} package {} cpus {} ({} cores){}\n", c.rank, c.label, c.package_id,
                       format_cpu_list(c.cpus), c.n_cores, extra);
  }
  // "L2 512 KiB" -> instances, in level order (a phone's clusters have different L2s).
  std::map<std::tuple<int, std::string, uint64_t>, int> caches;
  for (const auto& c : t.caches)
    ++caches[{c.level, c.type == "Data" ? "d" : c.type == "Instruction" ? "i" : "", c.size_bytes}];
  if (!caches.empty()) {
    out += "  caches:";
    for (const auto& [key, n] : caches)
      out += fmt::format(" L{}{} {} x{}", std::get<0>(key), std::get<1>(key), format_bytes(std::get<2>(key)), n);
    out += "\n";
  }
  for (const auto& n : t.numa_nodes)
    out += fmt::format("  NUMA node {}: cpus {}{}\n", n.os_index, format_cpu_list(n.cpus),
                       n.memory_bytes ? ", " + format_bytes(n.memory_bytes) : "");
  for (const auto& note : t.notes) out += "  note: " + note + "\n";
  return out;
}

std::string to_text(const IsaGap& gap) {
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
    return s.empty() ? std::string("none") : s;
  };
  std::string out = fmt::format("ggml CPU variant: {} ({})\n", gap.loaded_variant.empty() ? "?" : gap.loaded_variant,
                                gap.library_path.empty() ? "no library" : gap.library_path);
  out += fmt::format("  CPU has:        {}\n", join(gap.cpu_features));
  out += fmt::format("  variant built:  {}\n", join(gap.compiled_features));
  out += fmt::format("  unused by it:   {}\n", join(gap.unused_features));
  out += fmt::format("  best for CPU:   {}{}\n", gap.best_variant.empty() ? "?" : gap.best_variant,
                     gap.best_installed_variant.empty() || gap.best_installed_variant == gap.best_variant
                         ? ""
                         : " (best installed: " + gap.best_installed_variant + ")");
  out += "  " + gap.summary + "\n";
  return out;
}

std::string to_text(const DeviceCeilings& c) {
  std::string out = fmt::format("Device ceilings for {} ({}; {} thread(s), measured {} in {:.1f} s{})\n", c.cpu_model,
                                c.build_key, c.threads, c.measured_at_utc, c.probe_seconds,
                                c.from_cache ? ", from cache " + c.cache_path : "");
  out += figures_text(c);
  if (c.storage) {
    const auto& s = *c.storage;
    out += fmt::format("  storage (load ceiling): {} ({} MiB read of {} MiB)\n", s.path, s.bytes_read >> 20,
                       s.file_bytes >> 20);
    out += s.cold_available() ? fmt::format("    cold {:.0f} MB/s  [{}]\n", s.cold_mb_per_s, s.cold_status)
                              : fmt::format("    cold {}\n", s.cold_status);
    out += s.warm_mb_per_s > 0 ? fmt::format("    warm {:.0f} MB/s  [{}]\n", s.warm_mb_per_s, s.warm_status)
                               : fmt::format("    warm {}\n", s.warm_status);
  } else {
    out += "  storage (load ceiling): unavailable: no model file given (-m)\n";
  }
  for (const auto& g : c.gpus) {
    out += fmt::format("GPU {} ({}; {} MiB, measured {} in {:.1f} s)\n", one_line(g.device, 80),
                       one_line(g.device_description, 200),
                       g.memory_bytes >> 20, g.measured_at_utc, g.probe_seconds);
    out += figures_text(g);
  }
  return out;
}

std::string to_text(const Roofline& r) {
  std::string out = r.device.empty() ? "" : "ceilings of " + r.device + " (the GPU that held the model)\n";
  if (r.decode_ceiling_tokens_per_s > 0) {
    out += fmt::format("decode: ceiling {:.1f} t/s, {}-bound{}{}\n", r.decode_ceiling_tokens_per_s, r.decode_bound,
                       r.decode_cache_resident ? " (fits in the LLC)" : "",
                       r.decode_ceiling_suspect ? ", efficiency: ceiling suspect"
                       : r.decode_efficiency > 0 ? fmt::format(", efficiency {:.0f}%", r.decode_efficiency * 100)
                                                 : "");
    if (r.decode_bandwidth_ceiling_tokens_per_s > 0)
      out += fmt::format("  bandwidth: {:.1f} t/s ({:.1f} GB/s / {:.1f} MB per token){}\n",
                         r.decode_bandwidth_ceiling_tokens_per_s, r.bandwidth_gb_per_s, r.decode_bytes_per_token / 1e6,
                         r.decode_bandwidth_efficiency > 0
                             ? fmt::format(", {:.0f}% of it", r.decode_bandwidth_efficiency * 100)
                             : "");
    if (r.decode_kernel_ceiling_tokens_per_s > 0)
      out += fmt::format("  matvec kernels: {:.1f} t/s ({:.1f} GB/s of weights)\n", r.decode_kernel_ceiling_tokens_per_s,
                         r.decode_kernel_gb_per_s);
  }
  if (r.prefill_ceiling_tokens_per_s > 0)
    out += fmt::format("prefill: ceiling {:.1f} t/s ({:.2f} GFLOP per token at {:.0f} GFLOP/s, {}){}\n",
                       r.prefill_ceiling_tokens_per_s, r.prefill_flop_per_token / 1e9, r.prefill_compute_gflop_per_s,
                       r.prefill_compute_basis,
                       r.prefill_ceiling_suspect ? ", efficiency: ceiling suspect"
                       : r.prefill_efficiency > 0 ? fmt::format(", efficiency {:.0f}%", r.prefill_efficiency * 100)
                                                  : "");
  if (r.load_ceiling_ms > 0)
    out += fmt::format("load: ceiling {:.0f} ms ({}){}\n", r.load_ceiling_ms, r.load_ceiling_basis,
                       r.load_efficiency > 0 ? fmt::format(", efficiency {:.0f}%", r.load_efficiency * 100) : "");
  else
    out += "load: " + r.load_ceiling_basis + "\n";
  for (const auto& n : r.notes) out += "  note: " + n + "\n";
  return out;
}

std::string to_text(const DeviceInfo& info) {
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

std::string gpu_backends_text(const std::vector<engine::GpuBackendInfo>& backends) {
  if (backends.empty())
    return "GPU backends (llama.cpp): none beside the CPU variants (a build without Vulkan or CUDA, or EDGEPROBE_NO_GPU)\n";
  std::string out = "GPU backends (llama.cpp):\n";
  for (const auto& b : backends) {
    if (!b.error.empty()) {
      out += fmt::format("  {}: did not load: {} ({})\n", b.name, one_line(b.error, 300), b.library_path);
      continue;
    }
    if (b.devices.empty())
      out += fmt::format("  {}: loaded, no device (a CPU-type Vulkan device such as lavapipe is skipped unless "
                         "GGML_VK_VISIBLE_DEVICES names it; else no driver)\n",
                         b.name);
    for (const auto& d : b.devices)
      out += fmt::format("  {}: {} ({}, {}, {} MiB)\n", b.name, d.name, one_line(d.description, 200), d.type,
                         d.memory_total >> 20);
  }
  return out;
}

}  // namespace edgeprobe::report
