#pragma once
#include <string>
#include <vector>
namespace CLI {
class App;
}
namespace edgeprobe::cli {
void register_session(CLI::App& app, const std::vector<std::string>& args);
}
