#pragma once
#include <string>
#include <vector>

namespace edgeprobe::lab {
struct CheckRow;
struct DeviceDeploy;
}  // namespace edgeprobe::lab

namespace edgeprobe::report {

// `lab check` as a markdown table, a row per device; `lab deploy` one line per file.
std::string check_table(const std::vector<lab::CheckRow>& rows);
std::string deploy_table(const std::vector<lab::DeviceDeploy>& results);

}  // namespace edgeprobe::report
