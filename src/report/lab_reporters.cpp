#include "report/lab_reporters.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/text.h"
#include "lab/check.h"
#include "lab/deploy.h"
#include "lab/lab_run.h"
#include "lab/lava_lab.h"

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

std::string run_table(const lab::LabRunResult& r) {
  std::string out = "| device | status | runs | units committed | error |\n|---|---|---|---|---|\n";
  for (const auto& d : r.devices) {
    std::string runs;
    size_t units = 0;
    for (const auto& j : d.jobs) {
      runs += (runs.empty() ? "" : ",") + (j.run ? std::to_string(j.run) : "-");
      units += j.committed;
    }
    out += fmt::format("| {} | {} | {} | {} | {} |\n", d.device.name, d.ok() ? "complete" : "failed", runs,
                       units, d.error());
  }
  return out;
}

std::string jobs_table(const lab::lava::LabJobs& jobs) {
  std::string out =
      "| device | job | attempt | LAVA job | LAVA device | status | run | units | error |\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& j : jobs.jobs)
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", j.device, j.job + 1, j.attempt,
                       j.lava_job ? std::to_string(j.lava_job) : "-", j.lava_device.empty() ? "-" : j.lava_device,
                       j.status, j.run ? std::to_string(j.run) : "-",
                       j.units, edgeprobe::one_line(j.error.empty() ? j.definition : j.error, 200));
  return out;
}

}  // namespace edgeprobe::report
