#include "lab/device_state.h"

#include <sstream>

#include "core/text.h"

namespace edgeprobe::lab {
namespace {

// POSIX sh only (Android's mksh and toybox; busybox on boards): no arrays, no [[ ]],
// each fact on its own key=value line, every probe allowed to fail quietly.
constexpr const char* kScript = R"SH(
echo "arch=$(uname -m)"
echo "kernel=$(uname -r)"
rel=$(getprop ro.build.version.release 2>/dev/null)
if [ -n "$rel" ]; then echo "os=Android $rel"; elif [ -r /etc/os-release ]; then
  echo "os=$(. /etc/os-release; echo "$PRETTY_NAME")"; else echo "os=$(uname -s)"; fi
soc=$(getprop ro.soc.model 2>/dev/null)
[ -z "$soc" ] && soc=$(getprop ro.board.platform 2>/dev/null)
[ -z "$soc" ] && [ -r /proc/device-tree/model ] && soc=$(tr -d '\000' < /proc/device-tree/model)
echo "soc=$soc"
echo "cpu=$(grep -m1 -E '^(model name|Hardware|cpu model)' /proc/cpuinfo 2>/dev/null | sed 's/^[^:]*: *//')"
echo "cpus=$(grep -c '^processor' /proc/cpuinfo 2>/dev/null)"
for f in "$WD"/edgeprobe-*/.complete; do [ -f "$f" ] && echo "bundle=$(basename "$(dirname "$f")")"; done
d="$WD"; while [ -n "$d" ] && [ ! -d "$d" ]; do case "$d" in */*) d=${d%/*} ;; *) d=. ;; esac; done
echo "free_kb=$(df -k "${d:-/}" 2>/dev/null | tail -n 1 | awk '{print $(NF-2)}')"
for p in /sys/class/power_supply/*; do
  [ "$(cat "$p/type" 2>/dev/null)" = Battery ] || continue
  echo "battery_pct=$(cat "$p/capacity" 2>/dev/null)"; echo "battery_dc=$(cat "$p/temp" 2>/dev/null)"; break
done
for z in /sys/class/thermal/thermal_zone*; do [ -r "$z/temp" ] && echo "zone_mc=$(cat "$z/temp" 2>/dev/null)"; done
if [ "$(id -u)" = 0 ]; then echo rooted=root; elif command -v su >/dev/null 2>&1; then echo rooted=su; else echo rooted=no; fi
for p in /sys/devices/system/cpu/cpufreq/policy*; do
  [ -r "$p/scaling_cur_freq" ] || continue
  echo "cpufreq=${p##*/} $(cat "$p/scaling_governor" 2>/dev/null || echo -) $(cat "$p/scaling_cur_freq") $(cat "$p/scaling_min_freq") $(cat "$p/scaling_max_freq") $(cat "$p/cpuinfo_max_freq")"
done
echo end=1
)SH";

template <typename T>
std::optional<T> number(const std::string& s) {
  std::istringstream in(s);
  T v{};
  if (in >> v) return v;
  return std::nullopt;
}

}  // namespace

bool DeviceState::pinned() const {
  if (cpufreq.empty()) return false;
  for (const auto& p : cpufreq)
    if (p.governor != "performance" && p.min_khz != p.max_khz) return false;
  return true;
}

bool DeviceState::capped() const {
  for (const auto& p : cpufreq)
    if (p.hw_max_khz > 0 && p.max_khz > 0 && p.max_khz < p.hw_max_khz && p.governor != "userspace")
      return true;
  return false;
}

std::string target_of_arch(const std::string& m) {
  if (m == "aarch64" || m == "arm64" || m == "armv8l") return "aarch64-linux-gnu";
  if (m == "x86_64" || m == "amd64") return "x86_64-linux-gnu";
  return "";
}

std::string state_script(const std::string& workdir) { return "WD=" + shell_quote(workdir) + "; " + kScript; }

