#include "app/stream_frames.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <ostream>
#include <streambuf>

#include "core/text.h"

namespace edgeprobe::app {

// Collects bytes until a newline, then writes the line's frames.
class FramedOutput::Buffer : public std::streambuf {
 public:
  explicit Buffer(std::ostream& out) : out_(out) {}

  void finish() {
    if (!pending_.empty()) frame_line();
    out_ << fmt::format("{}END {} {}\n", kFramePrefix, lines_, sha_.hex());
    out_.flush();
  }

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    take(static_cast<char>(c));
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    for (std::streamsize i = 0; i < n; ++i) take(s[i]);
    return n;
  }
  int sync() override {
    out_.flush();
    return out_ ? 0 : -1;
  }

 private:
  void take(char c) {
    if (c != '\n') {
      pending_ += c;
      return;
    }
    frame_line();
  }
  void frame_line() {
    sha_.update(pending_);
    sha_.update("\n");
    ++lines_;
    const size_t chunks = std::max<size_t>(1, (pending_.size() + kFrameChunkBytes - 1) / kFrameChunkBytes);
    for (size_t k = 0; k < chunks; ++k)
      out_ << fmt::format("{}{} {}/{} {}\n", kFramePrefix, lines_, k + 1, chunks,
                          base64_encode(std::string_view(pending_).substr(k * kFrameChunkBytes, kFrameChunkBytes)));
    pending_.clear();
  }

  std::ostream& out_;
  std::string pending_;
  size_t lines_ = 0;
  Sha256 sha_;
};

FramedOutput::FramedOutput(std::ostream& out)
    : buffer_(std::make_unique<Buffer>(out)), stream_(std::make_unique<std::ostream>(buffer_.get())) {}
FramedOutput::~FramedOutput() = default;
std::ostream& FramedOutput::stream() { return *stream_; }
void FramedOutput::finish() {
  stream_->flush();
  buffer_->finish();
}

namespace {

bool parse_count(std::string_view text, size_t& out) {
  if (text.empty() || text.size() > 18) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

std::vector<std::string_view> words(std::string_view text) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    const size_t start = i;
    while (i < text.size() && text[i] != ' ') ++i;
    if (i > start) out.push_back(text.substr(start, i - start));
  }
  return out;
}

}  // namespace

void FrameDecoder::fail(std::string why) {
  if (problem_.empty()) problem_ = std::move(why);
}

std::vector<std::string> FrameDecoder::line(std::string_view text) {
  std::vector<std::string> done;
  if (!problem_.empty() || ended_) return done;
  // A frame is a whole line: LAVA's test shell traces its commands (`+ echo 'EPJ1 ...'`),
  // and a line that only mentions the prefix is the log's, not the stream's.
  const size_t at = text.find_first_not_of(" \t");
  if (at == std::string_view::npos || text.substr(at, kFramePrefix.size()) != kFramePrefix) return done;
  // A log may end a line with spaces or a carriage return of its own.
  std::string_view body = text.substr(at + kFramePrefix.size());
  while (!body.empty() && (body.back() == ' ' || body.back() == '\r' || body.back() == '\n')) body.remove_suffix(1);
  auto w = words(body);
  const std::string shown = one_line(text.substr(at, 60), 80);
  if (w.size() == 3 && w[0] == "END") {
    size_t count = 0;
    if (!parse_count(w[1], count)) {
      fail(fmt::format("the stream's END record is not a frame: {}", shown));
    } else if (chunk_ != 0) {
      fail(fmt::format("the stream ended in the middle of line {} (chunk {} of {} missing)", lines_ + 1, chunk_, of_));
    } else if (count != lines_) {
      fail(fmt::format("the stream's END counts {} lines but {} arrived (a record missing from the log?)", count,
                       lines_));
    } else if (w[2] != sha_.hex()) {
      fail(fmt::format("the stream's SHA-256 does not match its {} lines: the log altered a record", lines_));
    } else {
      ended_ = true;
    }
    return done;
  }
  size_t n = 0, k = 0, m = 0;
  if (w.size() == 2) w.push_back({});  // an empty chunk (an empty line) has no third word
  const size_t slash = w.size() == 3 ? w[1].find('/') : std::string_view::npos;
  if (w.size() != 3 || !parse_count(w[0], n) || slash == std::string_view::npos ||
      !parse_count(w[1].substr(0, slash), k) || !parse_count(w[1].substr(slash + 1), m) || n == 0 || k == 0 ||
      m == 0 || k > m) {
    fail(fmt::format("a log line is not a stream frame: {}", shown));
    return done;
  }
  const size_t expected_line = lines_ + 1, expected_chunk = chunk_ == 0 ? 1 : chunk_;
  if (n < expected_line || (n == expected_line && k < expected_chunk)) return done;  // seen already
  if (n != expected_line || k != expected_chunk || (chunk_ != 0 && m != of_)) {
    fail(fmt::format("stream line {} is missing from the log (next was line {}, chunk {}/{}): LAVA replaces lines of "
                     "10^6 characters and more",
                     expected_line, n, k, m));
    return done;
  }
  const auto bytes = base64_decode(w[2]);
  if (!bytes) {
    fail(fmt::format("stream line {} chunk {}/{} is not base64 (the log altered it)", n, k, m));
    return done;
  }
  partial_ += *bytes;
  if (k < m) {
    chunk_ = k + 1;
    of_ = m;
    return done;
  }
  chunk_ = of_ = 0;
  sha_.update(partial_);
  sha_.update("\n");
  ++lines_;
  done.push_back(std::move(partial_));
  partial_.clear();
  return done;
}

}  // namespace edgeprobe::app
