#include "cli/cmd_runs.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <filesystem>
#include <iostream>
#include <memory>

namespace edgeprobe::cli {

std::string resolve_db_path(const std::string& db_option) {
  return db_option.empty() ? store::default_db_path() : db_option;
}

void print_runs(const std::vector<store::RunSummary>& runs, std::ostream& out) {
  if (runs.empty()) {
    fmt::print(out, "no runs stored\n");
    return;
  }
  fmt::print(out, "{:>5}  {:<24}  {:<7}  {:<8}  {:<20}  {:>7}  {:>5}  {:>5}  {}\n", "ID", "CREATED (UTC)", "KIND",
             "STATUS", "DEVICE", "CONFIGS", "REPS", "TURNS", "MODEL");
  for (const store::RunSummary& r : runs)
    fmt::print(out, "{:>5}  {:<24}  {:<7}  {:<8}  {:<20}  {:>7}  {:>5}  {:>5}  {}\n", r.id, r.created_at, r.kind,
               r.status, r.device_id.empty() ? "-" : r.device_id, r.configurations, r.repetitions, r.turns,
               r.model.empty() ? "-" : r.model);
}

void register_runs(CLI::App& app) {
  auto db = std::make_shared<std::string>();
  auto filter = std::make_shared<store::RunFilter>();
  CLI::App* cmd = app.add_subcommand("runs", "List the runs in the results store");
  cmd->add_option("--db", *db, "Results database (default: $XDG_DATA_HOME/edgeprobe/results.db)");
  cmd->add_option("--device", filter->device, "Only runs of this device (its id, or any part of it)");
  cmd->add_option("--kind", filter->kind, "Only runs of this kind (bench, session, doctor)");
  cmd->callback([db, filter] {
    const std::string path = resolve_db_path(*db);
    if (db->empty() && !std::filesystem::exists(path)) {
      fmt::print("no runs stored yet ({} does not exist)\n", path);
      return;
    }
    const auto s = store::open_store(path, store::Mode::kMustExist);
    print_runs(s->list_runs(*filter), std::cout);
  });
}

}  // namespace edgeprobe::cli
