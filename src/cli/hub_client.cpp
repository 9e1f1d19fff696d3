#include "cli/hub_client.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "core/bounded_input.h"
#include "core/error.h"
#include "core/text.h"
#include "http/client.h"

namespace edgeprobe::cli {

namespace {

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

// "; flagged: REASON; REASON" when the hub flagged the run (kept and shown, with the flag).
std::string flag_note(const nlohmann::json& answer) {
  if (!answer.is_object() || !answer.contains("flags") || !answer["flags"].is_array()) return "";
  std::string out;
  for (const auto& f : answer["flags"])
    if (f.is_object() && f.contains("reason") && f["reason"].is_string())
      out += (out.empty() ? "" : "; ") + f["reason"].get<std::string>();
  return out.empty() ? "" : " (flagged: " + one_line(out, 600) + ")";
}
#endif

}  // namespace

void add_submit_flags(CLI::App* cmd, SubmitTarget& target) {
  cmd->add_option("--submit", target.url,
                  "After the run is stored and printed, send its result to this hub (http://HOST:PORT; "
                  "edgeprobe serve, docs/hub.md)");
  cmd->add_option("--token-file", target.token_file,
                  "File holding the hub's write token for --submit (default: $EDGEPROBE_HUB_TOKEN)");
}

void check_submit_target(const SubmitTarget& target) {
  if (!target.wanted()) return;
  submit_url(target.url);  // bad input first, in a build without HTTP too
  (void)read_token(target.token_file);
#if !EDGEPROBE_WITH_HTTP
  throw_environment(
      "this edgeprobe was built without its HTTP client (EDGEPROBE_HTTP=OFF): it cannot reach a hub");
#endif
}

#if EDGEPROBE_WITH_HTTP
std::string submit_document(const SubmitTarget& target, const nlohmann::json& document,
                            const std::string& what) {
  const std::string url = submit_url(target.url);
  http::ClientOptions o;
  o.bearer_token = read_token(target.token_file);
  http::Client client(o);
  const http::Response r =
      client.post_json(url, document.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (r.status == 200 || r.status == 201) {
    const auto j = nlohmann::json::parse(r.body, nullptr, false);
    const auto run = j.is_object() ? j.value("run", nlohmann::json()) : nlohmann::json();
    return fmt::format("{}: run {} at {}/runs/{}{}", r.status == 201 ? "submitted" : "already there",
                       run.dump(), http::redact_url(target.url), run.dump(), flag_note(j));
  }
  const std::string why = one_line(hub_reason(r), 400);
  if (r.status >= 500)
    throw_environment("the hub at {} failed ({}): {}", http::redact_url(target.url), r.status, why);
  throw_bad_input("the hub refused {} ({}): {}", one_line(what, 120), r.status, why);
}
#else
std::string submit_document(const SubmitTarget& target, const nlohmann::json&, const std::string&) {
  check_submit_target(target);
  throw_environment(
      "this edgeprobe was built without its HTTP client (EDGEPROBE_HTTP=OFF): it cannot reach a hub");
}
#endif

int submit_finished_job(const SubmitTarget& target, int job_exit_code, const nlohmann::json& document,
                        int64_t stored_run, const store::Store* store) {
  if (!target.wanted()) return job_exit_code;
  if (job_exit_code != 0) {
    std::cerr << fmt::format("edgeprobe: not submitted to {}: the run did not finish cleanly (exit {})\n",
                             target.url, job_exit_code);
    return job_exit_code;
  }
  std::string db = store ? store->location() : "";
  if (!db.empty() && db.find("://") == std::string::npos)
    db = std::filesystem::absolute(db).lexically_normal().string();
  const std::string again = stored_run > 0 ? fmt::format("edgeprobe submit {} {} --db {}",
                                                         shell_quote(target.url), stored_run, shell_quote(db))
                                           : "edgeprobe submit " + shell_quote(target.url) +
                                                 " FILE (the result written with -o json --output FILE)";
  try {
    std::cerr << "edgeprobe: " << submit_document(target, document, "the run") << "\n";
    return 0;
  } catch (const Error& e) {
    std::cerr << fmt::format("edgeprobe: error: --submit: {}; the result is kept{}: send it again with: {}\n",
                             one_line(e.what(), 600),
                             stored_run > 0 ? fmt::format(" (run {} in {})", stored_run, db) : "", again);
    return e.exit_code();
  }
}

}  // namespace edgeprobe::cli
