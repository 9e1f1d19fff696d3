#pragma once
#include <fstream>
#include <iosfwd>
#include <memory>
#include <string>

#include "app/job.h"
#include "cli/common.h"
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
void add_store_flags(CLI::App* cmd, StoreFlags& flags, const char* resume_help);
// Null with --no-store; the default store or --db otherwise (it must exist to resume).
std::unique_ptr<store::Store> open_store(const StoreFlags& flags);

struct OutputFlags {
  std::string format = "md";
  std::string file;  // "" = stdout
  bool quiet = false;
};
void add_output_flags(CLI::App* cmd, OutputFlags& flags, const char* formats_help);
// Throws kBadInput for a format no reporter writes (before anything is measured).
void check_format(const OutputFlags& flags);

// --output FILE or stdout; the file is opened before any measuring, so a bad path fails
// in a second.
class Output {
 public:
  explicit Output(const std::string& file);
  std::ostream& stream();

 private:
  std::ofstream file_;
  bool to_file_;
};

// Progress on stderr and bench rows through the chosen reporter as they complete.
class TerminalSink : public app::JobSink {
 public:
  TerminalSink(bool show_progress, std::unique_ptr<report::Reporter> bench_reporter = nullptr)
      : progress_(show_progress), reporter_(std::move(bench_reporter)) {}
  void progress(const std::string& step) override { progress_.update(step); }
  void bench_begin(const result::Provenance& p, const std::vector<workload::TestCase>& cases) override;
  void bench_result(const result::TestResult& r) override;
  void bench_end(const result::BenchReport& report) override;
  void done() { progress_.finish(); }

 private:
  Progress progress_;
  std::unique_ptr<report::Reporter> reporter_;
};

// The job's last words on stderr (where it was stored, how to resume, what failed, once
// per distinct message) and the exit code.
int finish_job(const app::JobOutcome& outcome, const store::Store* store, const std::string& subcommand,
               bool quiet);

}  // namespace edgeprobe::cli
