#include "platform/device_identity.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <sstream>

#include "core/error.h"
#include "core/fs.h"
#include "core/subprocess.h"
#include "platform/cpu_features.h"

namespace edgeprobe::platform {
namespace {

// The Android properties identity reads, in order of preference per name. The lab's
// probe asks a device for exactly these (identity_facts_script).
constexpr const char* kOsVersion[] = {"ro.build.version.release", "ro.system.build.version.release"};
constexpr const char* kBoard[] = {"ro.product.model", "ro.product.system.model", "ro.product.vendor.model"};
constexpr const char* kSoc[] = {"ro.soc.model", "ro.board.platform", "ro.hardware"};
constexpr const char* kSerial[] = {"ro.serialno", "ro.boot.serialno"};
constexpr const char* kBuildPropFiles[] = {"/system/build.prop", "/vendor/build.prop", "/odm/etc/build.prop"};
// The cpuinfo lines cpu_model_from_cpuinfo reads; the probe sends only these.
constexpr const char* kCpuinfoKeys = "model name|Hardware|Model|vendor_id|flags|CPU implementer|CPU part|Features";

template <size_t N>
std::string first_of(const std::map<std::string, std::string>& props, const char* const (&keys)[N]) {
  for (const char* k : keys) {
    auto it = props.find(k);
    if (it != props.end() && !it->second.empty()) return it->second;
  }
  return "";
}

// One key=value line (os-release, Android build.prop); quotes around a value are dropped.
void add_property_line(const std::string& line, std::map<std::string, std::string>& props) {
  const auto eq = line.find('=');
  if (line.empty() || line[0] == '#' || eq == std::string::npos) return;
  std::string value = line.substr(eq + 1);
  if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
    value = value.substr(1, value.size() - 2);
  props.emplace(line.substr(0, eq), value);  // the first wins: getprop before build.prop
}

std::map<std::string, std::string> read_properties(const FsRoot& fs, const std::string& path) {
  std::map<std::string, std::string> props;
  const auto text = fs.read_text(path);
  if (!text) return props;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) add_property_line(line, props);
  return props;
}

// Android's property service as `getprop` prints it, one "[key]: [value]" per line. It is
// what the device says at run time: some names live in no build.prop a shell can read (set
// at boot, or on a vendor partition). <root>/system/bin/getprop is Android's own tool; under
// a fixture root a script there stands in for it. Empty when there is none or it fails.
std::map<std::string, std::string> getprop_properties(const FsRoot& fs) {
  std::map<std::string, std::string> props;
  const std::string tool = fs.path("/system/bin/getprop");
  if (access(tool.c_str(), X_OK) != 0) return props;
  SubprocessResult r;
  try {
    r = run_subprocess({tool}, within(10));
  } catch (const Error&) {
    return props;
  }
  if (r.exit_code != 0) return props;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    const auto mid = line.find("]: [");
    if (line.size() < 6 || line.front() != '[' || line.back() != ']' || mid == std::string::npos) continue;
    props[line.substr(1, mid - 1)] = line.substr(mid + 4, line.size() - mid - 5);
  }
  return props;
}

// Device-tree strings end in NUL; compatible is a NUL-separated list, most specific first.
std::string device_tree_text(const FsRoot& fs, const std::string& path, bool last_entry) {
  auto text = fs.read_text(path);
  if (!text) return "";
  std::vector<std::string> parts;
  std::string cur;
  for (char c : *text) {
    if (c == '\0') {
      if (!cur.empty()) parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) parts.push_back(cur);
  if (parts.empty()) return "";
  return last_entry ? parts.back() : parts.front();
}

// The names of several lists, joined by `sep`: the probe's loop words and grep patterns.
template <size_t... N>
std::string joined(char sep, const char* const (&... lists)[N]) {
  std::string out;
  auto add = [&](const auto& list) {
    for (const char* word : list) out += (out.empty() ? "" : std::string(1, sep)) + word;
  };
  (add(lists), ...);
  return out;
}

}  // namespace

IdentityFacts read_identity_facts(const FsRoot& fs) {
  IdentityFacts f;
  f.cpuinfo = fs.read_text("/proc/cpuinfo").value_or("");
  if (fs.root() == "/" || fs.root().empty()) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    f.hostname = host;
    utsname u{};
    if (uname(&u) == 0) {
      f.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
      f.arch = u.machine;
    }
  } else {
    f.hostname = fs.read_text("/proc/sys/kernel/hostname").value_or("");
    if (const auto release = fs.read_text("/proc/sys/kernel/osrelease")) f.kernel = "Linux " + *release;
  }
  f.android = getprop_properties(fs);
  for (const char* file : kBuildPropFiles)
    for (auto& [k, v] : read_properties(fs, file)) f.android.emplace(k, v);
  f.os_release = read_properties(fs, "/etc/os-release");
  f.device_tree_model = device_tree_text(fs, "/proc/device-tree/model", false);
  f.device_tree_soc = device_tree_text(fs, "/proc/device-tree/compatible", true);
  f.dmi_vendor = fs.read_text("/sys/class/dmi/id/sys_vendor").value_or("");
  f.dmi_product = fs.read_text("/sys/class/dmi/id/product_name").value_or("");
  f.machine_id = fs.read_text("/etc/machine-id").value_or("");
  return f;
}

