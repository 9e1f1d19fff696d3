// GPU discovery: Adreno through kgsl, Mali and Jetson iGPUs through devfreq. Each is
// recognised by what the kernel says about it (class, device-tree node), never by board.
#include <algorithm>
#include <array>

#include "telemetry/file_reader.h"
#include "telemetry/layout.h"

namespace edgeprobe::telemetry {
namespace {

const char kKgslDir[] = "/sys/class/kgsl";
const char kDevfreqDir[] = "/sys/class/devfreq";

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// The highest clock of a space-separated list of Hz ("available_frequencies").
std::optional<int64_t> highest_hz(const FsRoot& fs, const std::string& path) {
  const auto text = fs.read_text(path);
  if (!text) return std::nullopt;
  std::optional<int64_t> top;
  std::string_view rest(*text);
  long long hz = 0;
  for (auto token = next_token(&rest); !token.empty(); token = next_token(&rest)) {
    if (parse_ll(token, &hz) && hz > 0) top = std::max<int64_t>(top.value_or(0), hz);
  }
  return top;
}

// The first of `candidates` under dir that reads as a number, "" when none; `why` keeps
// the reason the first one failed.
std::string first_readable(const FsRoot& fs, const std::string& dir,
                           std::initializer_list<const char*> candidates, std::string* why) {
  for (const char* name : candidates) {
    if (fs.read_int(dir + "/" + name)) return dir + "/" + name;
    if (why->empty()) *why = dir + "/" + name + " " + fs.last_error();
  }
  return "";
}

// Reads what every GPU has at discovery: clock, cap, busy. A file that is there but
// unreadable or not in its format is one unavailable line and no series.
void read_now(const FsRoot& fs, Gpu* gpu, std::vector<std::string>* unavailable) {
  const std::string what = "gpu " + gpu->name;
  auto check_int = [&](std::string* path, std::optional<int64_t>* out, const char* label) {
    if (path->empty()) return;
    if (const auto value = fs.read_int(*path)) {
      *out = *value;
      return;
    }
    unavailable->push_back(what + " " + label + ": unavailable: " + *path + " " + fs.last_error());
    path->clear();
  };
  check_int(&gpu->freq_path, &gpu->cur_hz, "clock");
  check_int(&gpu->cap_path, &gpu->cap_hz, "clock cap");
  if (!gpu->max_hz) gpu->max_hz = gpu->cap_hz;  // no frequency table: the cap seen now
  if (!gpu->busy_path.empty()) {
    const auto text = fs.read_text(gpu->busy_path);
    gpu->busy_share = text ? parse_gpu_busy(*text, gpu->busy_format) : std::nullopt;
    if (!gpu->busy_share) {
      unavailable->push_back(what + " busy: unavailable: " + gpu->busy_path + " " +
                             (text ? "malformed: '" + *text + "'" : fs.last_error()));
      gpu->busy_path.clear();
      gpu->busy_format = GpuBusyFormat::kNone;
    }
  }
}

// Temperature in the unit its magnitude says (millidegrees by the thermal ABI).
void read_temp(const FsRoot& fs, Gpu* gpu, std::vector<std::string>* unavailable) {
  if (gpu->temp_path.empty()) return;
  if (const auto raw = fs.read_int(gpu->temp_path)) {
    gpu->temp_divisor = guess_temp_divisor(*raw);
    gpu->temp_c = normalise_temp_c(*raw, gpu->temp_divisor);
    return;
  }
  unavailable->push_back("gpu " + gpu->name + " temp: unavailable: " + gpu->temp_path + " " +
                         fs.last_error());
  gpu->temp_path.clear();
}

// Adreno: /sys/class/kgsl/kgsl-3d0 (kgsl_pwrctrl.c): gpuclk and max_gpuclk in Hz (the
// latter follows the thermal power level), gpu_busy_percentage, gpu_model, temp.
std::optional<Gpu> kgsl_gpu(const FsRoot& fs, const std::string& name,
                            std::vector<std::string>* unavailable) {
  Gpu gpu;
  gpu.kind = "kgsl";
  gpu.name = name;
  gpu.dir = std::string(kKgslDir) + "/" + name;
  std::string why;
  gpu.freq_path = first_readable(fs, gpu.dir, {"gpuclk", "devfreq/cur_freq"}, &why);
  if (gpu.freq_path.empty()) unavailable->push_back("gpu " + name + " clock: unavailable: " + why);
  why.clear();
  gpu.cap_path = first_readable(fs, gpu.dir, {"max_gpuclk", "devfreq/max_freq"}, &why);
  if (fs.exists(gpu.dir + "/gpu_busy_percentage")) {
    gpu.busy_path = gpu.dir + "/gpu_busy_percentage";
    gpu.busy_format = GpuBusyFormat::kPercent;
  } else if (fs.exists(gpu.dir + "/gpubusy")) {
    gpu.busy_path = gpu.dir + "/gpubusy";
    gpu.busy_format = GpuBusyFormat::kBusyTotal;
  }
  if (fs.exists(gpu.dir + "/temp")) gpu.temp_path = gpu.dir + "/temp";
  gpu.model = fs.read_text(gpu.dir + "/gpu_model").value_or("");
  gpu.governor = fs.read_text(gpu.dir + "/devfreq/governor").value_or("");
  gpu.min_hz = fs.read_int(gpu.dir + "/devfreq/min_freq");
  gpu.max_hz = highest_hz(fs, gpu.dir + "/gpu_available_frequencies");
  if (!gpu.max_hz) gpu.max_hz = highest_hz(fs, gpu.dir + "/devfreq/available_frequencies");
  read_now(fs, &gpu, unavailable);
  read_temp(fs, &gpu, unavailable);
  if (gpu.freq_path.empty() && gpu.busy_path.empty()) return std::nullopt;
  return gpu;
}

// "nvidia,ga10b\0nvidia,gpu\0" -> its entries.
std::vector<std::string> split_nul(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\0', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// "ga10b" of the first "nvidia,ga10b" among the compatible strings, "" when none.
std::string nvidia_model(const std::vector<std::string>& compatible) {
  for (const auto& c : compatible) {
    if (c.rfind("nvidia,", 0) == 0) return c.substr(7);
  }
  return "";
}

// Jetson's iGPU node names (jetson_stats jtop/core/gpu.py: gv11b Xavier, gp10b TX2, ga10b
// Orin; gb10b Thor). JetPack 6 names the Orin node "gpu": its compatible says nvidia.
bool is_jetson_gpu(const std::string& of_name, const std::vector<std::string>& compatible) {
  static const std::array<const char*, 4> kNames = {"ga10b", "gv11b", "gp10b", "gb10b"};
  if (std::find(kNames.begin(), kNames.end(), of_name) != kNames.end()) return true;
  return contains(of_name, "gpu") && !nvidia_model(compatible).empty();
}

// A devfreq device that is a GPU: Jetson's, or a Mali (`<addr>.gpu`, node "gpu").
std::optional<Gpu> devfreq_gpu(const FsRoot& fs, const std::string& name,
                               std::vector<std::string>* unavailable) {
  if (contains(name, "kgsl")) return std::nullopt;  // an Adreno, found through /sys/class/kgsl
  const std::string dir = std::string(kDevfreqDir) + "/" + name;
  const std::string of_name = fs.read_text(dir + "/device/of_node/name").value_or("");
  const auto compatible = split_nul(fs.read_text(dir + "/device/of_node/compatible").value_or(""));
  Gpu gpu;
  if (is_jetson_gpu(of_name, compatible)) {
    gpu.kind = "jetson";
    // Per mille of the last window, on the GPU device (jtop: load / 10 = %).
    gpu.busy_path = dir + "/device/load";
    gpu.busy_format = GpuBusyFormat::kPerMille;
    gpu.model = contains(of_name, "gpu") ? nvidia_model(compatible) : of_name;
  } else if ((name.size() > 4 && name.ends_with(".gpu")) || of_name == "gpu") {
    gpu.kind = "mali";
    // Rockchip's devfreq adds "load" ("<busy %>@<Hz>Hz"); mainline panfrost/panthor have none.
    if (fs.exists(dir + "/load")) {
      gpu.busy_path = dir + "/load";
      gpu.busy_format = GpuBusyFormat::kLoadAtFreq;
    } else {
      unavailable->push_back("gpu " + name + " busy: unavailable: no " + dir +
                             "/load (mainline panfrost/panthor devfreq has none)");
    }
    // kbase's gpuinfo: "Mali-G610 4 cores r0p0 0xA867"; else the node's compatible.
    const std::string gpuinfo = fs.read_text(dir + "/device/gpuinfo").value_or("");
    std::string_view info(gpuinfo);
    const std::string_view first = next_token(&info);
    gpu.model = !first.empty() ? std::string(first) : compatible.empty() ? "" : compatible.front();
  } else {
    return std::nullopt;
  }
  gpu.name = name;
  gpu.dir = dir;
  gpu.freq_path = dir + "/cur_freq";
  gpu.cap_path = dir + "/max_freq";  // devfreq's max_freq includes thermal and QoS limits
  gpu.governor = fs.read_text(dir + "/governor").value_or("");
  gpu.min_hz = fs.read_int(dir + "/min_freq");
  gpu.max_hz = highest_hz(fs, dir + "/available_frequencies");
  read_now(fs, &gpu, unavailable);
  if (gpu.freq_path.empty() && gpu.busy_path.empty()) return std::nullopt;
  return gpu;
}

// A thermal zone of the GPU's own ("gpu-thermal" on RK3588 and Jetson), by type.
std::string gpu_zone_temp_path(const FsRoot& fs) {
  for (const auto& zone : fs.list_dir(kThermalDir)) {
    const std::string dir = std::string(kThermalDir) + "/" + zone;
    const std::string type = fs.read_text(dir + "/type").value_or("");
    if (type == "gpu-thermal" || type == "gpu_thermal" || type == "gpu") return dir + "/temp";
  }
  return "";
}

// The INA3221 rail that feeds the GPU (NVIDIA's Jetson power guides; upstream "arm64:
// tegra: Add power-sensors for Tegra234 boards"): its own share of a rail, never alone.
void name_rail(const std::vector<PowerRail>& rails, Gpu* gpu) {
  static const std::array<std::pair<const char*, const char*>, 2> kKnown = {
      {{"VDD_GPU_SOC", "the SoC"}, {"VDD_CPU_GPU_CV", "the CPU and the CV engines"}}};
  for (const auto& [label, shared] : kKnown) {
    for (const auto& r : rails) {
      if (r.label != label) continue;
      gpu->rail = r.label;
      gpu->rail_shared_with = shared;
      return;
    }
  }
  for (const auto& r : rails) {
    if (contains(r.label, "GPU")) {
      gpu->rail = r.label;
      return;
    }
  }
}

}  // namespace

std::optional<double> parse_gpu_busy(std::string_view text, GpuBusyFormat format) {
  long long a = 0, b = 0;
  switch (format) {
    case GpuBusyFormat::kPercent: {  // "37 %"
      const auto token = next_token(&text);
      if (!parse_ll(token, &a) || a < 0 || a > 100) return std::nullopt;
      return static_cast<double>(a) / 100.0;
    }
    case GpuBusyFormat::kBusyTotal: {  // "busy total": an idle GPU reads "0 0"
      if (!parse_ll(next_token(&text), &a) || !parse_ll(next_token(&text), &b) || a < 0 || b < 0 || a > b)
        return std::nullopt;
      return b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b);
    }
    case GpuBusyFormat::kLoadAtFreq: {  // "37@300000000Hz"
      const size_t at = text.find('@');
      if (at == std::string_view::npos || !parse_ll(text.substr(0, at), &a) || a < 0 || a > 100)
        return std::nullopt;
      return static_cast<double>(a) / 100.0;
    }
    case GpuBusyFormat::kPerMille: {
      if (!parse_ll(text, &a) || a < 0 || a > 1000) return std::nullopt;
      return static_cast<double>(a) / 1000.0;
    }
    case GpuBusyFormat::kNone:
      break;
  }
  return std::nullopt;
}

GpuLayout discover_gpus(const FsRoot& fs, const std::vector<PowerRail>& rails) {
  GpuLayout layout;
  for (const auto& name : fs.list_dir(kKgslDir)) {
    if (name.rfind("kgsl-3d", 0) != 0) continue;
    if (auto gpu = kgsl_gpu(fs, name, &layout.unavailable)) layout.gpus.push_back(std::move(*gpu));
  }
  for (const auto& name : fs.list_dir(kDevfreqDir)) {
    if (auto gpu = devfreq_gpu(fs, name, &layout.unavailable)) layout.gpus.push_back(std::move(*gpu));
  }
  // A zone named for the GPU is its temperature when there is one such GPU to give it to.
  const auto without_temp =
      std::count_if(layout.gpus.begin(), layout.gpus.end(), [](const Gpu& g) { return g.temp_path.empty(); });
  if (without_temp == 1 && layout.gpus.size() == 1) {
    Gpu& gpu = layout.gpus.front();
    gpu.temp_path = gpu_zone_temp_path(fs);
    read_temp(fs, &gpu, &layout.unavailable);
  }
  for (auto& gpu : layout.gpus) {
    if (gpu.kind == "jetson") name_rail(rails, &gpu);
  }
  return layout;
}

}  // namespace edgeprobe::telemetry
