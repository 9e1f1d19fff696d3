#pragma once
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "app/plan.h"
#include "core/stop_token.h"
#include "lab/inventory.h"
#include "store/store.h"

namespace edgeprobe::lab {

// Lab hygiene between jobs on one device.
struct Cooldown {
  double seconds = 0;                              // wait this long before each job
  std::optional<double> until_c;                   // or until the hottest zone is at or below this
  static Cooldown parse(const std::string& text);  // "", "none", "SECONDS" or "temp:C"; throws kBadInput
};

struct LabRunOptions {
  std::vector<app::Plan> plans;  // run in order on every device
  std::string dist_dir = "dist";
  Cooldown cooldown;
  std::optional<double> thermal_limit_c;  // a device at or above this pauses before a job
  double max_wait_s = 900;                // bound on each cooldown or thermal pause
  double job_timeout_s = 6 * 3600;
  std::string command_line;
  // One line for a person per device as it goes ("[pixel8] ..."); unset = silent.
  std::function<void(const std::string&)> say;
  // A stop request ends every device's job in flight (its stream is cut, what it sent is
  // kept) and starts no other; the process's token (Ctrl-C) by default.
  StopToken stop = StopToken::process();
};

struct DeviceJob {
  store::RunId run = 0;  // the device's run in the store (0: it never started)
  std::string status;    // complete | failed | not run
  std::string error;
  size_t committed = 0;  // units committed by this attempt
  int exit_code = 0;
};

struct DeviceOutcome {
  Device device;
  std::vector<DeviceJob> jobs;
  bool ok() const;
  std::string error() const;  // the first failure's reason
};

struct LabRunResult {
  store::RunId lab_run = 0;
  std::vector<DeviceOutcome> devices;
  int exit_code = 0;  // 0: every device finished every job without an error
};

// Runs every plan on every device, devices concurrently and one job at a time on each.
// The lab run is itself a stored run (kind "lab": its plans and devices, and per device
// and job which stored run holds the results); each device's results are a bench or
// session run of their own, with the device's identity, committed unit by unit.
LabRunResult run_lab(store::Store& store, const std::vector<Device>& devices, const LabRunOptions& options);

// Continues a lab run: devices whose job is complete are skipped, the others resume
// their stored run from its last committed unit (or start it if it never began).
// options.plans is ignored (the stored ones run); the devices are the stored ones.
LabRunResult resume_lab(store::Store& store, store::RunId lab_run, const LabRunOptions& options);

nlohmann::json to_json(const LabRunResult& result);

// A plan checked as `run --plan` checks it, with its model specs made local files (a
// synthesized model is written here once, so every device gets the same bytes). Returned
// unexpanded: a plan that leaves threads to the device keeps them unset, so each device
// resolves its own. Throws Error(kBadInput) for a bad plan, before any device is touched.
app::Plan prepare_plan(app::Plan plan);

// Where a lab run keeps each device's jobs: Store::record_lab_job, one row per device and
// job, the latest one written being the word (`lab run` and LAVA alike). Each device's
// records, one per plan (an empty status where none was written).
std::map<std::string, std::vector<store::LabJob>> latest_job_records(const store::Store& store,
                                                                     store::RunId lab_run,
                                                                     const std::vector<Device>& devices,
                                                                     size_t plans);
// The units a stored run holds, as a plan's "completed" list (what a resumed device skips).
nlohmann::json completed_list(const store::Store& store, store::RunId run, const std::string& kind);

}  // namespace edgeprobe::lab