DeviceIdentity identity_from(const IdentityFacts& f) {
  DeviceIdentity d;
  d.cpu_model = f.cpuinfo.empty() ? "unknown" : cpu_model_from_cpuinfo(f.cpuinfo, f.arch);
  d.hostname = f.hostname;
  d.kernel = f.kernel;
  d.arch = f.arch;
  // Android keeps its names in the property service and build.prop files; a Linux board has
  // os-release, and a device tree (Jetson, Raspberry Pi) or DMI (PCs) for the board.
  if (!f.android.empty()) {
    const std::string version = first_of(f.android, kOsVersion);
    d.os = version.empty() ? "Android" : "Android " + version;
    d.board = first_of(f.android, kBoard);
    d.soc = first_of(f.android, kSoc);
  } else {
    constexpr const char* kOsName[] = {"PRETTY_NAME", "NAME"};
    d.os = first_of(f.os_release, kOsName);
    d.board = f.device_tree_model;
    if (d.board.empty())
      d.board = f.dmi_vendor.empty()    ? f.dmi_product
                : f.dmi_product.empty() ? f.dmi_vendor
                                        : f.dmi_vendor + " " + f.dmi_product;
    // The last "compatible" entry of the root node names the SoC ("nvidia,tegra234").
    d.soc = f.device_tree_soc;
  }
  // A stable id: the same machine gives the same id across runs and reboots; the CPU is
  // mixed in so a cloned disk image on another machine differs.
  std::string machine_key = first_of(f.android, kSerial);
  if (machine_key.empty()) machine_key = f.machine_id;
  if (machine_key.empty()) machine_key = f.hostname;
  d.id = device_id_from(machine_key, d.cpu_model);
  return d;
}

DeviceIdentity detect_device(const FsRoot& fs) { return identity_from(read_identity_facts(fs)); }

std::string identity_facts_script() {
  const std::string props = joined(' ', kOsVersion, kBoard, kSoc, kSerial);
  const std::string prop_pattern = joined('|', kOsVersion, kBoard, kSoc, kSerial);
  // Every line is `id.<fact>=value`; files come a line at a time. A device without a
  // file or tool prints nothing for it.
  return R"SH(echo "id.kernel=$(uname -s) $(uname -r) $(uname -m)"
echo "id.arch=$(uname -m)"
echo "id.hostname=$(cat /proc/sys/kernel/hostname 2>/dev/null)"
[ -r /etc/machine-id ] && echo "id.machine_id=$(cat /etc/machine-id)"
if command -v getprop >/dev/null 2>&1; then for k in )SH" +
         props + R"SH(; do v=$(getprop "$k" 2>/dev/null); [ -n "$v" ] && echo "id.prop=$k=$v"; done; fi
for f in )SH" + joined(' ', kBuildPropFiles) + R"SH(; do [ -r "$f" ] && grep -E '^()SH" + prop_pattern +
         R"SH()=' "$f" 2>/dev/null | sed 's/^/id.build_prop=/'; done
[ -r /etc/os-release ] && grep -E '^(PRETTY_NAME|NAME)=' /etc/os-release | sed 's/^/id.os_release=/'
[ -r /proc/device-tree/model ] && echo "id.dt_model=$(tr -d '\000' < /proc/device-tree/model)"
[ -r /proc/device-tree/compatible ] && echo "id.dt_soc=$(tr '\000' '\n' < /proc/device-tree/compatible | grep . | tail -n 1)"
[ -r /sys/class/dmi/id/sys_vendor ] && echo "id.dmi_vendor=$(cat /sys/class/dmi/id/sys_vendor)"
[ -r /sys/class/dmi/id/product_name ] && echo "id.dmi_product=$(cat /sys/class/dmi/id/product_name)"
grep -E '^()SH" + std::string(kCpuinfoKeys) + R"SH()[[:space:]]*:' /proc/cpuinfo 2>/dev/null | sed 's/^/id.cpuinfo=/'
)SH";
}

bool add_identity_fact(const std::string& key, const std::string& value, IdentityFacts& f) {
  if (!key.starts_with("id.")) return false;
  const std::string k = key.substr(3);
  if (k == "kernel") f.kernel = value;
  else if (k == "arch") f.arch = value;
  else if (k == "hostname") f.hostname = value;
  else if (k == "machine_id") f.machine_id = value;
  else if (k == "prop" || k == "build_prop") {
    // getprop's lines come first, so emplace keeps its value over a build.prop's.
    if (const auto eq = value.find('='); eq != std::string::npos && eq + 1 < value.size())
      add_property_line(value, f.android);
  } else if (k == "os_release") add_property_line(value, f.os_release);
  else if (k == "dt_model") f.device_tree_model = value;
  else if (k == "dt_soc") f.device_tree_soc = value;
  else if (k == "dmi_vendor") f.dmi_vendor = value;
  else if (k == "dmi_product") f.dmi_product = value;
  else if (k == "cpuinfo") f.cpuinfo += value + "\n";
  else return false;
  return true;
}

}  // namespace edgeprobe::platform
