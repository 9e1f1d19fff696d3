#pragma once
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace edgeprobe::cli {
// `edgeprobe run --plan FILE|-`: executes a bench or session plan and streams JSON Lines.
void register_run(CLI::App& app, const std::vector<std::string>& command_line);
}  // namespace edgeprobe::cli
