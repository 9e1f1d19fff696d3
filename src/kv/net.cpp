#include "kv/net.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/text.h"

namespace edgeprobe::kv {
namespace {

// Waits until fd is ready for `events`; false on timeout.
bool wait_ready(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int rc = ::poll(&p, 1, timeout_ms);
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) throw_environment("poll failed: {}", std::strerror(errno));
  }
}

struct AddrInfo {
  addrinfo* list = nullptr;
  ~AddrInfo() {
    if (list) freeaddrinfo(list);
  }
};

AddrInfo resolve(const Endpoint& e, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  AddrInfo ai;
  const std::string port = std::to_string(e.port);
  if (const int rc = getaddrinfo(e.host.c_str(), port.c_str(), &hints, &ai.list); rc != 0)
    throw_environment("cannot resolve '{}': {}", e.host, gai_strerror(rc));
  return ai;
}

void tune(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

std::string Endpoint::to_string() const {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port)
                                             : fmt::format("{}:{}", host, port);
}

Endpoint parse_endpoint(const std::string& text) {
  Endpoint e;
  std::string port;
  if (text.starts_with("[")) {
    const auto close = text.find("]:");
    if (close == std::string::npos) throw_bad_input("invalid address '{}': expected [IPV6]:PORT", text);
    e.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0)
      throw_bad_input("invalid address '{}': expected HOST:PORT", text);
    e.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    throw_bad_input("invalid port in '{}': expected a number 0..65535", text);
  e.port = std::stoi(port);
  if (e.port > 65535) throw_bad_input("invalid port in '{}': expected a number 0..65535", text);
  return e;
}

Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void Socket::write_all(const void* data, size_t size, int timeout_ms) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd_, p, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!wait_ready(fd_, POLLOUT, timeout_ms))
        throw_environment("kv peer accepted no data for {} ms (stalled)", timeout_ms);
      continue;
    }
    throw_environment("kv connection lost while sending: {}", std::strerror(errno));
  }
}

void Socket::read_exact(void* data, size_t size, int timeout_ms) {
  auto* p = static_cast<uint8_t*>(data);
  while (size > 0) {
    const ssize_t n = ::recv(fd_, p, size, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0)
      throw_environment("kv peer closed the connection with {} bytes of a frame still to come", size);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (!wait_ready(fd_, POLLIN, timeout_ms))
        throw_environment("kv peer sent nothing for {} ms (stalled)", timeout_ms);
      continue;
    }
    throw_environment("kv connection lost while receiving: {}", std::strerror(errno));
  }
}

Socket::Wait Socket::wait_readable(int timeout_ms) {
  if (!wait_ready(fd_, POLLIN, timeout_ms)) return Wait::kTimeout;
  uint8_t byte;
  const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n > 0 ? Wait::kData : n == 0 ? Wait::kClosed : (errno == EAGAIN ? Wait::kData : Wait::kClosed);
}

Socket connect_tcp(const Endpoint& endpoint, int timeout_ms) {
  const AddrInfo ai = resolve(endpoint, false);
  std::string last_error = "no address";
  for (addrinfo* a = ai.list; a; a = a->ai_next) {
    Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.valid()) continue;
    if (::connect(s.fd(), a->ai_addr, a->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) {
        last_error = std::strerror(errno);
        continue;
      }
      if (!wait_ready(s.fd(), POLLOUT, timeout_ms)) {
        last_error = fmt::format("no answer in {} ms", timeout_ms);
        continue;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) {
        last_error = std::strerror(err);
        continue;
      }
    }
    tune(s.fd());
    return s;
  }
  throw_environment("cannot connect to the kv server at {}: {}", endpoint.to_string(), last_error);
}

