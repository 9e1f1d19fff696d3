#include "cli/cmd_lab.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <mutex>

#include "app/plan.h"
#include "cli/common.h"
#include "cli/shared_flags.h"
#include "core/bounded_input.h"
#include "core/error.h"
#include "lab/check.h"
#include "lab/deploy.h"
#include "lab/lab_run.h"
#include "lab/lava_lab.h"
#include "lab/lava_notify.h"
#include "store/store.h"
#include "workload/sweep.h"

namespace edgeprobe::cli {
namespace {

using nlohmann::json;

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

lab::lava::SubmitOptions lava_options(const LabFlags& f, const std::string& command_line) {
  lab::lava::SubmitOptions o;
  o.dist_dir = f.dist;
  o.artifacts_dir = f.artifacts_dir;
  o.artifacts_url = f.artifacts_url;
  o.render_dir = f.render_dir;
  // Asked before the store is opened: without a server, nothing is stored.
  if (!f.no_submit) o.server = lab::lava::server_from_environment();
  o.job_timeout_s = f.job_timeout_s;
  o.queue_deadline_s = f.queue_deadline_s;
  o.notify_url = f.notify_url;
  o.command_line = command_line;
  return o;
}

void print_jobs(const LabFlags& f, const lab::lava::LabJobs& jobs) {
  OutputTarget output(f.output.file);
  output.stream() << (f.output.format == "json" ? lab::lava::to_json(jobs).dump(2) + "\n" : lab::lava::jobs_table(jobs));
  output.commit();
}

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

int check(const LabFlags& f) {
  OutputTarget output(f.output.file);
  const auto rows = lab::check_devices(selected(f));
  output.stream() << (f.output.format == "json" ? lab::to_json(rows).dump(2) + "\n" : lab::check_table(rows));
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
  output.stream() << (f.output.format == "json" ? lab::to_json(results).dump(2) + "\n" : lab::deploy_table(results));
  output.commit();
  for (const auto& r : results)
    if (!r.error.empty()) std::cerr << "edgeprobe: error: " << r.error << "\n";
  for (const auto& r : results)
    if (!r.error.empty()) return r.exit_code;
  return 0;
}

int submit(const LabFlags& f, const std::string& command_line) {
  if (f.no_submit && f.render_dir.empty())
    throw_bad_input("--no-submit renders the jobs only: give --render DIR to write them");
  auto o = lava_options(f, command_line);
  o.say = sayer(f.output.quiet);
  lab::lava::LabJobs jobs;
  if (f.resume) {
    auto store = lab_store(f, store::Mode::kMustExist);
    jobs = lab::lava::resubmit(*store, f.resume, o);
  } else {
    if (f.plans.empty() && f.models.empty())
      throw_bad_input("lab submit needs plan files or -m MODEL (-m synth:tinyllama-1.1b:q4_0 for bench's default)");
    o.plans = plans_of(f);
    // A pool stands for devices LAVA picks by type and tags; else the inventory's devices.
    const auto devices = f.pool.empty() ? selected(f) : lab::lava::pool_devices(f.pool, f.pool_count, f.pool_arch);
    auto store = lab_store(f, store::Mode::kCreate);
    jobs = lab::lava::submit(*store, devices, o);
  }
  print_jobs(f, jobs);
  if (jobs.exit_code == 0)
    std::cerr << "edgeprobe: lab run " << jobs.lab_run << " " << (f.no_submit ? "rendered" : "submitted")
              << "; take its results with: edgeprobe lab import " << jobs.lab_run << (f.db.empty() ? "" : " --db " + f.db)
              << "\n";
  return jobs.exit_code;
}

int import(const LabFlags& f) {
  if (f.lava_log.empty() != f.lava_device.empty())
    throw_bad_input("--lava-log and --device go together: the log of one device's job");
  if (f.lava_job_index < 1) throw_bad_input("--job counts from 1");
  auto store = lab_store(f, store::Mode::kMustExist);
  lab::lava::ImportOptions o;
  o.device = f.lava_device;
  o.log_file = f.lava_log;
  o.job = f.lava_job_index - 1;
  o.say = sayer(f.output.quiet);
  const auto jobs = lab::lava::import(*store, f.lab_run, o);
  print_jobs(f, jobs);
  return jobs.exit_code;
}

int receive(const LabFlags& f) {
  auto store = lab_store(f, store::Mode::kMustExist);
  lab::lava::ReceiveOptions o = f.receive;
  o.say = sayer(f.output.quiet);
  const auto jobs = lab::lava::receive(*store, f.lab_run, o);
  print_jobs(f, jobs);
  return jobs.exit_code;
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
      return submit(f, command_line);
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
  output.stream() << (f.output.format == "json" ? lab::to_json(r).dump(2) + "\n" : lab::run_table(r));
  output.commit();
  if (r.exit_code != 0)
    std::cerr << "edgeprobe: lab run " << r.lab_run
              << " did not finish everywhere; continue it with: edgeprobe lab run --resume " << r.lab_run
              << (f.db.empty() ? "" : " --db " + f.db) << "\n";
  return r.exit_code;
}

CLI::App* with_selection(CLI::App* cmd, LabFlags& f) {
  cmd->add_option("-i,--inventory", f.inventory, "Ansible-style YAML inventory of devices")
      ->capture_default_str();
  cmd->add_option("--devices", f.devices, "Only these devices (comma list of inventory names)");
  cmd->add_option("--group", f.group, "Only the devices of these groups (comma list)");
  add_output_options(cmd, f.output, {{"md", "json"}});
  return cmd;
}

}  // namespace

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
  // The bench flags that fill a bench plan when no plan file is given (run and submit).
  auto bench_flags = [f](CLI::App* cmd) {
    cmd->add_option("-m,--model", f->models, "Bench: models (paths or synth:SHAPE[:QUANT])");
    cmd->add_option("-p,--n-prompt", f->n_prompt, "Bench: prompt lengths")->capture_default_str();
    cmd->add_option("-n,--n-gen", f->n_gen, "Bench: generation lengths")->capture_default_str();
    cmd->add_option("-t,--threads", f->threads, "Bench: thread counts (default: each device's physical cores)");
    cmd->add_option("-r,--repetitions", f->bench.run.repetitions, "Bench: timed repetitions per test")
        ->capture_default_str();
    cmd->add_option("--ceilings", f->bench.ceilings, "Bench: device ceilings auto, refresh, replace or off")
        ->capture_default_str();
    cmd->add_option("--sample-hz", f->bench.env.sample_hz, "Telemetry sampling rate on the device (0 = off)")
        ->capture_default_str();
  };
  bench_flags(run_cmd);
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