DeviceState parse_state(const std::string& text) {
  DeviceState s;
  std::istringstream in(text);
  bool ended = false;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // adb's old pty shell
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    // The device's words reach the table, the terminal and the store: one escaped line each.
    const std::string k = line.substr(0, eq), v = edgeprobe::one_line(line.substr(eq + 1), 200);
    if (k == "arch")
      s.arch = v;
    else if (k == "kernel")
      s.kernel = v;
    else if (k == "os")
      s.os = v;
    else if (k == "soc")
      s.soc = v;
    else if (k == "cpu")
      s.cpu = v;
    else if (k == "cpus")
      s.cpus = number<int>(v).value_or(0);
    else if (k == "bundle")
      s.bundles.push_back(v);
    else if (k == "free_kb")
      s.free_kb = number<long>(v);
    else if (k == "battery_pct")
      s.battery_pct = number<int>(v);
    else if (k == "battery_dc") {
      if (auto t = number<double>(v)) s.battery_c = *t / 10;
    } else if (k == "zone_mc") {
      // Some zones report garbage (negative, or already in degrees): keep plausible ones.
      if (auto t = number<double>(v); t && *t > 1000 && *t < 150000)
        s.max_temp_c = std::max(s.max_temp_c.value_or(-1000), *t / 1000);
    } else if (k == "rooted")
      s.rooted = v;
    else if (k == "cpufreq") {
      std::istringstream f(v);
      CpufreqPolicy p;
      if (f >> p.name >> p.governor >> p.cur_khz >> p.min_khz >> p.max_khz >> p.hw_max_khz)
        s.cpufreq.push_back(p);
    } else if (k == "end")
      ended = true;
  }
  s.target = target_of_arch(s.arch);
  s.reachable = ended && !s.arch.empty();
  if (!s.reachable) s.why_not = "the device's probe ended early";
  return s;
}

DeviceState read_state(Transport& transport, const Device& device, double timeout_s) {
  const SubprocessResult r = transport.run(state_script(device.workdir), within(timeout_s));
  if (const std::string why = transport.unreachable(r); !why.empty()) {
    DeviceState s;
    s.why_not = why;
    return s;
  }
  DeviceState s = parse_state(r.out);
  if (!s.reachable)
    s.why_not =
        r.exit_code != 0 ? "probe exited " + std::to_string(r.exit_code) + ": " + output_line(r.err) : s.why_not;
  if (!device.arch.empty()) s.target = target_of_arch(device.arch);  // the inventory's override
  return s;
}

nlohmann::json to_json(const DeviceState& s) {
  using nlohmann::json;
  auto opt = [](const auto& o) { return o ? json(*o) : json(nullptr); };
  json cpufreq = json::array();
  for (const auto& p : s.cpufreq)
    cpufreq.push_back({{"policy", p.name},
                       {"governor", p.governor},
                       {"cur_khz", p.cur_khz},
                       {"min_khz", p.min_khz},
                       {"max_khz", p.max_khz},
                       {"hw_max_khz", p.hw_max_khz}});
  json j = {{"reachable", s.reachable}};
  if (!s.reachable) {
    j["why_not"] = s.why_not;
    return j;
  }
  j.update({{"arch", s.arch},
            {"target", s.target},
            {"os", s.os},
            {"kernel", s.kernel},
            {"soc", s.soc},
            {"cpu", s.cpu},
            {"cpus", s.cpus},
            {"bundles", s.bundles},
            {"free_kb", opt(s.free_kb)},
            {"battery_pct", opt(s.battery_pct)},
            {"battery_c", opt(s.battery_c)},
            {"max_temp_c", opt(s.max_temp_c)},
            {"rooted", s.rooted},
            {"pinned", s.pinned()},
            {"capped", s.capped()},
            {"cpufreq", cpufreq}});
  return j;
}

}  // namespace edgeprobe::lab
