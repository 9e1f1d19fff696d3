#pragma once
// edgeprobe plans on LAVA, Linaro's lab engine (docs/lab.md, "LAVA"): a job per device
// rendered from the inventory, results taken back from the job's log into the store.
// LAVA owns the queue, reservation, health checks and power; edgeprobe owns the plan and
// the results, and never writes into LAVA's database.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lab/inventory.h"
#include "store/store.h"

namespace edgeprobe::lab::lava {

// Where a LAVA server is and the token to talk to it: LAVA_URL and LAVA_TOKEN, else the
// identity (LAVA_IDENTITY, default "default") of ~/.config/lavacli.yaml. The token is
// sent to the server and nowhere else: never printed, never stored.
struct Server {
  std::string url;  // https://lava.example.org (no /api)
  std::string token;
};
// Throws Error(kBadInput) naming both places when neither says.
Server server_from_environment();

// One device's job for one plan.
struct JobSpec {
  Device device;
  store::RunId lab_run = 0;
  size_t job = 0;      // the plan's index in the lab run
  int attempt = 1;     // 2, 3, ... when resubmitted by --resume
  nlohmann::json plan; // as the device reads it (model paths under its work directory)
  std::string bundle_url, bundle_sha256, bundle_name;  // bundle_name: the directory the tarball holds
  struct File {
    std::string url, sha256, device_path;  // device_path relative to the job's work directory
  };
  std::vector<File> models;
  double job_timeout_s = 6 * 3600;
  std::string notify_url;  // "" = none: LAVA POSTs the finished job there
};

// The LAVA job definition (YAML) for a device: device type and tags from the inventory
// (lava_device_type, default ssh; tag ep-NAME and lava_tags), the plan and its SHA-256
// in the metadata, and an inline test that fetches and checks the bundle and models,
// runs `edgeprobe run --plan -o lava` and gives its headline figures to lava-test-case.
std::string render_job(const JobSpec& spec);
std::string plan_sha256(const nlohmann::json& plan);
// The bundle target of a LAVA device, from the inventory's arch (LAVA runs the job, so
// edgeprobe cannot ask the device first); throws kBadInput naming the device.
std::string bundle_target(const Device& device);  // of the plan as the job carries it

// A LAVA job log: one YAML mapping per line ({dt, lvl, msg}), as the dispatcher writes it
// and the REST API serves it. Lines that are not records (a log still being written ends
// in half a line) are counted, not fatal.
struct LogRecord {
  std::string lvl;     // target, results, info, debug, error, ...
  nlohmann::json msg;  // a string, or a mapping for results
};
struct Log {
  std::vector<LogRecord> records;
  size_t unreadable = 0;
};
Log parse_log(std::string_view text);

// What LAVA says of a job: its state and health (REST), and for a failed job the error
// type and message of its lava/job result.
struct JobReport {
  std::string state;   // Submitted | Scheduling | Scheduled | Running | Canceling | Finished
  std::string health;  // Unknown | Complete | Incomplete | Canceled
  std::string error_type, error_msg;
  std::string actual_device;  // the LAVA device that took the job ("" before one did)
};
// The pool's stand-in devices for `lab submit --pool TYPE[:TAG,...] --count N --arch A`:
// N jobs that LAVA gives to any N devices of that type with those tags.
std::vector<Device> pool_devices(const std::string& pool, int count, const std::string& arch);
// From the log alone (lava-run, or a log fetched without the job): the lava/job result.
JobReport report_from_log(const Log& log);
JobReport report_from_rest(const nlohmann::json& job_detail, const nlohmann::json& lava_suite_tests);

// A device's status from what LAVA says and what the stream holds:
//   ok            finished with the whole stream (END and its checksum)
//   partial       LAVA says complete, the stream is short
//   lost          infrastructure error, connection closed, timeout: the device fails alone
//   error         any other failure, with LAVA's message
//   cancelled     cancelled; what arrived is kept
//   not_scheduled still queued past the plan's queue deadline (edgeprobe cancels it)
//   queued, running   not finished yet
std::string device_status(const JobReport& job, bool stream_whole, bool past_queue_deadline);
bool finished(const std::string& status);  // every status but queued and running

// Takes the stream out of a job log into the store, unit by unit, as `lab run` does from
// a device's stdout: a new run, or `resume_run` continued without duplicating a unit (a
// log imported again while its job runs). A stream cut short is marked failed with `why`
// only once the job has finished.
struct Imported {
  store::RunId run = 0;
  size_t lines = 0, committed = 0, skipped = 0;
  bool whole = false;      // the stream's END arrived and matched
  std::string problem;     // why the stream stops short, if it does
};
Imported import_stream(store::Store& store, const Log& log, const nlohmann::json& lab, store::RunId resume_run,
                       bool job_finished, const std::string& why_cut);

// Headline figures of a stream as lava-test-case lines (a shell script), so LAVA's own
// result views show them: prefill and decode tok/s per test, time to first token per
// session configuration. Reads the framed stream (`run -o lava`) or the plain one.
std::string test_case_commands(std::string_view stream);

}  // namespace edgeprobe::lab::lava
