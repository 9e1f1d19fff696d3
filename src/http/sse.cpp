#include "http/sse.h"

namespace edgeprobe::http {

bool SseParser::feed(std::string_view chunk) {
  for (char c : chunk) {
    if (overflowed_) return false;
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;  // CRLF: the CR ended the line already
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = c == '\r';
      std::string done;
      done.swap(line_);
      line(done);
    } else {
      line_ += c;
      // Checked per byte: a chunk of any size leaves at most the bound held.
      if (pending_bytes() > max_event_bytes_) {
        overflowed_ = true;
        line_.clear();
        event_ = {};
        return false;
      }
    }
  }
  return !overflowed_;
}

bool SseParser::finish() {
  const bool cut = pending_ || !line_.empty();
  line_.clear();
  event_ = {};
  has_data_ = pending_ = after_cr_ = false;
  return cut;
}

void SseParser::line(std::string_view text) {
  if (text.empty()) {  // dispatch
    if (has_data_) on_event_(event_);
    event_ = {};
    has_data_ = pending_ = false;
    return;
  }
  if (text.front() == ':') return;  // a comment (keep-alive)
  pending_ = true;
  const auto colon = text.find(':');
  const std::string_view field = text.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (has_data_) event_.data += '\n';
    event_.data += value;
    has_data_ = true;
  } else if (field == "event") {
    event_.event = value;
  } else if (field == "id") {
    event_.id = value;
  }  // retry and unknown fields: ignored, as the standard says
}

}  // namespace edgeprobe::http
