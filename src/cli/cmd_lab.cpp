#include "cli/cmd_lab.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <mutex>

#include "app/plan.h"
#include "cli/common.h"
#include "cli/lab_flags.h"
#include "cli/shared_flags.h"
#include "core/error.h"
#include "lab/check.h"
#include "lab/deploy.h"
#include "lab/lab_run.h"
#include "store/store.h"
#include "workload/sweep.h"
#include "report/lab_reporters.h"
#include "report/formats.h"

namespace edgeprobe::cli {

std::vector<lab::Device> selected(const LabFlags& f) {
  return lab::select_devices(lab::load_inventory(f.inventory), f.devices, f.group);
}

// Plan files, or a bench plan from the bench flags lab run takes.
std::vector<app::Plan> plans_of(const LabFlags& f) {
  std::vector<app::Plan> plans;
  for (const auto& p : f.plans) plans.push_back(app::read_plan(p));
  if (!plans.empty()) return plans;
  app::BenchPlan bench = f.bench;
  bench.sweep.n_prompt = workload::parse_int_lists(f.n_prompt, "-p");
  bench.sweep.n_gen = workload::parse_int_lists(f.n_gen, "-n");
  bench.sweep.threads = workload::parse_int_lists(f.threads, "-t");
  std::vector<std::string> models;
  for (const auto& m : f.models)
    for (const auto& item : workload::split_list(m)) models.push_back(item);
  if (!models.empty()) bench.sweep.models = models;
  return {bench};
}

std::function<void(const std::string&)> sayer(bool quiet) {
  if (quiet) return {};
  auto mutex = std::make_shared<std::mutex>();
  return [mutex](const std::string& line) {
    const std::lock_guard lock(*mutex);
    std::cerr << line << std::endl;
  };
}

std::unique_ptr<store::Store> lab_store(const LabFlags& f, store::Mode mode) {
  return store::open_store(resolve_db_path(f.db), mode);
}

namespace {

int check(const LabFlags& f) {
  OutputTarget output(f.output.file);
  const auto rows = lab::check_devices(selected(f));
  output.stream() << (f.output.format == "json" ? lab::to_json(rows).dump(2) + "\n" : report::check_table(rows));
  output.commit();
  for (const auto& r : rows)
    if (!r.state.reachable) return static_cast<int>(ErrorKind::kEnvironment);
  return 0;
}

int deploy(const LabFlags& f) {
  std::vector<std::string> models;
  for (const auto& p : f.plans.empty() && f.models.empty() ? std::vector<app::Plan>{} : plans_of(f))
    for (const auto& m : app::plan_models(lab::prepare_plan(p))) models.push_back(m);
  lab::DeployOptions options;
  options.dist_dir = f.dist;
  OutputTarget output(f.output.file);
  const auto results = lab::deploy_devices(selected(f), models, options);
  output.stream() << (f.output.format == "json" ? lab::to_json(results).dump(2) + "\n" : report::deploy_table(results));
  output.commit();
  for (const auto& r : results)
    if (!r.error.empty()) std::cerr << "edgeprobe: error: " << r.error << "\n";
  for (const auto& r : results)
    if (!r.error.empty()) return r.exit_code;
  return 0;
}

int run(const LabFlags& f, const std::string& command_line) {
  // A zero or negative limit killed every job at once; NaN compared as no limit at all.
  if (!(f.job_timeout_s > 0 && f.job_timeout_s <= 30 * 86400.0))
    throw_bad_input("--job-timeout {}: give the longest a job may take on one device, in seconds (0 < s <= 2592000)",
                    f.job_timeout_s);
  lab::LabRunOptions o;
  o.dist_dir = f.dist;
  o.cooldown = lab::Cooldown::parse(f.cooldown);
  o.thermal_limit_c = f.thermal_limit;
  o.max_wait_s = f.max_wait_s;
  o.job_timeout_s = f.job_timeout_s;
  o.command_line = command_line;
  o.say = sayer(f.output.quiet);
  OutputTarget output(f.output.file);
  lab::LabRunResult r;
  if (f.resume) {
    auto store = lab_store(f, store::Mode::kMustExist);
    if (lab::lava::is_lava_lab(*store, f.resume)) {
      // LAVA schedules this lab run's devices: resume resubmits the ones that did not finish.
      store.reset();
      return lava_submit(f, command_line);
    }
    r = lab::resume_lab(*store, f.resume, o);
  } else {
    // Without either, bench's default (a 1.1B model, five repetitions) would quietly run on
    // every device: minutes each, and rarely what was meant.
    if (f.plans.empty() && f.models.empty())
      throw_bad_input(
          "lab run needs plan files or -m MODEL (bench's default model on every device: -m "
          "synth:tinyllama-1.1b:q4_0)");
    o.plans = plans_of(f);
    const auto devices = selected(f);
    auto store = lab_store(f, store::Mode::kCreate);
    r = lab::run_lab(*store, devices, o);
  }
  output.stream() << (f.output.format == "json" ? lab::to_json(r).dump(2) + "\n" : report::run_table(r));
  output.commit();
  if (r.exit_code != 0)
    std::cerr << "edgeprobe: lab run " << r.lab_run
              << " did not finish everywhere; continue it with: edgeprobe lab run --resume " << r.lab_run
              << (f.db.empty() ? "" : " --db " + f.db) << "\n";
  return r.exit_code;
}

}  // namespace

CLI::App* with_selection(CLI::App* cmd, LabFlags& f) {
  cmd->add_option("-i,--inventory", f.inventory, "Ansible-style YAML inventory of devices")
      ->capture_default_str();
  cmd->add_option("--devices", f.devices, "Only these devices (comma list of inventory names)");
  cmd->add_option("--group", f.group, "Only the devices of these groups (comma list)");
  add_output_options(cmd, f.output, {report::formats_of(report::OutputKind::kLab)});
  return cmd;
}

void add_bench_flags(CLI::App* cmd, LabFlags& f) {
  cmd->add_option("-m,--model", f.models, "Bench: models (paths or synth:SHAPE[:QUANT])");
  cmd->add_option("-p,--n-prompt", f.n_prompt, "Bench: prompt lengths")->capture_default_str();
  cmd->add_option("-n,--n-gen", f.n_gen, "Bench: generation lengths")->capture_default_str();
  cmd->add_option("-t,--threads", f.threads, "Bench: thread counts (default: each device's physical cores)");
  cmd->add_option("-r,--repetitions", f.bench.run.repetitions, "Bench: timed repetitions per test")
      ->capture_default_str();
  cmd->add_option("--ceilings", f.bench.ceilings, "Bench: device ceilings auto, refresh, replace or off")
      ->capture_default_str();
  cmd->add_option("--sample-hz", f.bench.env.sample_hz, "Telemetry sampling rate on the device (0 = off)")
      ->capture_default_str();
}

void register_lab(CLI::App& app, const std::vector<std::string>& command_line) {
  auto f = std::make_shared<LabFlags>();
  CLI::App* lab =
      app.add_subcommand("lab", "Run plans on many devices (local, ssh, adb) into one store (docs/lab.md)");
  lab->require_subcommand(1);
  auto fail_on = [](int rc) {
    if (rc != 0) throw CLI::RuntimeError(rc);
  };
  CLI::App* chk = with_selection(
      lab->add_subcommand("check", "Reachability, identity, bundle, free space, battery, temperature, root"),
      *f);
  chk->callback([f, fail_on] { fail_on(check(*f)); });

  CLI::App* dep = with_selection(
      lab->add_subcommand("deploy", "Push the matching bundle and the plans' models (SHA-256 verified)"), *f);
  dep->add_option("plans", f->plans, "Plan files whose models to push");
  dep->add_option("-m,--model", f->models, "Models to push (paths or synth:SHAPE[:QUANT])");
  dep->add_option("--dist", f->dist, "Where scripts/package.sh wrote the bundles")->capture_default_str();
  dep->callback([f, fail_on] { fail_on(deploy(*f)); });

  CLI::App* run_cmd = with_selection(
      lab->add_subcommand("run",
                          "Run plans on every selected device at once, streaming each unit into the store"),
      *f);
  run_cmd->add_option(
      "plans", f->plans,
      "Bench, session or doctor plan files (docs/wire-format.md), run in order; or the bench flags below");
  add_db_option(run_cmd, f->db);
  run_cmd->add_option("--dist", f->dist, "Where scripts/package.sh wrote the bundles")->capture_default_str();
  run_cmd->add_option("--cooldown", f->cooldown,
                      "Before each job: none, SECONDS, or temp:CELSIUS (wait until that cool)");
  run_cmd->add_option("--thermal-limit", f->thermal_limit,
                      "Pause a device at or above this temperature (C) before a job");
  run_cmd->add_option("--max-wait", f->max_wait_s, "Longest cooldown or thermal pause (s)")
      ->capture_default_str();
  run_cmd->add_option("--job-timeout", f->job_timeout_s, "Longest job on one device (s)")
      ->capture_default_str();
  run_cmd->add_option("--resume", f->resume,
                      "Continue lab run RUN: each device from its last committed unit");
  run_cmd->callback([f, fail_on, command_line] { fail_on(run(*f, join_command_line(command_line))); });

  add_bench_flags(run_cmd, *f);
  register_lab_lava(lab, f, command_line);
}

}  // namespace edgeprobe::cli
