#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace edgeprobe::report {

// One result to report on: a bench, session or doctor document (what `-o json` printed,
// or a stored run's document) and the label a person knows it by (file name, run id).
struct HtmlInput {
  std::string label;
  nlohmann::json document;
};

// Everything the page draws, as one JSON value: each input with its kind, and for two or
// more inputs the comparison of each against the first (analysis::compare_documents).
nlohmann::json html_report_data(const std::vector<HtmlInput>& inputs);

// JSON text that is safe inside <script type="application/json">: '<', '>' and '&' are
// written as \u escapes (so neither "</script>" nor "<!--" can occur), everything
// outside ASCII too (U+2028 included), and bytes that are not UTF-8 become U+FFFD.
std::string json_for_script_block(const nlohmann::json& value);

// One self-contained HTML page: inline CSS and script, data in a JSON block, no network
// at view time. Throws a bad-input error when there is no input or an input is of no
// known kind.
std::string render_html_report(const std::vector<HtmlInput>& inputs);

}  // namespace edgeprobe::report
