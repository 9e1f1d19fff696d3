#pragma once
// The wire stream (docs/wire-format.md) framed for a log that rewrites what passes through
// it. LAVA's job log escapes double quotes, drops carriage returns and escape characters,
// and replaces any line of 10^6 characters or more; JSON does not survive that, base64
// does. Each stream line becomes one or more records
//   EPJ1 N K/M BASE64     line N (from 1, without its '\n'), chunk K of M, at most
//                         kFrameChunkBytes raw bytes (an empty line is one empty chunk)
// and the stream closes with
//   EPJ1 END LINES SHA256  the line count and the SHA-256 of the raw lines, each with '\n'
// so a reader knows whether it holds all of it (docs/lab.md, "LAVA").
#include <cstddef>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/digest.h"

namespace edgeprobe::app {

inline constexpr std::string_view kFramePrefix = "EPJ1 ";
inline constexpr size_t kFrameChunkBytes = 48 * 1024;  // 64 KiB of base64, far under LAVA's 10^6

// An ostream whose every complete line goes to `out` as frames; finish() writes END.
class FramedOutput {
 public:
  explicit FramedOutput(std::ostream& out);
  ~FramedOutput();
  FramedOutput(const FramedOutput&) = delete;
  FramedOutput& operator=(const FramedOutput&) = delete;
  std::ostream& stream();
  void finish();  // a last line without '\n' is framed too, then END

 private:
  class Buffer;
  std::unique_ptr<Buffer> buffer_;
  std::unique_ptr<std::ostream> stream_;
};

// The stream back from a log's lines, in order. Lines without the prefix are the log's
// other output and are passed over; a record repeated (a log read twice) is ignored.
class FrameDecoder {
 public:
  // One line of the log. Returns the stream lines it completed (usually none or one).
  std::vector<std::string> line(std::string_view text);
  // Whether the END record arrived and matched what was decoded.
  bool ended() const { return ended_; }
  size_t lines() const { return lines_; }
  // "" while the stream is whole so far; else why decoding stopped (a record missing, one
  // that is not a frame, a checksum or count that does not match). Later lines are ignored.
  const std::string& problem() const { return problem_; }

 private:
  void fail(std::string why);
  size_t lines_ = 0;           // complete lines decoded
  size_t chunk_ = 0, of_ = 0;  // the chunk expected next of the line in progress (0: none)
  std::string partial_;
  bool ended_ = false;
  std::string problem_;
  Sha256 sha_;  // of the decoded lines, each with its '\n'
};

}  // namespace edgeprobe::app