  // LAVA: the same plans, scheduled by a LAVA server (docs/lab.md, "LAVA").
  auto artifacts = [f](CLI::App* cmd) {
    cmd->add_option("--artifacts-dir", f->artifacts_dir, "LAVA: copy the bundle and models here for the devices");
    cmd->add_option("--artifacts-url", f->artifacts_url, "LAVA: where the devices fetch --artifacts-dir (http(s):// or file://)");
  };
  artifacts(run_cmd);
  CLI::App* sub = with_selection(
      lab->add_subcommand("submit", "Submit plans to a LAVA server: one job per device and plan (docs/lab.md)"), *f);
  sub->add_option("plans", f->plans, "Bench, session or doctor plan files; or -m and bench's defaults");
  bench_flags(sub);
  sub->add_option("--engine", f->engine, "Lab engine that schedules the jobs")
      ->check(one_of({"lava"}, "engine"))
      ->capture_default_str();
  artifacts(sub);
  sub->add_option("--pool", f->pool,
                  "Instead of the inventory: LAVA's devices of this type and tags (TYPE[:TAG,...])");
  sub->add_option("--count", f->pool_count, "With --pool: how many jobs (each on a device LAVA picks)")
      ->capture_default_str();
  sub->add_option("--arch", f->pool_arch, "With --pool: the devices' architecture (aarch64 or x86_64)");
  sub->add_option("--render", f->render_dir, "Also write each job definition (YAML) into this directory");
  sub->add_flag("--no-submit", f->no_submit, "Render only (with --render): no LAVA server is asked");
  sub->add_option("--queue-deadline", f->queue_deadline_s,
                  "Seconds a job may wait in LAVA's queue before import cancels it as not scheduled")
      ->capture_default_str();
  sub->add_option("--job-timeout", f->job_timeout_s, "Longest job on one device (s)")->capture_default_str();
  sub->add_option("--notify-url", f->notify_url, "LAVA POSTs each finished job there");
  sub->add_option("--resume", f->resume, "Resubmit lab run RUN's devices that did not finish");
  sub->add_option("--dist", f->dist, "Where scripts/package.sh wrote the bundles")->capture_default_str();
  add_db_option(sub, f->db);
  sub->callback([f, fail_on, command_line] { fail_on(submit(*f, join_command_line(command_line))); });

  CLI::App* imp = lab->add_subcommand(
      "import", "Take a LAVA lab run's job states and logs into the store (again at will: no unit twice)");
  imp->add_option("run", f->lab_run, "The lab run (lab submit printed it)")->required();
  imp->add_option("--lava-log", f->lava_log, "A job log fetched otherwise (lava-run's output) for --device's job");
  imp->add_option("--device", f->lava_device, "The device whose job --lava-log holds");
  imp->add_option("--job", f->lava_job_index, "Which of the device's jobs (the plan's place, from 1)")
      ->capture_default_str();
  add_output_options(imp, f->output, {{"md", "json"}});
  add_db_option(imp, f->db);
  imp->callback([f, fail_on] { fail_on(import(*f)); });

  CLI::App* rec = lab->add_subcommand(
      "receive", "Wait for LAVA's notify callbacks (lab submit --notify-url) and import at each, until every job ended");
  rec->add_option("run", f->lab_run, "The lab run (lab submit printed it)")->required();
  rec->add_option("--listen", f->receive.listen, "HOST:PORT to listen on (port 0: any free one)")
      ->capture_default_str();
  rec->add_option("--timeout", f->receive.timeout_s, "Give up (exit 3) when jobs have not ended by then (s)")
      ->capture_default_str();
  rec->add_option("--poll", f->receive.poll_s, "Import this often anyway, in case a callback was lost (s)")
      ->capture_default_str();
  add_output_options(rec, f->output, {{"md", "json"}});
  add_db_option(rec, f->db);
  rec->callback([f, fail_on] { fail_on(receive(*f)); });

  auto cases_file = std::make_shared<std::string>();
  CLI::App* cases = lab->add_subcommand(
      "lava-cases", "Print a stream's headline figures as lava-test-case commands (run inside a LAVA job)");
  cases->add_option("stream", *cases_file, "The stream (run --plan, framed with -o lava or not); - for stdin")
      ->required();
  cases->callback([cases_file] {
    std::cout << lab::lava::test_case_commands(read_bounded(*cases_file, 1u << 30, "stream"));
  });
}

}  // namespace edgeprobe::cli
