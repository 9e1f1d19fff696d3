#include "cli/job_options.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "core/error.h"
#include "core/stop_token.h"
#include "core/text.h"
#include "store/store.h"

namespace edgeprobe::cli {

void add_store_flags(CLI::App* cmd, StoreFlags& f, const char* resume_help) {
  add_db_option(cmd, f.db);
  cmd->add_flag("--no-store", f.no_store, "Do not record the run in the results store");
  if (resume_help) cmd->add_option("--resume", f.resume, resume_help);
}

void add_endpoint_flags(CLI::App* cmd, app::Environment& env, const char* unit, const char* default_api) {
  cmd->add_option("--endpoint", env.endpoint,
                  "Measure an OpenAI-compatible server at this URL instead of in-process (docs/endpoint.md; "
                  "API key from $EDGEPROBE_API_KEY)");
  cmd->add_option("--api-model", env.api_model, "The model name requests to --endpoint carry");
  cmd->add_option("--api", env.api,
                  fmt::format("chat or completions: one streamed request per {} (in-process too; the default with "
                              "--endpoint: {})", unit, default_api));
  cmd->add_option("--server-pid", env.server_pid,
                  "Telemetry follows this local server's threads (CPU placement and share) instead of edgeprobe's");
  cmd->add_option("--request-timeout", env.request_timeout_s, "Seconds one request may take, stream included")
      ->capture_default_str();
}

std::unique_ptr<store::Store> open_store(const StoreFlags& f) {
  if (f.no_store && f.resume) throw_bad_input("--resume needs the results store; drop --no-store");
  if (f.resume < 0) throw_bad_input("--resume {}: run ids are positive", f.resume);
  if (f.no_store) return nullptr;
  return store::open_store(resolve_db_path(f.db), f.resume ? store::Mode::kMustExist : store::Mode::kCreate);
}

TerminalSink::TerminalSink(bool show_progress, std::unique_ptr<report::Reporter> bench_reporter)
    : display_(std::cerr, {progress_mode(show_progress, STDERR_FILENO), [] { return terminal_columns(STDERR_FILENO); }}),
      reporter_(std::move(bench_reporter)) {}

void TerminalSink::bench_begin(const result::Provenance& p, const std::vector<workload::TestCase>& cases) {
  if (reporter_) reporter_->begin(p, cases);
}

void TerminalSink::bench_result(const result::TestResult& r) {
  display_.clear();  // a row on the same terminal must not land inside the bar
  if (reporter_) reporter_->add(r);
}

void TerminalSink::bench_end(const result::BenchReport& report) {
  display_.clear();
  if (reporter_) reporter_->end(report);
}

namespace {

// A relative path would only work from this directory; a URL is left as it is.
std::string absolute_location(const std::string& location) {
  if (location.empty() || location.find("://") != std::string::npos) return location;
  return std::filesystem::absolute(location).lexically_normal().string();
}

}  // namespace

std::string resume_command(const std::string& subcommand, int64_t run_id, const std::string& location,
                           const std::string& default_location) {
  std::string cmd = fmt::format("edgeprobe {} --resume {}", subcommand, run_id);
  if (location == default_location) return cmd;
  return cmd + " --db " + shell_quote(absolute_location(location));
}

std::string job_summary(const app::JobOutcome& o, const std::string& location, const std::string& subcommand,
                        const ProgressSnapshot& p) {
  std::string line = subcommand + (o.interrupted ? " interrupted" : " done");
  if (p.total > 0) line += fmt::format("{} {}/{} {}", o.interrupted ? " after" : ":", p.done, p.total, p.unit);
  line += " in " + format_duration(p.elapsed_s);
  if (o.skipped > 0) line += fmt::format(" ({} not run: {})", o.skipped, o.skipped_why);
  if (!o.errors.empty()) line += fmt::format(", {} error{} (below)", o.errors.size(), o.errors.size() == 1 ? "" : "s");
  if (!o.contaminated.empty())
    line += fmt::format(", {} contaminated (below)", o.contaminated.size() == 1 ? "1 test" : fmt::format("{} tests", o.contaminated.size()));
  if (location.empty())
    line += o.interrupted ? "; nothing kept (--no-store): run it again to measure it all" : "; not stored (--no-store)";
  else if (o.run_id)
    line += fmt::format("; {} as run {} in {}", o.interrupted ? "what finished is kept" : "stored", o.run_id, location);
  return line;
}

int finish_job(const app::JobOutcome& o, const store::Store* store, const std::string& subcommand,
               const TerminalSink& sink) {
  const std::string location = store ? absolute_location(store->location()) : "";
  if (!sink.quiet()) std::cerr << "edgeprobe: " << job_summary(o, location, subcommand, sink.snapshot()) << "\n";
  if (o.interrupted && process_stop_now_requested())
    std::cerr << "edgeprobe: stopped at once (a second interrupt): the "
              << (subcommand == "session" ? "turn" : subcommand == "bench" ? "repetition" : "measurement")
              << " in flight was dropped\n";
  if (o.interrupted && store && o.run_id)
    std::cerr << "edgeprobe: continue with: "
              << resume_command(subcommand, o.run_id, location, store::default_db_path()) << "\n";
  for (const auto& e : o.errors) std::cerr << "edgeprobe: error: " << e << "\n";
  if (!sink.quiet())
    for (const auto& c : o.contaminated)
      std::cerr << "edgeprobe: contaminated: " << one_line(c, 600)
                << " (stored and flagged; measure it again on a quiet machine)\n";
  // An interrupted run is not a success, even when every finished unit was fine: 130 is
  // what a shell reports for a command ended by Ctrl-C.
  return o.exit_code != 0 ? o.exit_code : o.interrupted ? 130 : 0;
}

}  // namespace edgeprobe::cli
