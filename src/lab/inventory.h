#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace edgeprobe::lab {

// One device of the lab, as the inventory describes it after group variables were merged
// (a host's own variables win over its groups', a child group's over its parent's).
struct Device {
  std::string name;
  std::string transport;                      // local | ssh | adb
  std::string host;                           // ssh: an alias of ~/.ssh/config or a host name (ansible_host)
  std::string user;                           // ssh: login user (ansible_user); "" = ssh's own choice
  int port = 0;                               // ssh: 0 = ssh's own choice (ansible_port)
  std::string serial;                         // adb: a serial or a host:port endpoint (adb connect)
  std::string workdir;                        // where bundles, models and plans go on the device
  std::string arch;                           // "" = ask the device (uname -m); else aarch64 | x86_64
  std::map<std::string, std::string> labels;  // soc, os, tier and any other label
  std::vector<std::string> groups;            // every group the device is in, outermost first
  std::string origin;                         // "FILE:LINE" where the host was (first) declared
};

struct Inventory {
  std::string path;
  std::vector<Device> devices;                             // in file order
  std::map<std::string, std::vector<std::string>> groups;  // group -> device names (children included)
  const Device& device(const std::string& name) const;     // throws kBadInput
};

// Reads an Ansible-style YAML inventory: top-level groups (usually `all`), each with
// `hosts` (name -> variables), `vars` and `children` (name -> group). Variables:
// transport (or ansible_connection local|ssh), host/ansible_host, user/ansible_user,
// port/ansible_port, serial, workdir, arch, labels (a map) and soc/os/tier as labels.
// Throws Error(kBadInput) "FILE:LINE: problem" for anything it cannot use.
Inventory load_inventory(const std::string& path);
Inventory parse_inventory(const std::string& text, const std::string& path);

// The devices named by --devices (comma list) and --group (comma list); both empty = all.
// An unknown name is bad input.
std::vector<Device> select_devices(const Inventory& inventory, const std::string& devices,
                                   const std::string& groups);

nlohmann::json to_json(const Device& device);
Device device_from_json(const nlohmann::json& j);  // what to_json wrote (a stored lab run)

}  // namespace edgeprobe::lab
