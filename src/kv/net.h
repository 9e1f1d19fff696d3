#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kv/protocol.h"

// TCP for the KV transfer: every read and write has a deadline of no progress, so a
// stalled peer ends the exchange with a clear error instead of a hang.
namespace edgeprobe::kv {

struct Endpoint {
  std::string host;
  int port = 0;
  std::string to_string() const;
};
// "HOST:PORT", "[::1]:PORT"; throws Error(kBadInput) naming the value.
Endpoint parse_endpoint(const std::string& text);

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket();
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

  // Throws Error(kEnvironment) on a closed connection or `timeout_ms` without progress.
  void write_all(const void* data, size_t size, int timeout_ms);
  void read_exact(void* data, size_t size, int timeout_ms);
  // Whether the peer sent something (kData), closed the connection cleanly (kClosed) or
  // did neither within timeout_ms.
  enum class Wait { kData, kClosed, kTimeout };
  Wait wait_readable(int timeout_ms);

 private:
  int fd_ = -1;
};

Socket connect_tcp(const Endpoint& endpoint, int timeout_ms);

// A server holds a descriptor per connection: raises this process's soft limit on open
// files to its hard limit, and returns how many more it may open then.
size_t raise_descriptor_limit();

class Listener {
 public:
  // Port 0 picks a free one (port() says which).
  explicit Listener(const Endpoint& endpoint);
  int port() const { return port_; }
  int fd() const { return socket_.fd(); }
  // Waits up to timeout_ms (-1: forever) for a connection; an invalid Socket on timeout or
  // when accept(2) fails, its errno then in *error (EMFILE: this process is out of
  // descriptors, and the connection stays queued, so the listener stays readable).
  Socket accept(int timeout_ms, int* error = nullptr);

 private:
  Socket socket_;
  int port_ = 0;
};

// One frame over a socket: the header is checked against `limits` before the payload is
// allocated, and the payload against its checksum.
void send_frame(Socket& socket, FrameType type, const uint8_t* payload, size_t size, int timeout_ms);
// With the payload's checksum computed beforehand (the server does it while serializing,
// so the link's time is the link's).
void send_frame(Socket& socket, FrameType type, const uint8_t* payload, size_t size, uint32_t crc,
                int timeout_ms);
void send_json(Socket& socket, FrameType type, const nlohmann::json& body, int timeout_ms);
// `reuse`: a buffer from an earlier frame to receive into (its pages are already mapped).
Frame receive_frame(Socket& socket, const Limits& limits, int timeout_ms, std::vector<uint8_t> reuse = {});
// The message of a peer's kError frame as one escaped, bounded line (a peer's words: it
// may send a megabyte of lines and escape codes); "(no reason given)" when it has none.
std::string error_message(const Frame& frame);
// A frame of the expected type as JSON; a peer's kError frame becomes an exception
// carrying its message.
nlohmann::json receive_json(Socket& socket, FrameType expected, const Limits& limits, int timeout_ms);

}  // namespace edgeprobe::kv
