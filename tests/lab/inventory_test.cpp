// The lab inventory: Ansible-style YAML, group variables, selection, and bad input
// naming the file, the line and the problem.
#include "lab/inventory.h"

#include <gtest/gtest.h>

#include "core/error.h"

using namespace edgeprobe;
using namespace edgeprobe::lab;

namespace {

constexpr const char* kLab = R"(all:
  vars:
    workdir: /opt/ep
  hosts:
    this-pc:
      transport: local
      workdir: /tmp/ep-local
  children:
    phones:
      vars:
        transport: adb
        os: android
      hosts:
        pixel8:
          serial: 192.168.1.20:5555
          soc: tensor-g3
          tier: flagship
          workdir: /data/local/tmp/edgeprobe
        a14:
          serial: R58M123
          labels: {soc: exynos850, tier: budget}
    boards:
      children:
        arm:
          hosts:
            rpi5:
              ansible_host: 10.0.0.5
              ansible_user: pi
              ansible_port: 2222
              arch: arm64
            jetson:
)";

std::string error_of(const std::string& text) {
  try {
    parse_inventory(text, "lab.yml");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Inventory, ReadsHostsGroupsAndInheritedVariables) {
  const Inventory inv = parse_inventory(kLab, "lab.yml");
  ASSERT_EQ(inv.devices.size(), 5u);
  const Device& pc = inv.device("this-pc");
  EXPECT_EQ(pc.transport, "local");
  EXPECT_EQ(pc.workdir, "/tmp/ep-local");  // the host's own value beats the group's
  const Device& pixel = inv.device("pixel8");
  EXPECT_EQ(pixel.transport, "adb");
  EXPECT_EQ(pixel.serial, "192.168.1.20:5555");
  EXPECT_EQ(pixel.labels.at("soc"), "tensor-g3");
  EXPECT_EQ(pixel.labels.at("os"), "android");  // from the group's vars
  EXPECT_EQ(pixel.origin, "lab.yml:14");
  EXPECT_EQ(inv.device("a14").labels.at("tier"), "budget");
  EXPECT_EQ(inv.device("a14").workdir, "/opt/ep");  // all's vars reach a child group's host
  const Device& rpi = inv.device("rpi5");
  EXPECT_EQ(rpi.transport, "ssh");  // Ansible's default connection
  EXPECT_EQ(rpi.host, "10.0.0.5");
  EXPECT_EQ(rpi.user, "pi");
  EXPECT_EQ(rpi.port, 2222);
  EXPECT_EQ(rpi.arch, "aarch64");
  EXPECT_EQ(inv.device("jetson").host, "jetson");  // no host: the name is the ssh alias
  EXPECT_EQ(rpi.groups, (std::vector<std::string>{"all", "boards", "arm"}));
  EXPECT_EQ(inv.groups.at("boards"), (std::vector<std::string>{"rpi5", "jetson"}));
}

TEST(Inventory, SelectsByDeviceAndGroup) {
  const Inventory inv = parse_inventory(kLab, "lab.yml");
  EXPECT_EQ(select_devices(inv, "", "").size(), 5u);
  auto names = [](const std::vector<Device>& ds) {
    std::vector<std::string> out;
    for (const auto& d : ds) out.push_back(d.name);
    return out;
  };
  EXPECT_EQ(names(select_devices(inv, "", "phones")), (std::vector<std::string>{"pixel8", "a14"}));
  EXPECT_EQ(names(select_devices(inv, "this-pc", "arm")),
            (std::vector<std::string>{"this-pc", "rpi5", "jetson"}));
  EXPECT_EQ(names(select_devices(inv, "a14,pixel8", "")),
            (std::vector<std::string>{"pixel8", "a14"}));  // file order
  EXPECT_THROW(select_devices(inv, "nokia", ""), Error);
  EXPECT_THROW(select_devices(inv, "", "tablets"), Error);
}

TEST(Inventory, DeviceRoundTripsThroughJson) {
  const Inventory inv = parse_inventory(kLab, "lab.yml");
  const Device d = device_from_json(to_json(inv.device("rpi5")));
  EXPECT_EQ(to_json(d), to_json(inv.device("rpi5")));
}

TEST(Inventory, BadInventoriesNameFileLineAndProblem) {
  EXPECT_EQ(error_of("all:\n  hosts:\n    a: {transport: telnet}\n"),
            "lab.yml:3: host 'a': transport 'telnet': use local, ssh or adb");
  EXPECT_EQ(error_of("all:\n  hosts:\n    p:\n      transport: adb\n"),
            "lab.yml:3: host 'p': an adb device needs a serial (from 'adb devices', or host:port)");
  EXPECT_EQ(error_of("all:\n  hosts:\n    b:\n      port: 99999\n"),
            "lab.yml:4: host 'b': port '99999': use 1..65535");
  EXPECT_EQ(
      error_of("all:\n  hosts:\n    b:\n      trasnport: ssh\n"),
      "lab.yml:4: host 'b': unknown variable 'trasnport' (use transport, host, user, port, serial, workdir, "
      "arch, labels, soc, os, tier)");
  EXPECT_EQ(error_of("all:\n  hostz:\n    b:\n"),
            "lab.yml:2: unknown key 'hostz' in group 'all' (use hosts, vars, children)");
  EXPECT_EQ(error_of("all:\n  hosts:\n    b:\n      arch: mips\n"),
            "lab.yml:4: host 'b': arch 'mips': use aarch64 or x86_64");
  EXPECT_EQ(error_of("all:\n  hosts: [a, b]\n"),
            "lab.yml:2: hosts of group 'all' must be a map of host names");
  EXPECT_EQ(error_of(""), "lab.yml:1: the inventory is empty (expected groups such as 'all:')");
  EXPECT_EQ(error_of("all:\n  children:\n    g:\n"), "lab.yml:1: the inventory has no hosts");
  const std::string yaml_error = error_of("all:\n  hosts:\n    a: {transport: local\n    b: x\n");
  EXPECT_TRUE(yaml_error.starts_with("lab.yml:")) << yaml_error;
  EXPECT_EQ(error_of("all:\n  hosts:\n    b:\n      workdir: \"/tmp/it's\"\n"),
            "lab.yml:4: host 'b': workdir '/tmp/it's' has shell quoting characters");
}

TEST(Inventory, AMissingFileIsBadInput) {
  try {
    load_inventory("/nonexistent/lab.yml");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_STREQ(e.what(), "/nonexistent/lab.yml: cannot read the inventory");
  }
}
