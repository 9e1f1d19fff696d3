#pragma once

namespace CLI {
class App;
}

namespace edgeprobe::cli {

// `edgeprobe fidelity`: a model's next-token distributions against a reference's over a
// text, as llama-perplexity --kl-divergence measures them (docs/fidelity.md).
void register_fidelity(CLI::App& app);

}  // namespace edgeprobe::cli
