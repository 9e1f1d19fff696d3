#include "lab/check.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "core/stop_token.h"
#include "core/subprocess.h"
#include "lab/deploy.h"
#include "lab/transport.h"

namespace edgeprobe::lab {

std::vector<CheckRow> check_devices(const std::vector<Device>& devices, double timeout_s, int workers) {
  std::vector<CheckRow> rows(devices.size());
  // A Ctrl-C or SIGTERM kills the probes in flight (each in a process group of its own, which
  // the terminal's Ctrl-C does not reach) and leaves the rest unchecked; the rows print.
  const ProcessStopWatch watching;
  const StopToken stop = StopToken::process();
  // A bounded pool takes the devices in turn: each worker holds one transport (one ssh or
  // adb process) at a time, so 10,000 devices cost `workers` threads, not 10,000.
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < devices.size();) {
      CheckRow& row = rows[i];
      row.device = devices[i];
      if (stop.stop_requested()) {
        row.state.why_not = "not checked: interrupted";
        continue;
      }
      try {
        auto transport = make_transport(row.device);
        row.state = read_state(*transport, row.device, timeout_s, [stop] { return stop.stop_requested(); });
        if (!row.state.reachable && stop.stop_requested())
          row.state.why_not = "not checked: interrupted while asked";
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
