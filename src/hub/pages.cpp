#include "hub/pages.h"

#include <fmt/format.h>

#include <map>

namespace edgeprobe::hub {

namespace {

constexpr const char* kStyle = R"(<style>
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}
nav{background:#1f3b57;padding:.5em 1em}nav a{color:#fff;margin-right:1.5em;text-decoration:none}
nav a:focus,nav a:hover{text-decoration:underline}
main{padding:1em}table{border-collapse:collapse}td,th{border-bottom:1px solid #ddd;padding:.25em .6em;text-align:left}
td.n{text-align:right;font-variant-numeric:tabular-nums}th a{color:inherit}
form.filter{display:flex;flex-wrap:wrap;gap:.5em;margin-bottom:1em}form.filter label{display:flex;flex-direction:column;font-size:12px}
.muted{color:#777}.pages a,.pages span{margin-right:.6em}
a:focus-visible,button:focus-visible,input:focus-visible{outline:3px solid #e08a00;outline-offset:2px}
.flag{color:#8a4b00;font-weight:600}ul.flags{margin:.3em 0}#hub-run{padding:.5em 1em;background:#f6f1e7}
</style>)";

constexpr const char* kNav =
    R"(<nav aria-label="hub"><a href="/runs">Runs</a><a href="/leaderboards">Leaderboards</a><a href="/devices">Devices</a><a href="/api/runs">JSON</a></nav>)";

std::string page(const std::string& title, const std::string& body) {
  return fmt::format(
      "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
      "content=\"width=device-width\"><title>{} · edgeprobe "
      "hub</title>{}</head><body>{}<main>{}</main></body></html>",
      html_escape(title), kStyle, kNav, body);
}

std::string fixed(double v, int digits = 1) { return fmt::format("{:.{}f}", v, digits); }

std::string device_href(const std::string& id) { return "/device?id=" + url_encode(id); }

// The device's name, linked to its page (where the run names a device id).
std::string device_link(const std::string& id, const std::string& name) {
  const std::string shown = html_escape(name.empty() ? id : name);
  if (id.empty()) return shown;
  return fmt::format("<a href=\"{}\">{}</a>", html_escape(device_href(id)), shown.empty() ? "?" : shown);
}

std::string figure_cells(const std::optional<PhaseFigure>& f) {
  if (!f) return "<td class=\"n muted\">—</td><td class=\"n muted\">—</td>";
  const std::string eff =
      f->efficiency ? fixed(*f->efficiency * 100, 0) + " %" : "<span class=\"muted\">no ceilings</span>";
  return fmt::format("<td class=\"n\" title=\"{}\">{}</td><td class=\"n\">{}</td>", html_escape(f->test),
                     fixed(f->tokens_per_s), eff);
}

std::string short_sha(const std::string& sha) { return sha.substr(0, 12); }

std::string run_link(int64_t id) { return fmt::format("<a href=\"/runs/{0}\">{0}</a>", id); }

// A flag's short name in a table cell, its reason as the cell's title and as text for
// screen readers; the run's page lists the reasons in full.
std::string flag_cell(const std::vector<Flag>& flags) {
  if (flags.empty()) return "<td class=\"muted\">—</td>";
  std::string codes, reasons;
  for (const Flag& f : flags) {
    codes += (codes.empty() ? "" : ", ") + html_escape(f.code);
    reasons += (reasons.empty() ? "" : "\n") + f.reason;
  }
  return fmt::format("<td class=\"flag\" title=\"{}\">⚑ {}</td>", html_escape(reasons), codes);
}

std::string optional_cell(const std::optional<double>& v, int digits) {
  return v ? fmt::format("<td class=\"n\">{}</td>", fixed(*v, digits)) : "<td class=\"n muted\">—</td>";
}

std::string run_row(const RunRow& r) {
  return fmt::format(
      "<tr data-run=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td "
      "title=\"{}\">{}</td><td>{}</td><td>{}</td>"
      "<td title=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td>{}{}<td>{}</td>{}</tr>\n",
      r.id, run_link(r.id), html_escape(r.created_at.substr(0, 19)), html_escape(r.kind),
      html_escape(r.status), html_escape(r.device_id), device_link(r.device_id, r.device_name),
      html_escape(r.backend), html_escape(r.model_name), html_escape(r.model_sha),
      html_escape(short_sha(r.model_sha)), html_escape(r.quant), html_escape(r.llama_commit),
      html_escape(r.edgeprobe_version), figure_cells(r.prefill), figure_cells(r.decode),
      html_escape(r.submitter.empty() ? "local" : r.submitter + " (" + r.ceilings_check + ")"),
      flag_cell(r.flags));
}

const std::map<std::string, std::string> kFilterLabels = {{"device", "device"},
                                                          {"chip", "chip"},
                                                          {"backend", "backend"},
                                                          {"model", "model name"},
                                                          {"sha", "model SHA"},
                                                          {"quant", "quant"},
                                                          {"commit", "llama.cpp commit"},
                                                          {"version", "edgeprobe version"},
                                                          {"kind", "kind"},
                                                          {"submitter", "submitter"},
                                                          {"flag", "flag"},
                                                          {"from", "from (date)"},
                                                          {"to", "to (date)"}};

std::string filter_form(const RunQuery& q) {
  std::string out = "<form class=\"filter\" method=\"get\" action=\"/runs\" role=\"search\">";
  for (const std::string& key : kFilterKeys) {
    const auto it = q.filters.find(key);
    out +=
        fmt::format("<label>{}<input name=\"{}\" value=\"{}\"></label>", html_escape(kFilterLabels.at(key)),
                    key, html_escape(it == q.filters.end() ? "" : it->second));
  }
  out += fmt::format(
      "<input type=\"hidden\" name=\"sort\" value=\"{}\"><input type=\"hidden\" name=\"order\" value=\"{}\">",
      html_escape(q.sort), q.descending ? "desc" : "asc");
  return out + "<button type=\"submit\">Filter</button> <a href=\"/runs\">clear</a></form>";
}

std::string sort_header(const RunQuery& q, const std::string& key, const std::string& label) {
  const bool active = q.sort == key;
  RunQuery next = q;
  next.sort = key;
  next.descending = active ? !q.descending : true;
  next.page = 1;
  const std::string arrow = active ? (q.descending ? " ▼" : " ▲") : "";
  return fmt::format("<th><a href=\"/runs?{}\">{}{}</a></th>", html_escape(query_string(next, "", "")), label,
                     arrow);
}

std::string pager(const RunPage& p, const RunQuery& q) {
  const size_t pages = (p.total + q.per_page - 1) / std::max<size_t>(q.per_page, 1);
  std::string out =
      fmt::format("<p class=\"pages\">{} runs · page {} of {} ", p.total, q.page, std::max<size_t>(pages, 1));
  if (q.page > 1)
    out += fmt::format("<a rel=\"prev\" href=\"/runs?{}\">previous</a>",
                       html_escape(query_string(q, "page", std::to_string(q.page - 1))));
  if (q.page < pages)
    out += fmt::format("<a rel=\"next\" href=\"/runs?{}\">next</a>",
                       html_escape(query_string(q, "page", std::to_string(q.page + 1))));
  return out + "</p>";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string url_encode(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~')
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::string query_string(const RunQuery& q, const std::string& key, const std::string& value) {
  std::map<std::string, std::string> params;
  for (const auto& [k, v] : q.filters)
    if (!v.empty()) params[k] = v;
  params["sort"] = q.sort;
  params["order"] = q.descending ? "desc" : "asc";
  if (q.page > 1) params["page"] = std::to_string(q.page);
  if (!key.empty()) params[key] = value;
  std::string out;
  for (const auto& [k, v] : params) out += (out.empty() ? "" : "&") + url_encode(k) + "=" + url_encode(v);
  return out;
}

std::string runs_page(const RunPage& p, const RunQuery& q) {
  std::string body = "<h1>Runs</h1>" + filter_form(q) + pager(p, q);
  body += "<table id=\"runs\"><thead><tr>" + sort_header(q, "id", "run") + sort_header(q, "date", "date") +
          "<th>kind</th><th>status</th>" + sort_header(q, "device", "device") + "<th>backend</th>" +
          sort_header(q, "model", "model") + "<th>SHA</th>" + sort_header(q, "quant", "quant") +
          "<th>llama.cpp</th><th>edgeprobe</th>" + sort_header(q, "prefill", "prefill tok/s") +
          "<th>prefill eff.</th>" + sort_header(q, "decode", "decode tok/s") +
          "<th>decode eff.</th><th>submitted by</th><th>flags</th></tr></thead><tbody>\n";
  for (const RunRow& r : p.rows) body += run_row(r);
  body += "</tbody></table>";
  if (p.rows.size() >= 2)
    body += fmt::format("<p><a href=\"/compare?a={}&amp;b={}\">compare the first two runs listed</a></p>",
                        p.rows[1].id, p.rows[0].id);
  return page("Runs", body);
}

std::string leaderboards_page(const std::vector<BoardKey>& boards) {
  std::string body =
      "<h1>Leaderboards</h1><p>One per model and quantization: devices ranked by their best bench run.</p>"
      "<table id=\"boards\"><thead><tr><th>model</th><th>quant</th><th>devices</th><th>runs</th></tr>"
      "</thead><tbody>";
  for (const BoardKey& b : boards)
    body += fmt::format(
        "<tr><td><a href=\"/leaderboard?model={}&amp;quant={}\">{}</a></td><td>{}</td><td class=\"n\">{}"
        "</td><td class=\"n\">{}</td></tr>",
        html_escape(url_encode(b.model)), html_escape(url_encode(b.quant)), html_escape(b.model),
        html_escape(b.quant), b.devices, b.runs);
  return page("Leaderboards", body + "</tbody></table>");
}

namespace {

std::string fidelity_cell(const std::string& fidelity) {
  if (fidelity.empty()) return "<td class=\"muted\">—</td>";
  return fmt::format("<td title=\"{0}\">{1}</td>", html_escape(fidelity),
                     fidelity.rfind("diverges", 0) == 0 ? "diverges" : "verified");
}

std::string ranking(const std::string& id, const std::string& title, const std::vector<Placing>& placings,
                    bool prefill) {
  std::string out = fmt::format(
      "<h2>{}</h2><table id=\"{}\"><thead><tr><th>#</th><th>device</th><th>chip</th>"
      "<th>backend</th><th>test</th><th>tok/s</th><th>of its ceiling</th>{}<th>J/token</th>"
      "<th>fidelity</th><th>flags</th><th>run</th></tr></thead><tbody>",
      title, id, prefill ? "<th>TTFT ms</th>" : "");
  for (size_t i = 0; i < placings.size(); ++i) {
    const Placing& p = placings[i];
    out += fmt::format(
        "<tr><td>{}</td><td title=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td>{}{}{}{}{}<td>{}</td></tr>",
        i + 1, html_escape(p.run.device_id), device_link(p.run.device_id, p.run.device_name),
        html_escape(p.run.chip), html_escape(p.run.backend), html_escape(p.figure.test),
        figure_cells(p.figure), prefill ? optional_cell(p.run.ttft_ms, 1) : "",
        optional_cell(p.figure.joules_per_token, 3), fidelity_cell(p.run.fidelity), flag_cell(p.run.flags),
        run_link(p.run.id));
  }
  if (placings.empty()) out += "<tr><td colspan=\"12\" class=\"muted\">no run measured this phase</td></tr>";
  return out + "</tbody></table>";
}

}  // namespace

std::string leaderboard_page(const Leaderboard& b) {
  std::string body = fmt::format(
      "<h1>{} · {}</h1><p>Each device's best run; efficiency is the median rate over that device's own "
      "ceilings, as "
      "the run measured them (\"no ceilings\": the run carried none).</p>",
      html_escape(b.model), html_escape(b.quant));
  body +=
      "<p>TTFT: the prefill test's time to the first token (median); J/token: the phase's energy over its "
      "tokens "
      "where the device measured its total energy, else —; fidelity: the greedy continuation checked against "
      "a "
      "reference run (bench --verify-against), else —; flags: docs/hub.md.</p>";
  body += ranking("prefill", "Prefill", b.prefill, true) + ranking("decode", "Decode", b.decode, false);
  return page(b.model + " " + b.quant, body);
}

std::string run_header(const RunRow& r) {
  std::string out = fmt::format("<section id=\"hub-run\" aria-label=\"run {} in this hub\"><p>Run {} on {}",
                                r.id, r.id, device_link(r.device_id, r.device_name));
  if (!r.chip.empty()) out += " (" + html_escape(r.chip) + ")";
  if (!r.submitter.empty())
    out += fmt::format(" · submitted by {} (ceilings {})", html_escape(r.submitter),
                       html_escape(r.ceilings_check));
  out += "</p>";
  if (!r.flags.empty()) {
    out += "<ul class=\"flags\">";
    for (const Flag& f : r.flags)
      out += fmt::format("<li class=\"flag\">⚑ {}: {}</li>", html_escape(f.code), html_escape(f.reason));
    out += "</ul>";
  }
  return out + "</section>";
}

std::string devices_page(const std::vector<DeviceKey>& devices) {
  std::string body =
      "<h1>Devices</h1><table id=\"devices\"><thead><tr><th>device</th><th>chip</th><th>id</th><th>runs</th>"
      "<th>last run</th></tr></thead><tbody>";
  for (const DeviceKey& d : devices)
    body += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
                        device_link(d.id, d.name), html_escape(d.chip), html_escape(d.id), d.runs,
                        html_escape(d.last_run_at.substr(0, 19)));
  if (devices.empty()) body += "<tr><td colspan=\"5\" class=\"muted\">no runs yet</td></tr>";
  return page("Devices", body + "</tbody></table>");
}

std::string device_page(const DeviceView& v) {
  const DeviceKey& d = v.device;
  std::string body = fmt::format(
      "<h1>{}</h1><p>{} · <code>{}</code> · {} runs · <a href=\"/runs?device={}\">these runs in the "
      "list</a></p>",
      html_escape(d.name.empty() ? d.id : d.name), html_escape(d.chip), html_escape(d.id), d.runs,
      html_escape(url_encode(d.id)));
  body +=
      "<h2>Ceilings</h2><p>What each bench run's probe measured of the device (the median pass, as its "
      "roofline "
      "carries it): read bandwidth, the model's matrix-vector kernels, the prefill matmuls. \"suspect\": the "
      "run "
      "measured a rate above it, so that ceiling was measured low.</p><table id=\"ceilings\"><thead><tr>"
      "<th>date</th><th>run</th><th>backend</th><th>read GB/s</th><th>decode kernels GB/s</th>"
      "<th>prefill GFLOP/s</th><th></th></tr></thead><tbody>";
  size_t ceilings = 0;
  for (const RunRow& r : v.runs)
    for (const CeilingFigure& c : r.ceilings) {
      ++ceilings;
      body += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
          "<td class=\"n\">{}</td><td>{}</td></tr>",
          html_escape(r.created_at.substr(0, 19)), run_link(r.id), html_escape(c.backend),
          fixed(c.bandwidth_gb_per_s), fixed(c.decode_kernel_gb_per_s), fixed(c.prefill_compute_gflop_per_s),
          c.suspect ? "<span class=\"flag\">suspect</span>" : "");
    }
  if (ceilings == 0)
    body += "<tr><td colspan=\"7\" class=\"muted\">no run of this device carried its ceilings</td></tr>";
  body +=
      "</tbody></table><h2>Runs over time</h2><table id=\"device-runs\"><thead><tr><th>date</th><th>run</th>"
      "<th>kind</th><th>model</th><th>quant</th><th>llama.cpp</th><th>edgeprobe</th><th>prefill tok/s</th>"
      "<th>prefill eff.</th><th>decode tok/s</th><th>decode eff.</th><th>flags</th></tr></thead><tbody>";
  for (const RunRow& r : v.runs)
    body += fmt::format(
        "<tr "
        "data-run=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</"
        "td>{}{}{}</tr>",
        r.id, html_escape(r.created_at.substr(0, 19)), run_link(r.id), html_escape(r.kind),
        html_escape(r.model_name), html_escape(r.quant), html_escape(r.llama_commit.substr(0, 12)),
        html_escape(r.edgeprobe_version), figure_cells(r.prefill), figure_cells(r.decode),
        flag_cell(r.flags));
  if (v.runs.empty()) body += "<tr><td colspan=\"12\" class=\"muted\">no run of this device</td></tr>";
  body +=
      "</tbody></table><h2>Findings</h2><p>What its doctor runs found.</p><table id=\"findings\"><thead><tr>"
      "<th>date</th><th>run</th><th>severity</th><th>finding</th><th></th></tr></thead><tbody>";
  size_t findings = 0;
  for (const RunRow& r : v.runs)
    for (const FindingLine& f : r.findings) {
      ++findings;
      body += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                          html_escape(r.created_at.substr(0, 19)), run_link(r.id), html_escape(f.severity),
                          html_escape(f.id), html_escape(f.title));
    }
  if (findings == 0)
    body += "<tr><td colspan=\"5\" class=\"muted\">no finding: no doctor run found one</td></tr>";
  return page(d.name.empty() ? d.id : d.name, body + "</tbody></table>");
}

std::string message_page(const std::string& title, const std::string& message) {
  return page(title, fmt::format("<h1>{}</h1><p>{}</p>", html_escape(title), html_escape(message)));
}

std::string with_hub_nav(std::string report_page) {
  const auto body = report_page.find("<body");
  if (body == std::string::npos) return report_page;
  const auto end = report_page.find('>', body);
  if (end == std::string::npos) return report_page;
  report_page.insert(end + 1, kNav);
  return report_page;
}

}  // namespace edgeprobe::hub
