#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "app/stored_run.h"
#include "cli/cmd_serve.h"
#include "cli/shared_flags.h"
#include "core/bounded_input.h"
#include "core/error.h"
#include "core/text.h"
#include "http/client.h"

namespace edgeprobe::cli {

namespace {

struct SubmitFlags {
  std::string url, input, db, token_file;
  bool quiet = false;
};

std::string read_token(const std::string& file) {
  std::string token;
  if (!file.empty()) {
    token = read_bounded(file, 4096, "token file");
  } else if (const char* env = std::getenv("EDGEPROBE_HUB_TOKEN")) {
    token = env;
  }
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  if (token.empty()) throw_bad_input("submit needs a write token: --token-file FILE or $EDGEPROBE_HUB_TOKEN");
  return token;
}

std::string submit_url(std::string url) {
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
    throw_bad_input("'{}' is not a hub URL (http://HOST:PORT)", one_line(url, 120));
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url + "/api/submit";
}

#if EDGEPROBE_WITH_HTTP
// The hub's answer, in one line: its reason when it refused.
std::string hub_reason(const http::Response& r) {
  try {
    const auto j = nlohmann::json::parse(r.body);
    if (j.is_object() && j.contains("error") && j["error"].is_string()) return j["error"].get<std::string>();
  } catch (const nlohmann::json::exception&) {
  }
  return r.body.empty() ? "(no reason given)" : r.body;
}

void run_submit(const SubmitFlags& f) {
  const std::string url = submit_url(f.url);
  // The same reader as report and compare: a document this build would refuse is not sent.
  const nlohmann::json doc = app::load_result_document(f.input, f.db);
  http::ClientOptions o;
  o.bearer_token = read_token(f.token_file);
  http::Client client(o);
  const http::Response r =
      client.post_json(url, doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (r.status == 200 || r.status == 201) {
    const auto j = nlohmann::json::parse(r.body, nullptr, false);
    const auto run = j.is_object() ? j.value("run", nlohmann::json()) : nlohmann::json();
    std::cout << fmt::format("{}: run {} at {}/runs/{}\n", r.status == 201 ? "submitted" : "already there",
                             run.dump(), http::redact_url(f.url), run.dump());
    return;
  }
  const std::string why = one_line(hub_reason(r), 400);
  if (r.status >= 500)
    throw_environment("the hub at {} failed ({}): {}", http::redact_url(f.url), r.status, why);
  throw_bad_input("the hub refused {} ({}): {}", one_line(f.input, 120), r.status, why);
}
#else
void run_submit(const SubmitFlags& f) {
  submit_url(f.url);  // bad input first, as in a full build
  (void)read_token(f.token_file);
  throw_environment(
      "this edgeprobe was built without its HTTP client (EDGEPROBE_HTTP=OFF): it cannot reach a hub");
}
#endif

}  // namespace

void register_submit(CLI::App& app) {
  auto f = std::make_shared<SubmitFlags>();
  CLI::App* cmd =
      app.add_subcommand("submit", "Send a run or result file to an edgeprobe hub (edgeprobe serve)");
  cmd->add_option("URL", f->url, "The hub: http://HOST:PORT")->required();
  cmd->add_option("RUN|FILE", f->input, "A run id in --db, or a result JSON file (bench, session, doctor)")
      ->required();
  add_db_option(cmd, f->db);
  cmd->add_option("--token-file", f->token_file,
                  "File holding the write token (default: $EDGEPROBE_HUB_TOKEN)");
  cmd->callback([f] { run_submit(*f); });
}

}  // namespace edgeprobe::cli
