#pragma once
// `edgeprobe serve`: the results store as a web application (cpp-httplib), its pages and
// JSON endpoints, and submissions when write tokens are configured. docs/hub.md.
#include <cstddef>
#include <functional>
#include <string>

namespace edgeprobe::hub {

struct HubOptions {
  std::string db;  // a store location, as --db everywhere
  std::string host = "127.0.0.1";
  int port = 8080;         // 0: any free port (the port file names it)
  std::string token_file;  // "" = read-only
  std::string port_file;   // written once listening ("" = none)
  // Bounds: every request is served by one of `threads`, at most `queue` wait for one
  // (the acceptor then waits, and the kernel's backlog refuses the rest); a socket idle
  // for io_timeout_s is closed; a submission's body must arrive within body_deadline_s
  // and within the hub's and its token's size limits.
  // A connection is closed after connection_limit_s whatever it is doing, so clients that
  // trickle bytes cannot hold the workers.
  int threads = 32;
  size_t queue = 64;
  int io_timeout_s = 5;
  int body_deadline_s = 30;
  int connection_limit_s = 40;
  size_t max_body_bytes = 64u << 20;
  double refresh_s = 10;  // how often runs written by others (a lab) are picked up
};

// Serves until `stop` returns true (polled ten times a second). Throws Error(kBadInput)
// for a store that cannot be opened or an address that cannot be bound. `log` gets one
// line per event worth a line (listening, a submission, a refused one).
void serve(const HubOptions& options, const std::function<bool()>& stop,
           const std::function<void(const std::string&)>& log);

}  // namespace edgeprobe::hub
