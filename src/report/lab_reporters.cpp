#include "report/lab_reporters.h"

#include <fmt/format.h>

#include <algorithm>

#include "lab/check.h"
#include "lab/deploy.h"

namespace edgeprobe::report {

using lab::CheckRow;
using lab::DeviceDeploy;

std::string check_table(const std::vector<CheckRow>& rows) {
  auto cell = [](std::string s) {
    std::replace(s.begin(), s.end(), '|', '/');
    return s.empty() ? std::string("-") : s;
  };
  std::string out =
      "| device | transport | reachable | arch | OS | SoC / CPU | bundle | free | battery | temp | rooted |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    const auto& s = r.state;
    const std::string transport = r.device.transport == "adb"   ? "adb " + r.device.serial
                                  : r.device.transport == "ssh" ? "ssh " + r.device.host
                                                                : "local";
    if (!s.reachable) {
      out += fmt::format("| {} | {} | no: {} | | | | | | | | |\n", cell(r.device.name), cell(transport),
                         cell(s.why_not));
      continue;
    }
    const std::string bundle = r.bundle.empty() ? "-" : (r.bundle_present ? "yes " : "no ") + r.bundle;
    const std::string free =
        s.free_kb ? fmt::format("{:.1f} GB", static_cast<double>(*s.free_kb) / 1e6) : "-";
    std::string battery = s.battery_pct ? fmt::format("{}%", *s.battery_pct) : "-";
    if (s.battery_c) battery += fmt::format(" {:.1f} C", *s.battery_c);
    const std::string temp = s.max_temp_c ? fmt::format("{:.1f} C", *s.max_temp_c) : "-";
    const std::string rooted = s.rooted + (s.pinned() ? " (pinned)" : "");
    out += fmt::format("| {} | {} | yes | {} | {} | {} | {} | {} | {} | {} | {} |\n", cell(r.device.name),
                       cell(transport), cell(s.arch), cell(s.os),
                       cell(s.soc.empty() ? s.cpu : s.soc + " / " + s.cpu), cell(bundle), free, battery, temp,
                       cell(rooted));
  }
  return out;
}

std::string deploy_table(const std::vector<DeviceDeploy>& results) {
  std::string out;
  for (const auto& r : results)
    for (const auto& f : r.result.files)
      out += r.device + ": " + f.what + " " + f.remote +
             (f.skipped ? " (already there)\n" : " (copied, SHA-256 verified)\n");
  return out;
}

}  // namespace edgeprobe::report
