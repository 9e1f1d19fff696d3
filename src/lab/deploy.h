#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lab/device_state.h"
#include "lab/inventory.h"
#include "lab/transport.h"

namespace edgeprobe::lab {

// dist/edgeprobe-VERSION-linux-TARGET.tar.gz as scripts/package.sh writes it.
std::string bundle_name(const std::string& target);  // without .tar.gz
std::string bundle_file(const std::string& dist_dir,
                        const std::string& target);  // throws kEnvironment if absent

struct DeployedFile {
  std::string what;  // "bundle", "model"
  std::string local, remote, sha256;
  bool skipped = false;  // already on the device with this SHA-256
};

struct DeployResult {
  std::vector<DeployedFile> files;
  std::string launcher;  // how to start edgeprobe on the device (a shell word)
  // Model spec/path on the controller -> the path the device reads it from.
  std::vector<std::pair<std::string, std::string>> models;
};

struct DeployOptions {
  std::string dist_dir = "dist";
  double timeout_s = 1800;  // per file: a model over a slow link takes minutes
};

// Puts the device's bundle and the given models (resolved local paths) into its workdir.
// Each file goes to NAME.part, its SHA-256 is checked on the device, and only then is it
// renamed and marked complete (NAME.sha256, or .complete inside an unpacked bundle), so
// an interrupted copy is never taken for a complete one and the next deploy redoes it.
// A local device runs the controller's own binary and reads models in place.
// Throws Error(kEnvironment) naming the device and the step that failed.
DeployResult deploy(Transport& transport, const Device& device, const DeviceState& state,
                    const std::vector<std::string>& models, const DeployOptions& options);

nlohmann::json to_json(const DeployResult& result);

// `lab deploy`: each device in turn; a device that fails keeps its error and the others
// go on.
struct DeviceDeploy {
  std::string device;
  DeployResult result;
  std::string error;  // "" when deployed
  int exit_code = 0;
};
std::vector<DeviceDeploy> deploy_devices(const std::vector<Device>& devices,
                                         const std::vector<std::string>& models,
                                         const DeployOptions& options);
nlohmann::json to_json(const std::vector<DeviceDeploy>& results);

}  // namespace edgeprobe::lab
