#pragma once
#include <string>

namespace edgeprobe::engine {

// Throws kBadInput when the mask names a CPU this process cannot run on (one this machine
// lacks, or outside its affinity or cgroup cpuset): threads placed there would run
// elsewhere and the run would record a placement that never happened. Checked where the
// job runs (a lab's plan is checked on its device, not on the controller).
void check_cpu_mask_usable(const std::string& hex);

}  // namespace edgeprobe::engine
