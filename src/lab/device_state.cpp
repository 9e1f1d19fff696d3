#include "lab/device_state.h"

#include <sstream>

#include "core/text.h"
#include "platform/device_identity.h"
#include "platform/thermal_units.h"

namespace edgeprobe::lab {
namespace {

// POSIX sh only (Android's mksh and toybox; busybox on boards): no arrays, no [[ ]],
// each fact on its own key=value line, every probe allowed to fail quietly. Identity comes
// first, from platform's script: the device is named by the rule its own runs use.
constexpr const char* kScript = R"SH(
echo "cpus=$(grep -c '^processor' /proc/cpuinfo 2>/dev/null)"
for f in "$WD"/edgeprobe-*/.complete; do [ -f "$f" ] && echo "bundle=$(basename "$(dirname "$f")")"; done
d="$WD"; while [ -n "$d" ] && [ ! -d "$d" ]; do case "$d" in */*) d=${d%/*} ;; *) d=. ;; esac; done
echo "free_kb=$(df -k "${d:-/}" 2>/dev/null | tail -n 1 | awk '{print $(NF-2)}')"
for p in /sys/class/power_supply/*; do
  [ "$(cat "$p/type" 2>/dev/null)" = Battery ] || continue
  echo "battery_pct=$(cat "$p/capacity" 2>/dev/null)"; echo "battery_dc=$(cat "$p/temp" 2>/dev/null)"; break
done
for z in /sys/class/thermal/thermal_zone*; do [ -r "$z/temp" ] && echo "zone=$(cat "$z/temp" 2>/dev/null)"; done
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

std::string state_script(const std::string& workdir) {
  return "WD=" + shell_quote(workdir) + "\n" + platform::identity_facts_script() + kScript;
}

DeviceState parse_state(const std::string& text) {
  DeviceState s;
  platform::IdentityFacts facts;
  size_t facts_bytes = 0;
  constexpr size_t kMaxFactsBytes = 256 * 1024;
  std::istringstream in(text);
  bool ended = false;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // adb's old pty shell
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = line.substr(0, eq), raw = line.substr(eq + 1);
    // Identity facts are read whole (cpuinfo's tabs, a property's '=') by platform's rule;
    // a hostile device's answer is bounded when the names it yields are stored below.
    if (facts_bytes < kMaxFactsBytes && platform::add_identity_fact(k, raw, facts)) {
      facts_bytes += line.size();
      continue;
    }
    // The device's words reach the table, the terminal and the store: one escaped line each.
    const std::string v = edgeprobe::one_line(raw, 200);
    if (k == "cpus")
      s.cpus = number<int>(v).value_or(0);
    else if (k == "bundle")
      s.bundles.push_back(v);
    else if (k == "free_kb")
      s.free_kb = number<long>(v);
    else if (k == "battery_pct")
      s.battery_pct = number<int>(v);
    else if (k == "battery_dc") {
      if (auto t = number<double>(v)) s.battery_c = *t / 10;
    } else if (k == "zone") {
      // The sampler's rule for a zone's unit; garbage (-273000, an error code) is left out.
      if (auto raw_temp = number<long long>(v))
        if (auto t = platform::plausible_temp_c(*raw_temp)) s.max_temp_c = std::max(s.max_temp_c.value_or(-1000), *t);
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
  const platform::DeviceIdentity id = platform::identity_from(facts);
  s.arch = edgeprobe::one_line(id.arch, 200);
  s.kernel = edgeprobe::one_line(id.kernel, 200);
  s.os = edgeprobe::one_line(id.os, 200);
  s.soc = edgeprobe::one_line(id.soc, 200);
  s.board = edgeprobe::one_line(id.board, 200);
  s.cpu = edgeprobe::one_line(id.cpu_model, 200);
  s.target = target_of_arch(s.arch);
  s.reachable = ended && !s.arch.empty();
  if (s.reachable) s.device_id = id.id;
  if (!s.reachable) s.why_not = "the device's probe ended early";
  return s;
}

DeviceState read_state(Transport& transport, const Device& device, double timeout_s,
                       std::function<bool()> cancel) {
  SubprocessOptions options = within(timeout_s);
  options.cancel = std::move(cancel);
  const SubprocessResult r = transport.run(state_script(device.workdir), options);
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
            {"board", s.board},
            {"device_id", s.device_id},
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
