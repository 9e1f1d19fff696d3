#include "platform/vulkan_devices.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#if __has_include(<vulkan/vulkan.h>)
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>
#define EDGEPROBE_HAS_VULKAN_HEADERS 1
#endif

namespace edgeprobe::platform {
#ifdef EDGEPROBE_HAS_VULKAN_HEADERS
namespace {

const char* type_name(VkPhysicalDeviceType type) {
  switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    default: return "other";
  }
}

// The loader and the few entry points needed, closed again when done.
class Loader {
 public:
  Loader() : handle_(dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL)) {}
  ~Loader() {
    if (handle_) dlclose(handle_);
  }
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;
  bool found() const { return handle_ != nullptr; }
  PFN_vkGetInstanceProcAddr get_proc() const {
    return reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(handle_, "vkGetInstanceProcAddr"));
  }

 private:
  void* handle_;
};

}  // namespace

VulkanInventory list_vulkan_devices() {
  VulkanInventory inv;
  Loader loader;
  if (!loader.found()) {
    const char* why = dlerror();
    inv.error = fmt::format("no Vulkan loader: {}", why ? why : "libvulkan.so.1 not found");
    return inv;
  }
  inv.loader_found = true;
  const auto get_proc = loader.get_proc();
  const auto create = get_proc ? reinterpret_cast<PFN_vkCreateInstance>(get_proc(nullptr, "vkCreateInstance")) : nullptr;
  if (!create) {
    inv.error = "the Vulkan loader has no vkCreateInstance";
    return inv;
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO, nullptr, "edgeprobe", 1, nullptr, 0, VK_API_VERSION_1_1};
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, nullptr, 0, &app, 0, nullptr, 0, nullptr};
  VkInstance instance = VK_NULL_HANDLE;
  if (const VkResult rc = create(&info, nullptr, &instance); rc != VK_SUCCESS) {
    inv.error = rc == VK_ERROR_INCOMPATIBLE_DRIVER ? "no Vulkan driver (ICD) is installed for any device"
                                                   : fmt::format("vkCreateInstance failed (VkResult {})", static_cast<int>(rc));
    return inv;
  }
  const auto destroy = reinterpret_cast<PFN_vkDestroyInstance>(get_proc(instance, "vkDestroyInstance"));
  const auto enumerate = reinterpret_cast<PFN_vkEnumeratePhysicalDevices>(get_proc(instance, "vkEnumeratePhysicalDevices"));
  const auto properties =
      reinterpret_cast<PFN_vkGetPhysicalDeviceProperties>(get_proc(instance, "vkGetPhysicalDeviceProperties"));
  uint32_t count = 0;
  if (enumerate && properties && enumerate(instance, &count, nullptr) == VK_SUCCESS && count > 0) {
    std::vector<VkPhysicalDevice> devices(count);
    if (enumerate(instance, &count, devices.data()) == VK_SUCCESS) {
      for (uint32_t i = 0; i < count; ++i) {
        VkPhysicalDeviceProperties p{};
        properties(devices[i], &p);
        inv.devices.push_back({p.deviceName, type_name(p.deviceType),
                               fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(p.apiVersion), VK_API_VERSION_MINOR(p.apiVersion),
                                           VK_API_VERSION_PATCH(p.apiVersion))});
      }
    }
  }
  if (inv.devices.empty()) inv.error = "the Vulkan loader lists no device";
  if (destroy) destroy(instance, nullptr);
  return inv;
}
#else
// A build without the Vulkan headers (a cross build without libvulkan-dev for its target).
VulkanInventory list_vulkan_devices() { return {false, "this edgeprobe was built without the Vulkan headers", {}}; }
#endif

nlohmann::json to_json(const VulkanInventory& inv) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : inv.devices) devices.push_back({{"name", d.name}, {"type", d.type}, {"api_version", d.api_version}});
  return {{"loader_found", inv.loader_found}, {"error", inv.error}, {"devices", devices}};
}

}  // namespace edgeprobe::platform
