#include "cli/cmd_runs.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/shared_flags.h"
#include "core/error.h"
#include "core/text.h"
#include "report/formats.h"

namespace edgeprobe::cli {

void print_runs(const std::vector<store::RunSummary>& runs, std::ostream& out) {
  if (runs.empty()) {
    fmt::print(out, "no runs stored\n");
    return;
  }
  fmt::print(out, "{:>5}  {:<24}  {:<7}  {:<8}  {:<20}  {:>7}  {:>5}  {:>5}  {}\n", "ID", "CREATED (UTC)",
             "KIND", "STATUS", "DEVICE", "CONFIGS", "REPS", "TURNS", "MODEL");
  for (const store::RunSummary& r : runs)
    fmt::print(out, "{:>5}  {:<24}  {:<7}  {:<8}  {:<20}  {:>7}  {:>5}  {:>5}  {}\n", r.id, r.created_at,
               r.kind, r.status, r.device_id.empty() ? "-" : r.device_id, r.configurations, r.repetitions,
               r.turns, r.model.empty() ? "-" : r.model);
}

namespace {

// Ordered: the keys read in the table's column order.
using ordered_json = nlohmann::ordered_json;

ordered_json or_null(const std::string& text) {
  return text.empty() ? ordered_json(nullptr) : ordered_json(text);
}

ordered_json runs_json(const std::vector<store::RunSummary>& runs) {
  ordered_json out = ordered_json::array();
  for (const store::RunSummary& r : runs)
    out.push_back({{"id", r.id},
                   {"created_at", r.created_at},
                   {"kind", r.kind},
                   {"status", r.status},
                   {"device_id", or_null(r.device_id)},
                   {"configurations", r.configurations},
                   {"repetitions", r.repetitions},
                   {"turns", r.turns},
                   {"model", or_null(r.model)}});
  return out;
}

void write_runs_csv(const std::vector<store::RunSummary>& runs, std::ostream& out) {
  out << "id,created_at,kind,status,device_id,configurations,repetitions,turns,model\n";
  for (const store::RunSummary& r : runs)
    fmt::print(out, "{},{},{},{},{},{},{},{},{}\n", r.id, csv_field(r.created_at), csv_field(r.kind),
               csv_field(r.status), csv_field(r.device_id), r.configurations, r.repetitions, r.turns,
               csv_field(r.model));
}

store::RunFilter newest(size_t last) {
  store::RunFilter filter;
  filter.last = last;
  return filter;
}

}  // namespace

void write_runs(const std::vector<store::RunSummary>& runs, const std::string& format, std::ostream& out) {
  if (format == "md")
    print_runs(runs, out);
  else if (format == "json")
    out << runs_json(runs).dump(2) << "\n";
  else if (format == "csv")
    write_runs_csv(runs, out);
  else if (format == "jsonl")
    for (const auto& run : runs_json(runs)) out << run.dump() << "\n";
  else
    throw_bad_input("unknown output format '{}'; use md, csv, json or jsonl", format);
}

void register_runs(CLI::App& app) {
  struct Args {
    std::string db;
    store::RunFilter filter = newest(50);  // a lab's store holds years: the newest by default
    OutputFlags output;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("runs", "List the runs in the results store");
  add_db_option(cmd, a->db);
  cmd->add_option("--device", a->filter.device, "Only runs of this device (its id, or any part of it)");
  cmd->add_option("--kind", a->filter.kind, "Only runs of this kind (bench, session, doctor, lab)")
      ->check(one_of({"bench", "session", "doctor", "lab"}, "kind"));
  cmd->add_option("--model", a->filter.model, "Only runs of this model (the label the table shows, e.g. tiny-q4_0.gguf)");
  cmd->add_option("--last", a->filter.last, "Only the newest N matching runs, oldest first (0 = all)")
      ->capture_default_str();
  add_output_options(cmd, a->output, {report::formats_of(report::OutputKind::kRuns)});
  cmd->callback([a] {
    const std::string path = resolve_db_path(a->db);
    std::vector<store::RunSummary> runs;
    if (a->db.empty() && !std::filesystem::exists(path)) {
      // No default store yet: no runs, said so in the table; json and csv stay parseable.
      if (a->output.format == "md") {
        write_output(a->output.file, fmt::format("no runs stored yet ({} does not exist)\n", path));
        return;
      }
    } else {
      runs = store::open_store(path, store::Mode::kMustExist)->list_runs(a->filter);
    }
    std::ostringstream text;
    write_runs(runs, a->output.format, text);
    write_output(a->output.file, text.str());
    // Once the list is out, on stderr, so that json and csv stay what they are: there may be more.
    if (a->filter.last > 0 && runs.size() == a->filter.last && !a->output.quiet)
      std::cerr << fmt::format("edgeprobe: the newest {} runs; --last 0 lists them all\n", runs.size());
  });
}

}  // namespace edgeprobe::cli
