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
  explicit SseParser(Handler on_event) : on_event_(std::move(on_event)) {}

  // Feeds the next chunk; every event it completes is handed over, in order.
  void feed(std::string_view chunk);
  // End of stream: an event without its closing blank line is dropped (the standard
  // says so); returns true when one was pending, i.e. the stream was cut mid-event.
  bool finish();
  // Bytes of the line in progress, to bound a server that never ends a line.
  size_t pending_bytes() const { return line_.size(); }

 private:
  void line(std::string_view text);

  Handler on_event_;
  std::string line_;
  bool after_cr_ = false;  // the last byte was CR: an LF next belongs to the same line end
  SseEvent event_;
  bool has_data_ = false;
  bool pending_ = false;  // fields seen since the last dispatch
};

}  // namespace edgeprobe::http
