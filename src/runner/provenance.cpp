#include "runner/provenance.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <map>
#include <sstream>

#include "core/clock.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/subprocess.h"
#include "edgeprobe_version.h"
#include "platform/cpu_features.h"
#include "result/migrate.h"
#include "probe/storage.h"

namespace edgeprobe::runner {

namespace {

// key=value lines (os-release, Android build.prop); quotes around a value are dropped.
std::map<std::string, std::string> read_properties(const FsRoot& fs, const std::string& path) {
  std::map<std::string, std::string> props;
  const auto text = fs.read_text(path);
  if (!text) return props;
  std::istringstream in(*text);
  for (std::string line; std::getline(in, line);) {
    const auto eq = line.find('=');
    if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
    std::string value = line.substr(eq + 1);
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
      value = value.substr(1, value.size() - 2);
    props[line.substr(0, eq)] = value;
  }
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

std::string first_of(const std::map<std::string, std::string>& props, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    auto it = props.find(k);
    if (it != props.end() && !it->second.empty()) return it->second;
  }
  return "";
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

}  // namespace

result::DeviceIdentity detect_device(const FsRoot& fs) {
  result::DeviceIdentity d;
  d.cpu_model = platform::cpu_model_name(fs);
  const bool real_root = fs.root() == "/" || fs.root().empty();
  if (real_root) {
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    d.hostname = host;
    utsname u{};
    if (uname(&u) == 0) {
      d.kernel = std::string(u.sysname) + " " + u.release + " " + u.machine;
      d.arch = u.machine;
    }
  } else {
    d.hostname = fs.read_text("/proc/sys/kernel/hostname").value_or("");
    const auto release = fs.read_text("/proc/sys/kernel/osrelease");
    if (release) d.kernel = "Linux " + *release;
  }
  // Android keeps its names in the property service (getprop, which wins) and build.prop
  // files; a Linux board has os-release, and a device tree (Jetson, Raspberry Pi) or DMI
  // (PCs) for the board.
  auto android = getprop_properties(fs);
  for (const char* file : {"/system/build.prop", "/vendor/build.prop", "/odm/etc/build.prop"})
    for (auto& [k, v] : read_properties(fs, file)) android.emplace(k, v);
  if (!android.empty()) {
    const std::string version = first_of(android, {"ro.build.version.release", "ro.system.build.version.release"});
    d.os = version.empty() ? "Android" : "Android " + version;
    d.board = first_of(android, {"ro.product.model", "ro.product.system.model", "ro.product.vendor.model"});
    d.soc = first_of(android, {"ro.soc.model", "ro.board.platform", "ro.hardware"});
  } else {
    d.os = first_of(read_properties(fs, "/etc/os-release"), {"PRETTY_NAME", "NAME"});
    d.board = device_tree_text(fs, "/proc/device-tree/model", false);
    if (d.board.empty()) {
      const std::string vendor = fs.read_text("/sys/class/dmi/id/sys_vendor").value_or("");
      const std::string product = fs.read_text("/sys/class/dmi/id/product_name").value_or("");
      d.board = vendor.empty() ? product : product.empty() ? vendor : vendor + " " + product;
    }
    // The last "compatible" entry of the root node names the SoC ("nvidia,tegra234").
    d.soc = device_tree_text(fs, "/proc/device-tree/compatible", true);
  }
  // A stable id: the same machine gives the same id across runs and reboots; the CPU is
  // mixed in so a cloned disk image on another machine differs.
  std::string machine_key = first_of(android, {"ro.serialno", "ro.boot.serialno"});
  if (machine_key.empty()) machine_key = fs.read_text("/etc/machine-id").value_or("");
  if (machine_key.empty()) machine_key = d.hostname;
  d.id = result::device_id_from(machine_key, d.cpu_model);
  return d;
}

result::Provenance make_provenance(const result::EngineIdentity& engine, const std::string& command_line) {
  result::Provenance p;
  p.edgeprobe_version = kVersion;
  const BuildInfo& build = build_info();
  p.build = {build.git_commit, build.git_dirty, build.build_type, build.compiler};
  p.engine = engine;
  p.device = detect_device(FsRoot("/"));
  p.started_at_utc = utc_now_rfc3339();
  p.command_line = command_line;
  return p;
}

result::ModelIdentity model_identity(const model::GgufInfo& info, bool hash) {
  result::ModelIdentity m;
  m.path = info.path;
  if (hash) {
    // Hashing reads the whole file: put the page cache back as it was, so that the first
    // load bench measures next is as cold as the user left the file.
    const auto before = probe::page_residency(info.path);
    m.sha256 = model::sha256_file(info.path);
    if (!before.empty()) probe::evict_pages_not_in(info.path, before);
  }
  m.size_bytes = info.file_bytes;
  m.n_params = info.n_params();
  m.architecture = info.shape.architecture;
  m.name = info.name;
  m.dominant_type = info.dominant_type();
  m.bits_per_weight = info.bits_per_weight();
  for (const auto& [type, s] : info.type_histogram()) m.tensor_types[type] = {s.tensors, s.bytes, s.params};
  m.n_layer = info.shape.n_layer;
  m.n_embd = info.shape.n_embd;
  m.n_ff = info.shape.n_ff;
  m.n_head = info.shape.n_head;
  m.n_head_kv = info.shape.n_head_kv;
  m.n_vocab = info.shape.n_vocab;
  return m;
}

}  // namespace edgeprobe::runner
