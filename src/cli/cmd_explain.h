#pragma once

namespace CLI {
class App;
}

namespace edgeprobe::cli {

// `edgeprobe explain A B [--db PATH] [--same-shape] [-o md|csv|json]`, or `explain --lab RUN
// --baseline DEVICE` for every device of a lab run: B against A (run ids
// or bench/doctor result files) for prefill and decode apart, as a product of factors:
// hardware (the devices' ceilings), each cause doctor found on either side (measured or
// estimated, with its fix) and what is left unexplained; then the speed B reaches after
// each fix. Different model files are refused (exit 2) unless --same-shape.
void register_explain(CLI::App& app);

}  // namespace edgeprobe::cli
