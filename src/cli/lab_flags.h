#pragma once
// What every `lab` subcommand shares: its flags, and the helpers that turn them into
// devices, plans and a store. cmd_lab.cpp holds the built-in controller's subcommands,
// cmd_lab_lava.cpp LAVA's.
#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/plan.h"
#include "cli/shared_flags.h"
#include "lab/inventory.h"
#include "lab/lava_notify.h"
#include "store/store.h"

namespace edgeprobe::cli {

struct LabFlags {
  std::string inventory = "inventory.yml", devices, group, dist = "dist", db, cooldown;
  OutputFlags output;
  // The bench flags fill a bench plan that starts from bench's own defaults.
  app::BenchPlan bench;
  std::vector<std::string> plans, models, n_prompt = ints_as_text(bench.sweep.n_prompt),
                                          n_gen = ints_as_text(bench.sweep.n_gen), threads;
  double job_timeout_s = 6 * 3600, max_wait_s = 900;
  std::optional<double> thermal_limit;
  int64_t resume = 0;
  // LAVA (lab submit, lab import, lab run --resume of a LAVA lab run)
  std::string engine = "lava", artifacts_dir, artifacts_url, render_dir, notify_url, lava_log, lava_device;
  bool no_submit = false;
  double queue_deadline_s = 24 * 3600;
  int64_t lab_run = 0;
  size_t lava_job_index = 1;
  lab::lava::ReceiveOptions receive;
  std::string pool, pool_arch;
  int pool_count = 1;
};

std::vector<lab::Device> selected(const LabFlags& f);  // the inventory's, by --devices and --group
std::vector<app::Plan> plans_of(const LabFlags& f);    // plan files, or a bench plan from the bench flags
std::function<void(const std::string&)> sayer(bool quiet);
std::unique_ptr<store::Store> lab_store(const LabFlags& f, store::Mode mode);
CLI::App* with_selection(CLI::App* cmd, LabFlags& f);  // -i, --devices, --group, -o, --output
void add_bench_flags(CLI::App* cmd, LabFlags& f);       // -m -p -n -t -r --ceilings --sample-hz

// LAVA's subcommands (submit, import, receive, lava-cases), and its submit, which
// `lab run --resume` of a LAVA lab run calls.
void register_lab_lava(CLI::App* lab, const std::shared_ptr<LabFlags>& f, const std::vector<std::string>& command_line);
int lava_submit(const LabFlags& f, const std::string& command_line);

}  // namespace edgeprobe::cli
