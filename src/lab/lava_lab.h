#pragma once
// A lab run whose devices LAVA schedules (docs/lab.md, "LAVA"): `lab submit --engine
// lava` stores the lab run and submits a job per device and plan; `lab import` takes each
// job's state and log back into the store, as often as wanted, while jobs run or after;
// `lab run --resume` resubmits the devices that did not finish.
#include <functional>
#include <optional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "app/plan.h"
#include "lab/inventory.h"
#include "lab/lava.h"
#include "store/store.h"

namespace edgeprobe::lab::lava {

struct SubmitOptions {
  std::vector<app::Plan> plans;
  std::string dist_dir = "dist";
  // Where the devices fetch the bundle and models from: files are copied into
  // artifacts_dir, which the lab serves at artifacts_url (http(s)://, or file:// for a
  // device that shares the controller's disk).
  std::string artifacts_dir, artifacts_url;
  std::string render_dir;          // also write each job definition here
  std::optional<Server> server;    // nullopt: render only (no server needed)
  double job_timeout_s = 6 * 3600;
  double queue_deadline_s = 24 * 3600;  // a job still queued this long after submission is cancelled
  std::string notify_url;
  std::string command_line;
  std::function<void(const std::string&)> say;
};

struct JobRow {
  std::string device;
  size_t job = 0;
  int attempt = 1;
  int64_t lava_job = 0;    // 0: not submitted (rendered only)
  std::string status;      // submitted | rendered | ok | partial | lost | error | cancelled | not_scheduled | queued | running
  store::RunId run = 0;    // the device's results in the store
  size_t units = 0;        // committed by this import
  std::string error;
  std::string definition;  // where the rendered job was written, if it was
  std::string lava_device; // the LAVA device that took the job (a pool's job: which one)
};

struct LabJobs {
  store::RunId lab_run = 0;
  std::vector<JobRow> jobs;
  int exit_code = 0;  // 0 when every job is ok; 3 when one finished otherwise
};

LabJobs submit(store::Store& store, const std::vector<Device>& devices, const SubmitOptions& options);

// Resubmits, as attempt n+1, every device job of a LAVA lab run that is not ok, with the
// units its stored run already holds marked done (the device skips them).
LabJobs resubmit(store::Store& store, store::RunId lab_run, const SubmitOptions& options);

struct ImportOptions {
  // A log obtained without the server (lava-run's output, a saved log) for one device's
  // job; its state then comes from the log's own lava/job result.
  std::string device, log_file;
  size_t job = 0;
  std::function<void(const std::string&)> say;
};
LabJobs import(store::Store& store, store::RunId lab_run, const ImportOptions& options);

bool is_lava_lab(const store::Store& store, store::RunId lab_run);

nlohmann::json to_json(const LabJobs& jobs);

}  // namespace edgeprobe::lab::lava
