#include <dlfcn.h>
#include <ggml-backend.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>

#include "engine/backend.h"

namespace edgeprobe::engine {
namespace {

std::mutex g_mutex;
std::optional<std::vector<GpuBackendInfo>> g_loaded;

const char* device_type_name(enum ggml_backend_dev_type type) {
  switch (type) {
    case GGML_BACKEND_DEVICE_TYPE_GPU: return "gpu";
    case GGML_BACKEND_DEVICE_TYPE_IGPU: return "igpu";
    case GGML_BACKEND_DEVICE_TYPE_ACCEL: return "accel";
    default: return "other";
  }
}

// libggml-<tag>.so files that are neither the base library nor a CPU variant.
std::vector<std::pair<std::string, std::string>> gpu_libraries(const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> found;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    const std::string file = it->path().filename().string();
    if (!file.starts_with("libggml-") || !file.ends_with(".so")) continue;
    const std::string tag = file.substr(8, file.size() - 8 - 3);
    if (tag.empty() || tag == "base" || tag.starts_with("cpu")) continue;
    found.emplace_back(tag, it->path().string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

GpuBackendInfo load_one(const std::string& tag, const std::string& path) {
  GpuBackendInfo info{tag, path, "", {}};
  // dlopen first, for the reason ggml's own loader drops in a release build
  // ("libvulkan.so.1: cannot open shared object file").
  if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    dlclose(handle);
  } else {
    const char* why = dlerror();
    info.error = why ? why : "dlopen failed";
    return info;
  }
  ggml_backend_reg_t reg = ggml_backend_load(path.c_str());
  if (!reg) {
    // ggml-vulkan gives no backend when vkCreateInstance fails: a loader with no driver.
    info.error = tag == "vulkan"
                     ? "the library loaded but ggml's Vulkan backend did not start: the Vulkan loader found no driver it "
                       "could use (install the GPU's Vulkan driver: Mesa's panvk or turnip, NVIDIA's), or the driver "
                       "refused (-v shows ggml's log)"
                     : "the library loaded but its backend did not initialise (its driver refused; run with -v for "
                       "ggml's log)";
    return info;
  }
  for (size_t i = 0; i < ggml_backend_reg_dev_count(reg); ++i) {
    ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, i);
    GpuDeviceInfo d;
    d.name = ggml_backend_dev_name(dev);
    d.description = ggml_backend_dev_description(dev);
    d.type = device_type_name(ggml_backend_dev_type(dev));
    size_t free = 0, total = 0;
    ggml_backend_dev_memory(dev, &free, &total);
    d.memory_free = free;
    d.memory_total = total;
    info.devices.push_back(std::move(d));
  }
  return info;
}

}  // namespace

const std::vector<GpuBackendInfo>& load_gpu_backends(const std::string& dir_in) {
  std::lock_guard lock(g_mutex);
  if (g_loaded) return *g_loaded;
  g_loaded.emplace();
  if (const char* off = std::getenv("EDGEPROBE_NO_GPU"); off && std::strcmp(off, "0") != 0 && *off) return *g_loaded;
  const std::string dir = dir_in.empty() ? default_backend_dir() : dir_in;
  for (const auto& [tag, path] : gpu_libraries(dir)) g_loaded->push_back(load_one(tag, path));
  return *g_loaded;
}

}  // namespace edgeprobe::engine
