#pragma once

namespace CLI {
class App;
}

namespace edgeprobe::cli {

// `edgeprobe predict`: what a model will do on a device before it runs there (docs/predict.md).
void register_predict(CLI::App& app);

}  // namespace edgeprobe::cli
