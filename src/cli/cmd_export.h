#pragma once
#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>

namespace CLI {
class App;
}

namespace edgeprobe::cli {

// `edgeprobe export RUN -o json|csv [--db PATH] [--output FILE]`: one stored run, whole.
void register_export(CLI::App& app);

// A stored run (store::Store::load_run) as CSV: one row per repetition and per turn,
// with the configuration's fields ("config.*"), the unit's result fields flattened with
// dots ("result.decode.tokens_per_s"), arrays of numbers joined with ';', and its
// telemetry summaries ("telemetry.<phase>.*"). Columns are the union, in first-seen order.
std::string export_csv(const nlohmann::json& run);

void write_export(const nlohmann::json& run, const std::string& format, std::ostream& out);

}  // namespace edgeprobe::cli
