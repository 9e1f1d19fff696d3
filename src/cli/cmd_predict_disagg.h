#pragma once
namespace CLI {
class App;
}
namespace edgeprobe::cli {
// `edgeprobe predict-disagg`: when remote prefill pays (src/kv/break_even.h).
void register_predict_disagg(CLI::App& app);
}  // namespace edgeprobe::cli
