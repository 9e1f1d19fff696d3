#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lab/device_state.h"
#include "lab/inventory.h"

namespace edgeprobe::lab {

struct CheckRow {
  Device device;
  DeviceState state;
  std::string bundle;  // the bundle this device needs (directory name); "" if its arch is unknown
  bool bundle_present = false;
};

// Asks every device about itself, `workers` devices at a time (a device that does not
// answer costs its worker its timeout, not the others'): at most
// ceil(devices / workers) * timeout_s in all, and `workers` threads whatever the count.
inline constexpr int kCheckWorkers = 32;
std::vector<CheckRow> check_devices(const std::vector<Device>& devices, double timeout_s = 30,
                                    int workers = kCheckWorkers);

nlohmann::json to_json(const std::vector<CheckRow>& rows);

}  // namespace edgeprobe::lab
