#pragma once
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace edgeprobe::cli {

// `edgeprobe doctor [-m MODEL] [bench's configuration flags] [--baseline FILE] [--tune]`:
// measures the configuration, names what slows it down with the evidence and the fix,
// and with --tune searches for a faster configuration.
void register_doctor(CLI::App& app, const std::vector<std::string>& command_line);

}  // namespace edgeprobe::cli
