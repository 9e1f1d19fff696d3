#pragma once
#include <memory>
#include <string>

#include "app/job.h"
#include "app/plan.h"
#include "cli/common.h"
#include "cli/shared_flags.h"
#include "core/progress.h"
#include "report/reporter.h"

namespace CLI {
class App;
}
namespace edgeprobe::store {
class Store;
}

namespace edgeprobe::cli {

// The flags every job subcommand shares, declared once.
struct StoreFlags {
  std::string db;  // path or URL; "" = the default store
  bool no_store = false;
  int64_t resume = 0;
};
// --db and --no-store; --resume too where resume_help is given (doctor does not resume).
void add_store_flags(CLI::App* cmd, StoreFlags& flags, const char* resume_help);
// Null with --no-store; the default store or --db otherwise (it must exist to resume).
std::unique_ptr<store::Store> open_store(const StoreFlags& flags);

// --endpoint, --api-model, --api, --server-pid, --request-timeout (docs/endpoint.md):
// `unit` is what one request measures ("repetition", "turn"), `default_api` the API an
// endpoint gets without --api.
void add_endpoint_flags(CLI::App* cmd, app::Environment& env, const char* unit, const char* default_api);

// The job's progress display on stderr (core/progress.h: a bar on a terminal, plain lines
// otherwise, nothing with -q) and bench rows through the chosen reporter as they complete.
class TerminalSink : public app::JobSink {
 public:
  explicit TerminalSink(bool show_progress, std::unique_ptr<report::Reporter> bench_reporter = nullptr);
  void progress(const std::string& step) override { display_.step(step); }
  void warning(const std::string& text) override { display_.warning(text); }
  void units(size_t done, size_t total, const std::string& unit) override { display_.units(done, total, unit); }
  void bench_begin(const result::Provenance& p, const std::vector<workload::TestCase>& cases) override;
  void bench_result(const result::TestResult& r) override;
  void bench_end(const result::BenchReport& report) override;
  // Erases the bar before the report and the last words.
  void done() { display_.clear(); }
  bool quiet() const { return display_.mode() == ProgressMode::kOff; }
  ProgressSnapshot snapshot() const { return display_.snapshot(); }

 private:
  ProgressDisplay display_;
  std::unique_ptr<report::Reporter> reporter_;
};

// The job's last words on stderr: one summary line (what ran, how long, where it was
// stored), the exact command that continues an interrupted run, each distinct error once;
// and the exit code. -q keeps only the errors and the command that continues.
int finish_job(const app::JobOutcome& outcome, const store::Store* store, const std::string& subcommand,
               const TerminalSink& sink);
// The summary line itself (without "edgeprobe: " and newline), for tests.
std::string job_summary(const app::JobOutcome& outcome, const std::string& store_location,
                        const std::string& subcommand, const ProgressSnapshot& progress);
// "edgeprobe bench --resume 7 --db /abs/path.db" (no --db for the default store).
std::string resume_command(const std::string& subcommand, int64_t run_id, const std::string& store_location,
                           const std::string& default_location);

}  // namespace edgeprobe::cli
