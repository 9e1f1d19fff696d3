#pragma once
#include <string>
#include <vector>

namespace edgeprobe::lab {
struct CheckRow;
struct DeviceDeploy;
struct LabRunResult;
namespace lava {
struct LabJobs;
}
}  // namespace edgeprobe::lab

namespace edgeprobe::report {

// `lab check` as a markdown table, a row per device; `lab deploy` one line per file.
std::string check_table(const std::vector<lab::CheckRow>& rows);
std::string deploy_table(const std::vector<lab::DeviceDeploy>& results);
// `lab run` (and resume): a row per device with its runs and units committed; the LAVA
// engine's jobs: a row per device and job with its LAVA job, device and attempt.
std::string run_table(const lab::LabRunResult& result);
std::string jobs_table(const lab::lava::LabJobs& jobs);

}  // namespace edgeprobe::report
