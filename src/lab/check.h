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

// Asks every device about itself, all at once (a device that does not answer costs its
// own timeout, not the others').
std::vector<CheckRow> check_devices(const std::vector<Device>& devices, double timeout_s = 30);

std::string check_table(const std::vector<CheckRow>& rows);  // markdown
nlohmann::json to_json(const std::vector<CheckRow>& rows);

}  // namespace edgeprobe::lab
