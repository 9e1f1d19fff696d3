#include "cli/cmd_serve.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "cli/shared_flags.h"
#include "core/error.h"
#include "core/stop_token.h"
#include "hub/server.h"
#include "hub/tokens.h"
#include "kv/net.h"

namespace edgeprobe::cli {

namespace {

struct ServeFlags {
  hub::HubOptions hub;
  std::string listen = "127.0.0.1:8080";
  std::string add_token, revoke_token;
  hub::TokenEntry limits;
  bool quiet = false;
};

void manage_tokens(const ServeFlags& f) {
  if (f.hub.token_file.empty()) throw_bad_input("--add-token and --revoke-token need --tokens FILE");
  if (!f.revoke_token.empty()) {
    hub::revoke_token(f.hub.token_file, f.revoke_token);
    std::cerr << fmt::format("revoked '{}' in {}\n", f.revoke_token, f.hub.token_file);
    return;
  }
  hub::TokenEntry limits = f.limits;
  limits.name = f.add_token;
  // The token itself is printed once, on stdout, and stored nowhere: only its hash is.
  std::cout << hub::add_token(f.hub.token_file, limits) << "\n";
  std::cerr << fmt::format("added '{}' to {} (at most {} bytes a submission, {} a minute)\n", limits.name,
                           f.hub.token_file, limits.max_bytes, limits.per_minute);
}

void run_serve(ServeFlags& f) {
  if (!f.add_token.empty() || !f.revoke_token.empty()) return manage_tokens(f);
  const kv::Endpoint at = kv::parse_endpoint(f.listen);
  f.hub.host = at.host;
  f.hub.port = at.port;
  if (!f.hub.token_file.empty()) hub::read_token_file(f.hub.token_file);  // a broken file: one line now
  const ProcessStopWatch watching;  // Ctrl-C or SIGTERM stops the server between polls
  const bool quiet = f.quiet;
  hub::serve(
      f.hub, [] { return StopToken::process().stop_requested(); },
      [quiet](const std::string& line) {
        if (!quiet) std::cerr << "serve: " << line << std::endl;
      });
}

}  // namespace

void register_serve(CLI::App& app) {
  auto f = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand("serve",
                                     "Serve the results store as a web hub: runs, leaderboards, compare, "
                                     "and submissions with a write token");
  add_db_option(cmd, f->hub.db);
  cmd->add_option("--listen", f->listen, "HOST:PORT to listen on (port 0: any free one)")
      ->capture_default_str();
  cmd->add_option(
      "--tokens", f->hub.token_file,
      "Write-token file (NAME SHA256 [MAX_BYTES [PER_MINUTE]] a line); without it the hub is read-only");
  cmd->add_option("--add-token", f->add_token, "Add a write token NAME to --tokens, print it once, and exit");
  cmd->add_option("--revoke-token", f->revoke_token, "Remove the write token NAME from --tokens and exit");
  cmd->add_option("--token-max-bytes", f->limits.max_bytes,
                  "With --add-token: the largest submission it may send")
      ->capture_default_str();
  cmd->add_option("--token-rate", f->limits.per_minute, "With --add-token: submissions a minute it may send")
      ->capture_default_str();
  cmd->add_option("--threads", f->hub.threads, "Requests served at once")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--max-body-bytes", f->hub.max_body_bytes, "The largest request body any token may send")
      ->capture_default_str();
  cmd->add_option("--port-file", f->hub.port_file, "Write the port listened on to this file once ready");
  cmd->add_flag("-q,--quiet", f->quiet, "No log lines on stderr");
  cmd->callback([f] { run_serve(*f); });
}

}  // namespace edgeprobe::cli
