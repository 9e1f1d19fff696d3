#pragma once
namespace CLI {
class App;
}
namespace edgeprobe::cli {
void register_synth(CLI::App& app);
}
