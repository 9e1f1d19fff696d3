#pragma once
#include <map>
#include <string>

#include "core/digest.h"

namespace edgeprobe {
class FsRoot;
}

namespace edgeprobe::platform {

// Who a device is: what results store as provenance.device and what `lab check` shows.
struct DeviceIdentity {
  std::string id;         // "dev-" + 16 hex digits (device_id_from)
  std::string arch;       // uname machine: x86_64, aarch64
  std::string cpu_model;
  std::string soc;        // e.g. Android ro.soc.model, a device tree's SoC
  std::string board;      // phone or board model (getprop, device tree, DMI)
  std::string os;         // "Debian GNU/Linux 12 (bookworm)", "Android 14"
  std::string kernel;     // "Linux 6.1.0 x86_64"
  std::string hostname;
};

// The raw facts identity is decided from. A run reads them from its own files
// (read_identity_facts); the lab's sh probe sends them back from a device
// (identity_facts_script). One rule, identity_from, names the device from either, so a
// device has the same names and id in `lab check` as in the results it writes.
struct IdentityFacts {
  std::map<std::string, std::string> android;     // getprop, then build.prop files (getprop wins)
  std::map<std::string, std::string> os_release;  // /etc/os-release
  std::string device_tree_model;                  // /proc/device-tree/model
  std::string device_tree_soc;                    // the last /proc/device-tree/compatible entry
  std::string dmi_vendor, dmi_product;            // /sys/class/dmi/id
  std::string machine_id;                         // /etc/machine-id
  std::string hostname, kernel, arch;             // kernel: "Linux 6.1.0 x86_64"
  std::string cpuinfo;                            // /proc/cpuinfo (the lines identity reads)
};

IdentityFacts read_identity_facts(const FsRoot& fs);
DeviceIdentity identity_from(const IdentityFacts& facts);
// The device this process runs on, read under `fs` (a fixture tree stands in for a phone).
DeviceIdentity detect_device(const FsRoot& fs);

// "dev-" + the first 16 hex digits of SHA-256(machine_key + "\n" + cpu_model): one id per
// machine and CPU, stable across runs, that does not publish the machine key itself.
// Inline: result/ names v1 runs by it without linking the rest of platform.
inline std::string device_id_from(const std::string& machine_key, const std::string& cpu_model) {
  return "dev-" + sha256_hex(machine_key + "\n" + cpu_model).substr(0, 16);
}

// POSIX sh (Android's mksh and toybox, busybox) printing the facts as key=value lines, one
// fact or one line of a file per line, and the parser of one such line (false: not an
// identity key).
std::string identity_facts_script();
bool add_identity_fact(const std::string& key, const std::string& value, IdentityFacts& facts);

}  // namespace edgeprobe::platform