Listener::Listener(const Endpoint& endpoint) {
  const AddrInfo ai = resolve(endpoint, true);
  std::string last_error = "no address";
  for (addrinfo* a = ai.list; a; a = a->ai_next) {
    Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.valid()) continue;
    const int one = 1;
    setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(s.fd(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(s.fd(), 512) != 0) {
      last_error = std::strerror(errno);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    getsockname(s.fd(), reinterpret_cast<sockaddr*>(&bound), &len);
    port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    socket_ = std::move(s);
    return;
  }
  throw_environment("cannot listen on {}: {}", endpoint.to_string(), last_error);
}

Socket Listener::accept(int timeout_ms, int* error) {
  if (error) *error = 0;
  if (!wait_ready(socket_.fd(), POLLIN, timeout_ms)) return Socket();
  Socket s(::accept4(socket_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
  if (s.valid())
    tune(s.fd());
  else if (error)
    *error = errno;
  return s;
}

size_t raise_descriptor_limit() {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0) return 0;
  if (files.rlim_cur < files.rlim_max) {
    rlimit raised = files;
    raised.rlim_cur = files.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) files = raised;
  }
  size_t open = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != decltype(it){};
       it.increment(ec))
    ++open;
  const rlim_t limit = std::min<rlim_t>(files.rlim_cur, 1u << 20);  // RLIM_INFINITY: plenty
  return limit > open ? static_cast<size_t>(limit - open) : 0;
}

void send_frame(Socket& socket, FrameType type, const uint8_t* payload, size_t size, int timeout_ms) {
  send_frame(socket, type, payload, size, checksum(payload, size), timeout_ms);
}

void send_frame(Socket& socket, FrameType type, const uint8_t* payload, size_t size, uint32_t crc,
                int timeout_ms) {
  const auto header = encode_header({type, size, crc});
  socket.write_all(header.data(), header.size(), timeout_ms);
  socket.write_all(payload, size, timeout_ms);
}

void send_json(Socket& socket, FrameType type, const nlohmann::json& body, int timeout_ms) {
  const std::string text = body.dump();
  send_frame(socket, type, reinterpret_cast<const uint8_t*>(text.data()), text.size(), timeout_ms);
}

Frame receive_frame(Socket& socket, const Limits& limits, int timeout_ms, std::vector<uint8_t> reuse) {
  uint8_t header_bytes[kHeaderBytes];
  socket.read_exact(header_bytes, sizeof(header_bytes), timeout_ms);
  const FrameHeader h = decode_header(header_bytes, limits);
  Frame f;
  f.type = h.type;
  f.payload = std::move(reuse);
  // The buffer grows with what arrives, so a peer that announces more than it sends makes
  // us hold at most one step more than it sent (the length is bounded by `limits` too).
  // The checksum runs chunk by chunk while the kernel buffers the next one.
  constexpr uint64_t kStep = 64ull << 20;
  constexpr size_t kChunk = 1 << 20;
  uint32_t crc = 0;
  size_t have = 0;
  while (have < h.length) {
    const size_t step = static_cast<size_t>(std::min<uint64_t>(kChunk, h.length - have));
    if (f.payload.size() < have + step)
      f.payload.resize(static_cast<size_t>(std::min<uint64_t>(h.length, have + kStep)));
    socket.read_exact(f.payload.data() + have, step, timeout_ms);
    crc = checksum(f.payload.data() + have, step, crc);
    have += step;
  }
  f.payload.resize(h.length);
  verify_checksum(h, crc);
  return f;
}

std::string error_message(const Frame& frame) {
  const auto j = nlohmann::json::parse(frame.payload.begin(), frame.payload.end(), nullptr, false);
  if (!j.is_object() || !j.contains("message") || !j["message"].is_string() || j["message"].get_ref<const std::string&>().empty())
    return "(no reason given)";
  return one_line(j["message"].get_ref<const std::string&>(), 300);
}

nlohmann::json receive_json(Socket& socket, FrameType expected, const Limits& limits, int timeout_ms) {
  const Frame f = receive_frame(socket, limits, timeout_ms);
  if (f.type == FrameType::kError) throw_environment("kv peer refused: {}", error_message(f));
  if (f.type != expected)
    throw_environment("kv peer sent a {} frame where a {} frame belongs", frame_type_name(f.type),
                      frame_type_name(expected));
  return f.json();
}

}  // namespace edgeprobe::kv
