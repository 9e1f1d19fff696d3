// The lab inventory: Ansible-style YAML, group variables, selection, and bad input
// naming the file, the line and the problem.
#include "lab/inventory.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

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
      "arch, labels, soc, os, tier, lava_device_type, lava_tags)");
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

// Hostile inventories: each refused with one line naming the file, the line and the
// problem, within bounded memory and time; nothing from one ever reaches a command as an
// option.
namespace {

size_t lines_in(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST(InventoryHostile, ABillionLaughsIsRefusedWithBoundedMemory) {
  // Nine levels of ten aliases: 10^9 copies of "lol" if expanded.
  std::string yaml = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int i = 1; i <= 9; ++i) {
    yaml += fmt::format("a{}: &a{} [", i, i);
    for (int k = 0; k < 10; ++k) yaml += fmt::format("{}*a{}", k ? ", " : "", i - 1);
    yaml += "]\n";
  }
  yaml += "all:\n  hosts:\n    h: {labels: {x: *a9}}\n";
  const auto t0 = std::chrono::steady_clock::now();
  const std::string why = error_of(yaml);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  EXPECT_NE(why.find("expands to over 128 MiB"), std::string::npos) << why;
  EXPECT_TRUE(why.starts_with("lab.yml:")) << why;
}

TEST(InventoryHostile, DeepNestingIsRefused) {
  const std::string deep = "all: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
  const std::string why = error_of(deep);
  EXPECT_EQ(why, "lab.yml:1: nested deeper than 64 levels; an inventory needs a few");
  std::string maps = "all:\n";
  for (int i = 0; i < 200; ++i) maps += std::string(2 * i + 2, ' ') + fmt::format("k{}:\n", i);
  EXPECT_NE(error_of(maps).find("nested deeper than 64 levels"), std::string::npos);
}

TEST(InventoryHostile, DuplicateHostsAndDevicesAreRefused) {
  EXPECT_EQ(error_of("all:\n  hosts:\n    a: {transport: local}\n    b: {transport: local}\n"
                     "    a: {transport: local}\n"),
            "lab.yml:5: 'a' appears twice in one map (first at line 3); name each once");
  EXPECT_EQ(error_of("all:\n  hosts:\n    a: {host: 10.0.0.5}\n    b: {ansible_host: 10.0.0.5}\n"),
            "lab.yml:4: host 'b' is the device of host 'a' (line 3) again (ssh 10.0.0.5); list each device once");
  EXPECT_EQ(error_of("all:\n  hosts:\n    p: {transport: adb, serial: R58}\n    q: {transport: adb, serial: R58}\n"),
            "lab.yml:4: host 'q' is the device of host 'p' (line 3) again (adb R58); list each device once");
  // One host in two groups is one device in both, as in Ansible.
  const auto inv = parse_inventory(
      "all:\n  children:\n    x: {hosts: {a: {host: 10.0.0.5}}}\n    y: {hosts: {a: }}\n", "lab.yml");
  EXPECT_EQ(inv.devices.size(), 1u);
  EXPECT_EQ(inv.device("a").groups, (std::vector<std::string>{"all", "x", "y"}));
}

TEST(InventoryHostile, NothingMayBeginWithADash) {
  EXPECT_EQ(error_of("all:\n  hosts:\n    -oProxyCommand=touch x:\n"),
            "lab.yml:3: host '-oProxyCommand=touch x': a name cannot begin with '-', hold '/' or be '.' or '..'");
  EXPECT_EQ(error_of("all:\n  hosts:\n    a:\n      ansible_host: -oProxyCommand=touch x\n"),
            "lab.yml:4: host 'a': host '-oProxyCommand=touch x' begins with '-' (a command would read it as an "
            "option); refused");
  EXPECT_NE(error_of("all:\n  hosts:\n    a: {user: -F/tmp/cfg}\n").find("user '-F/tmp/cfg' begins with '-'"),
            std::string::npos);
  EXPECT_NE(error_of("all:\n  hosts:\n    p: {transport: adb, serial: -d}\n").find("serial '-d' begins with '-'"),
            std::string::npos);
  EXPECT_NE(error_of("all:\n  hosts:\n    p: {transport: local, workdir: -rf}\n").find("workdir '-rf' begins"),
            std::string::npos);
  EXPECT_NE(error_of("all:\n  hosts:\n    ../../etc: {transport: local}\n").find("hold '/'"), std::string::npos);
}

TEST(InventoryHostile, ControlCharactersAreRefusedAndShownEscaped) {
  for (const std::string& yaml : {std::string("all:\n  hosts:\n    \"evil\\nname\\e[2J\": {transport: local}\n"),
                                  std::string("all:\n  hosts:\n    a: {transport: local, workdir: \"/tmp/x\\ny\"}\n"),
                                  std::string("all:\n  hosts:\n    a:\n      labels: {soc: \"\\e]0;title\\a\"}\n")}) {
    const std::string why = error_of(yaml);
    SCOPED_TRACE(why);
    EXPECT_EQ(lines_in(why), 0u);
    EXPECT_EQ(why.find('\x1b'), std::string::npos);
    EXPECT_NE(why.find("holds a control character"), std::string::npos);
  }
  EXPECT_NE(error_of("all:\n  hosts:\n    \"a\\e[31m\": {transport: local}\n").find("a\\x1b[31m"), std::string::npos);
}

TEST(InventoryHostile, HugeValuesAndFilesAreRefusedShort) {
  const std::string why = error_of("all:\n  hosts:\n    " + std::string(5 << 20, 'h') + ": {transport: local}\n");
  EXPECT_EQ(why, "lab.yml:3: a value of 5242880 bytes; inventory values are names and paths (at most 1024)");
  try {
    load_inventory("/dev/zero");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "/dev/zero: the inventory is over 16 MiB; refused");
  }
}

TEST(InventoryHostile, ShellMetacharactersAreKeptAsText) {
  // Accepted as names and labels (they are only ever quoted, never run): the values stay as written.
  const auto inv = parse_inventory(
      "all:\n  hosts:\n    \"a;touch pwned\":\n      transport: local\n      labels: {soc: \"$(touch pwned)`id`\"}\n",
      "lab.yml");
  EXPECT_EQ(inv.devices.at(0).name, "a;touch pwned");
  EXPECT_EQ(inv.devices.at(0).labels.at("soc"), "$(touch pwned)`id`");
}

TEST(InventoryHostile, TenThousandHostsLoadQuickly) {
  std::string yaml = "all:\n  hosts:\n";
  for (int i = 0; i < 10000; ++i) yaml += fmt::format("    h{}: {{host: 127.1.{}.{}, port: 1}}\n", i, i / 250, i % 250 + 1);
  const auto t0 = std::chrono::steady_clock::now();
  const auto inv = parse_inventory(yaml, "lab.yml");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(inv.devices.size(), 10000u);
  EXPECT_EQ(inv.groups.at("all").size(), 10000u);
  EXPECT_LT(s, 5.0);
}
