#pragma once

namespace CLI {
class App;
}

namespace edgeprobe::cli {

// `edgeprobe sysinfo [--sysfs-root DIR] [-o md|json] [--output FILE]`: what the device offers for
// telemetry (clusters, frequencies, governor, thermal zones, power sources, cgroup
// limits) and what it does not, with the reason.
void register_sysinfo(CLI::App& app);

}  // namespace edgeprobe::cli
