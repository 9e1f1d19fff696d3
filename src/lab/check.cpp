#include "lab/check.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "lab/deploy.h"
#include "core/subprocess.h"
#include "lab/transport.h"

namespace edgeprobe::lab {

std::vector<CheckRow> check_devices(const std::vector<Device>& devices, double timeout_s, int workers) {
  std::vector<CheckRow> rows(devices.size());
  // A bounded pool takes the devices in turn: each worker holds one transport (one ssh or
  // adb process) at a time, so 10,000 devices cost `workers` threads, not 10,000.
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < devices.size();) {
      CheckRow& row = rows[i];
      row.device = devices[i];
      try {
        auto transport = make_transport(row.device);
        row.state = read_state(*transport, row.device, timeout_s);
      } catch (const std::exception& e) {
        row.state.reachable = false;
        row.state.why_not = output_line(e.what());
      }
      if (row.device.transport == "local") {
        row.bundle = "(this edgeprobe)";
        row.bundle_present = true;
      } else if (!row.state.target.empty()) {
        row.bundle = bundle_name(row.state.target);
        const auto& b = row.state.bundles;
        row.bundle_present = std::find(b.begin(), b.end(), row.bundle) != b.end();
      }
    }
  };
  const size_t n = std::min(devices.size(), static_cast<size_t>(std::max(1, workers)));
  std::vector<std::thread> threads;
  for (size_t t = 0; t < n; ++t) threads.emplace_back(work);
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
