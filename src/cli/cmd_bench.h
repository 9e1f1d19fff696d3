#pragma once
#include <string>
#include <vector>
namespace CLI {
class App;
}
namespace edgeprobe::cli {
// `args` is the whole command line, kept for provenance.
void register_bench(CLI::App& app, const std::vector<std::string>& args);
}
