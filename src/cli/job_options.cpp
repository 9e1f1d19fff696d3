#include "cli/job_options.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "core/error.h"
#include "core/text.h"
#include "store/store.h"

namespace edgeprobe::cli {

void add_store_flags(CLI::App* cmd, StoreFlags& f, const char* resume_help) {
  cmd->add_option("--db", f.db, "Results store: a SQLite path or URL (default: ~/.local/share/edgeprobe/results.db)");
  cmd->add_flag("--no-store", f.no_store, "Do not record the run in the results store");
  cmd->add_option("--resume", f.resume, resume_help);
}

std::unique_ptr<store::Store> open_store(const StoreFlags& f) {
  if (f.no_store && f.resume) throw_bad_input("--resume needs the results store; drop --no-store");
  if (f.resume < 0) throw_bad_input("--resume {}: run ids are positive", f.resume);
  if (f.no_store) return nullptr;
  return store::open_store(f.db.empty() ? store::default_db_path() : f.db,
                           f.resume ? store::Mode::kMustExist : store::Mode::kCreate);
}

void add_output_flags(CLI::App* cmd, OutputFlags& f, const char* formats_help) {
  cmd->add_option("-o,--output-format", f.format, formats_help)->capture_default_str();
  cmd->add_option("--output", f.file, "Write the results to FILE instead of stdout");
  cmd->add_flag("-q,--quiet", f.quiet, "No progress on stderr");
}

void check_format(const OutputFlags& f) {
  const auto formats = report::reporter_formats();
  if (std::find(formats.begin(), formats.end(), f.format) == formats.end())
    throw_bad_input("unknown output format '{}'; use md, csv, json or jsonl", f.format);
}

Output::Output(const std::string& file) : to_file_(!file.empty()) {
  if (!to_file_) return;
  file_.open(file, std::ios::trunc);
  if (!file_) throw_bad_input("cannot write --output '{}'", file);
}

std::ostream& Output::stream() { return to_file_ ? file_ : std::cout; }

void TerminalSink::bench_begin(const result::Provenance& p, const std::vector<workload::TestCase>& cases) {
  if (reporter_) reporter_->begin(p, cases);
}

void TerminalSink::bench_result(const result::TestResult& r) {
  progress_.finish();
  if (reporter_) reporter_->add(r);
}

void TerminalSink::bench_end(const result::BenchReport& report) {
  progress_.finish();
  if (reporter_) reporter_->end(report);
}

int finish_job(const app::JobOutcome& o, const store::Store* store, const std::string& subcommand, bool quiet) {
  if (store && o.run_id && !quiet) {
    std::cerr << fmt::format("edgeprobe: stored as run {} in {}", o.run_id, store->location());
    if (o.interrupted)
      std::cerr << fmt::format(" (interrupted: 'edgeprobe {} --resume {}{}' finishes it)", subcommand, o.run_id,
                               store->location() == store::default_db_path() ? "" : " --db " + shell_quote(store->location()));
    std::cerr << "\n";
  }
  for (const auto& e : o.errors) std::cerr << "edgeprobe: error: " << e << "\n";
  // An interrupted run is not a success, even when every finished unit was fine: 130 is
  // what a shell reports for a command ended by Ctrl-C.
  return o.exit_code != 0 ? o.exit_code : o.interrupted ? 130 : 0;
}

}  // namespace edgeprobe::cli
