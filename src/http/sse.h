#pragma once
#include <functional>
#include <string>
#include <string_view>

// Server-sent events (the WHATWG event-stream format), as OpenAI-compatible servers
// stream completions: bytes arrive in chunks cut anywhere, lines end in LF, CRLF or CR,
// ":" starts a comment, several data lines join with "\n", a blank line ends an event.
namespace edgeprobe::http {

struct SseEvent {
  std::string event;  // "" when the stream gave no event: field
  std::string data;
  std::string id;
};

class SseParser {
 public:
  using Handler = std::function<void(const SseEvent&)>;
  // An event (its lines so far, the one in progress included) may hold max_event_bytes:
  // a server that never ends a line, or sends data lines that never dispatch, is cut there.
  explicit SseParser(Handler on_event, size_t max_event_bytes = 1 << 20)
      : on_event_(std::move(on_event)), max_event_bytes_(max_event_bytes) {}

  // Feeds the next chunk; every event it completes is handed over, in order. Returns
  // false once an event grew past max_event_bytes: the parser is spent, the rest ignored.
  bool feed(std::string_view chunk);
  bool overflowed() const { return overflowed_; }
  // End of stream: an event without its closing blank line is dropped (the standard
  // says so); returns true when one was pending, i.e. the stream was cut mid-event.
  bool finish();
  // Bytes held for the event in progress (its fields and the line not yet ended).
  size_t pending_bytes() const { return line_.size() + event_.data.size() + event_.event.size() + event_.id.size(); }

 private:
  void line(std::string_view text);

  Handler on_event_;
  std::string line_;
  bool after_cr_ = false;  // the last byte was CR: an LF next belongs to the same line end
  SseEvent event_;
  bool has_data_ = false;
  bool pending_ = false;  // fields seen since the last dispatch
  size_t max_event_bytes_;
  bool overflowed_ = false;
};

}  // namespace edgeprobe::http
