#include "app/stream_reader.h"

#include <fmt/format.h>

#include "core/text.h"

namespace edgeprobe::app {

using nlohmann::json;

namespace {

// A stream line nests a few levels (a result's samples, a provenance): deeper is not one
// edgeprobe writes, and copying or storing it would recurse as deep.
constexpr int kMaxLineDepth = 64;
struct TooDeep {};

}  // namespace

void StreamReader::line(std::string_view text) {
  if (stopped_ || text.empty()) return;
  json e;
  try {
    e = json::parse(text, [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxLineDepth) throw TooDeep{};
      return true;
    });
  } catch (const TooDeep&) {
    stop(fmt::format("line {} of the stream nests deeper than {} levels", next_seq_, kMaxLineDepth));
    return;
  } catch (const json::parse_error&) {
    stop(fmt::format("line {} of the stream is not JSON: {}", next_seq_, one_line(text.substr(0, 120), 200)));
    return;
  }
  if (!e.is_object() || !e.contains("event") || !e.contains("seq") || !e["seq"].is_number_integer()) {
    stop(fmt::format("line {} of the stream has no event or seq", next_seq_));
    return;
  }
  if (e["seq"].get<int64_t>() != next_seq_) {
    stop(fmt::format("the stream skipped from seq {} to {}", next_seq_ - 1, e["seq"].get<int64_t>()));
    return;
  }
  ++next_seq_;
  try {
    const std::string ev = e["event"];
    if (ev == "start") {
      kind_ = e.at("kind");
    } else if (ev == "progress") {
      if (e.contains("done")) estimate_.units(e["done"], e["total"], e.value("unit", ""));
      estimate_.step(e.value("step", ""));
    } else if (ev == "warning") {
      warnings_.push_back(one_line(e.value("message", ""), 400));  // the writer's words: one escaped line
    } else if (ev == "result") {
      report_ = e.at("report");
    } else if (ev == "end") {
      ended_ = true;
      exit_code_ = e.value("exit_code", 0);
      errors_ = e.value("errors", std::vector<std::string>{});
    } else if (ev == "error") {
      exit_code_ = e.value("kind", "") == "bad_input" ? 2 : 3;
      error_message_ = one_line(e.value("message", ""), 400);
      stop(fmt::format("{} {}: {}", one_line(e.value("kind", "error"), 40), where_, error_message_));
      return;
    }
    event(e);
    if (ended_) stopped_ = true;  // nothing after `end` belongs to this job
  } catch (const std::exception& ex) {  // json type errors and a reader's own (a store's) alike
    stop(fmt::format("seq {} ({}): {}", next_seq_ - 1, one_line(e["event"].dump(), 80), one_line(ex.what(), 400)));
  }
}

void StreamReader::stop(std::string why) {
  if (stopped_) return;
  stopped_ = true;
  on_stop(why);
  failed_ = std::move(why);
}

void StreamReader::finish_cut(const std::string& why) {
  if (ended_) return;
  stop(why);
}

}  // namespace edgeprobe::app
