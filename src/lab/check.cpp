#include "lab/check.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "lab/deploy.h"
#include "lab/transport.h"

namespace edgeprobe::lab {

std::vector<CheckRow> check_devices(const std::vector<Device>& devices, double timeout_s) {
  std::vector<CheckRow> rows(devices.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < devices.size(); ++i)
    threads.emplace_back([&, i] {
      CheckRow& row = rows[i];
      row.device = devices[i];
      try {
        auto transport = make_transport(row.device);
        row.state = read_state(*transport, row.device, timeout_s);
      } catch (const std::exception& e) {
        row.state.reachable = false;
        row.state.why_not = e.what();
      }
      if (row.device.transport == "local") {
        row.bundle = "(this edgeprobe)";
        row.bundle_present = true;
      } else if (!row.state.target.empty()) {
        row.bundle = bundle_name(row.state.target);
        const auto& b = row.state.bundles;
        row.bundle_present = std::find(b.begin(), b.end(), row.bundle) != b.end();
      }
    });
  for (auto& t : threads) t.join();
  return rows;
}

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

nlohmann::json to_json(const std::vector<CheckRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows) {
    nlohmann::json j = {{"device", r.device.name},
                        {"transport", r.device.transport},
                        {"labels", r.device.labels},
                        {"state", to_json(r.state)}};
    if (r.state.reachable) j["bundle"] = {{"name", r.bundle}, {"present", r.bundle_present}};
    out.push_back(j);
  }
  return out;
}

}  // namespace edgeprobe::lab
