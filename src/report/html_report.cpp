#include "report/html_report.h"

#include "analysis/compare.h"
#include "analysis/explain.h"
#include "core/error.h"
#include "report/html/assets.h"
#include "result/doctor.h"
#include "result/migrate.h"

namespace edgeprobe::report {

using nlohmann::json;

json html_report_data(const std::vector<HtmlInput>& inputs) {
  json data{{"edgeprobe_report", 1}, {"inputs", json::array()}, {"comparisons", json::array()}, {"explanations", json::array()}};
  for (const HtmlInput& in : inputs) {
    const std::string kind = result::document_kind(in.document);
    if (kind.empty()) throw_bad_input("{}: not a bench, session or doctor result (nothing to report)", in.label);
    // A doctor document in today's shape, whichever release wrote it: the page reads one.
    const json document = kind == "doctor" ? result::to_json(result::doctor_result_from_json(in.document)) : in.document;
    data["inputs"].push_back({{"label", in.label}, {"kind", kind}, {"document", document}});
  }
  // Every input against the first: the first is the baseline a person picked.
  for (size_t i = 1; i < inputs.size(); ++i) {
    // The same object `compare -o json` prints: one shape for the page and the CLI; where
    // compare refuses the pair (a --tune search keeps no run), the page says why.
    try {
      const auto report = analysis::compare_documents(inputs[0].document, inputs[i].document);
      data["comparisons"].push_back({{"a", 0}, {"b", i}, {"report", analysis::to_json(report)}});
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kBadInput) throw;
      data["comparisons"].push_back({{"a", 0}, {"b", i}, {"error", e.what()}});
    }
    // The gap as causes, next to the ratios; why not, where explain refuses the pair.
    const std::string ka = result::document_kind(inputs[0].document), kb = result::document_kind(inputs[i].document);
    if ((ka == "bench" || ka == "doctor") && (kb == "bench" || kb == "doctor")) {
      json entry{{"a", 0}, {"b", i}};
      try {
        entry["explanation"] = analysis::to_json(analysis::explain(analysis::explain_side(inputs[0].document, inputs[0].label),
                                                                   analysis::explain_side(inputs[i].document, inputs[i].label)));
      } catch (const Error& e) {
        entry["error"] = e.what();
      } catch (const json::exception& e) {
        entry["error"] = std::string("a field holds a type edgeprobe never writes there: ") + e.what();
      }
      data["explanations"].push_back(std::move(entry));
    }
  }
  return data;
}

std::string json_for_script_block(const json& value) {
  const std::string text = value.dump(-1, ' ', true, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + text.size() / 16);
  // Outside strings JSON has no '<', '>' or '&', so escaping every one of them only ever
  // touches string contents, where \u003c means the same character to JSON.parse.
  for (char c : text) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  return out;
}

std::string render_html_report(const std::vector<HtmlInput>& inputs) {
  if (inputs.empty()) throw_bad_input("report: give at least one run id or result file");
  const json data = html_report_data(inputs);
  // No value from the data is written into markup: the script reads the JSON block and
  // renders every string as text.
  std::string page;
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += "<meta name=\"generator\" content=\"edgeprobe report\">\n<title>edgeprobe report</title>\n";
  page += "<style>\n";
  page += html_assets::kStyle;
  page += "</style>\n</head>\n<body data-render=\"pending\">\n";
  page += "<header id=\"top\"><h1>edgeprobe report</h1><p id=\"subtitle\"></p></header>\n";
  page += "<div id=\"errors\" hidden></div>\n<main id=\"report\"></main>\n";
  page += "<noscript><p>This report draws its tables and charts with JavaScript; the raw data is in the "
          "edgeprobe-data block of this file.</p></noscript>\n";
  page += "<script type=\"application/json\" id=\"edgeprobe-data\">";
  page += json_for_script_block(data);
  page += "</script>\n<script>\n";
  page += html_assets::kScript;
  page += "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace edgeprobe::report
