#pragma once
// The hub's own pages, rendered on the server. Every value from a run (a device name, a
// model name, a submitter) is text from outside: it is escaped wherever it lands (element
// text, attribute, URL), so nothing submitted is ever markup.
#include <string>
#include <string_view>
#include <vector>

#include "hub/index.h"

namespace edgeprobe::hub {

std::string html_escape(std::string_view text);
std::string url_encode(std::string_view text);

// The runs list: the filter form (its values from the query, so the URL is the filter),
// the table with sortable headers and the pages.
std::string runs_page(const RunPage& page, const RunQuery& query);
std::string leaderboards_page(const std::vector<BoardKey>& boards);
std::string leaderboard_page(const Leaderboard& board);
std::string devices_page(const std::vector<DeviceKey>& devices);
// A device: its ceilings as each run measured them, its runs by date, its doctor findings.
std::string device_page(const DeviceView& view);
// The hub's header on a run's page (report's own page below it): the device, linked, who
// submitted it, and its flags with their reasons.
std::string run_header(const RunRow& row);
// A page that says one thing (an unknown run, a refused filter), with its HTTP status.
std::string message_page(const std::string& title, const std::string& message);

// The query string of `query` with `key` set to `value` (sort links, page links).
std::string query_string(const RunQuery& query, const std::string& key, const std::string& value);

// A report page (report::render_html_report) with the hub's navigation added after <body>.
std::string with_hub_nav(std::string report_page);

}  // namespace edgeprobe::hub
