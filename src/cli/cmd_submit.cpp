#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>

#include "app/stored_run.h"
#include "cli/cmd_serve.h"
#include "cli/hub_client.h"
#include "cli/shared_flags.h"

namespace edgeprobe::cli {

namespace {

struct SubmitFlags {
  SubmitTarget target;
  std::string input, db;
};

void run_submit(const SubmitFlags& f) {
  check_submit_target(f.target);
  // The same reader as report and compare: a document this build would refuse is not sent.
  const nlohmann::json doc = app::load_result_document(f.input, f.db);
  std::cout << submit_document(f.target, doc, f.input) << "\n";
}

}  // namespace

void register_submit(CLI::App& app) {
  auto f = std::make_shared<SubmitFlags>();
  CLI::App* cmd =
      app.add_subcommand("submit", "Send a run or result file to an edgeprobe hub (edgeprobe serve)");
  cmd->add_option("URL", f->target.url, "The hub: http://HOST:PORT")->required();
  cmd->add_option("RUN|FILE", f->input, "A run id in --db, or a result JSON file (bench, session, doctor)")
      ->required();
  add_db_option(cmd, f->db);
  cmd->add_option("--token-file", f->target.token_file,
                  "File holding the write token (default: $EDGEPROBE_HUB_TOKEN)");
  cmd->callback([f] { run_submit(*f); });
}

}  // namespace edgeprobe::cli
