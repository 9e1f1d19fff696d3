#pragma once
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace edgeprobe::platform {

// A Vulkan physical device as the driver describes it, read through the Vulkan loader
// itself rather than through ggml: ggml-vulkan skips CPU-type devices (Mesa's lavapipe)
// without a word unless GGML_VK_VISIBLE_DEVICES names them, so "Vulkan found no device"
// needs this list to say which device was there and why it was passed over.
struct VulkanDevice {
  std::string name;    // "llvmpipe (LLVM 15.0.6, 256 bits)", "Mali-G610"
  std::string type;    // "cpu", "discrete", "integrated", "virtual", "other"
  std::string api_version;  // "1.3.230"
};

struct VulkanInventory {
  bool loader_found = false;
  std::string error;  // why the list is empty: no loader, no ICD, instance refused
  std::vector<VulkanDevice> devices;
};

// dlopens libvulkan.so.1 (no link-time dependency: a machine without Vulkan still runs
// edgeprobe), makes an instance, lists the devices, and lets everything go.
VulkanInventory list_vulkan_devices();
nlohmann::json to_json(const VulkanInventory& inventory);

}  // namespace edgeprobe::platform
