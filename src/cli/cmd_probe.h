#pragma once

namespace CLI {
class App;
}

namespace edgeprobe::cli {

// `edgeprobe probe [--refresh] [-m MODEL] [-t N] [--sysfs-root DIR] [-o md|json] [--output FILE]`: the
// device's own ceilings (memory bandwidth, matrix compute through ggml, storage read),
// with topology, instruction sets and the loaded ggml CPU variant next to them.
void register_probe(CLI::App& app);

}  // namespace edgeprobe::cli
