#pragma once
#include <string>
#include <vector>
namespace CLI {
class App;
}
namespace edgeprobe::cli {
// `edgeprobe lab check|deploy|run`: many devices from an inventory, one store (src/lab).
void register_lab(CLI::App& app, const std::vector<std::string>& args);
}  // namespace edgeprobe::cli
