#pragma once

namespace CLI {
class App;
}

namespace edgeprobe::cli {

// `edgeprobe report RUN|FILE... [--output report.html] [--db PATH]`: one self-contained
// HTML page (no network at view time) of bench, session or doctor results; two or more
// inputs are compared against the first. See docs/report.md.
void register_report(CLI::App& app);

}  // namespace edgeprobe::cli
