#pragma once
#include <nlohmann/json_fwd.hpp>

#include <iosfwd>
#include <string>

namespace edgeprobe::report {

// `edgeprobe predict` in its formats, from its JSON document (kind "predict"): md a table
// of the configurations with intervals, memory, load and the binding roof; csv one row per
// configuration; json the document itself.
void write_predict_report(const nlohmann::json& document, const std::string& format, std::ostream& out);

// `predict --check RUN` (kind "predict-check"): each test's predicted and measured rates
// and the error of the prediction.
void write_predict_check(const nlohmann::json& document, const std::string& format, std::ostream& out);

}  // namespace edgeprobe::report
