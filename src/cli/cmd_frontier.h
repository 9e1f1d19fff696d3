#pragma once

namespace CLI {
class App;
}

namespace edgeprobe::cli {

// `edgeprobe frontier`: one model's quantizations on the accuracy/efficiency frontier
// (fidelity against its full precision, speed against it in interleaved rounds).
void register_frontier(CLI::App& app);

}  // namespace edgeprobe::cli
