#pragma once
namespace CLI {
class App;
}
namespace edgeprobe::cli {
void register_train(CLI::App& app);
}
