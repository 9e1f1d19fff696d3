#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/common.h"
#include "cli/lab_flags.h"
#include "cli/shared_flags.h"
#include "core/bounded_input.h"
#include "core/error.h"
#include "lab/lava_lab.h"
#include "lab/lava_notify.h"
#include "report/formats.h"
#include "report/lab_reporters.h"

// `lab submit`, `lab import`, `lab receive` and `lab lava-cases`: the lab's plans run by a
// LAVA server (docs/lab.md, "LAVA"); the work is in src/lab/lava*.
namespace edgeprobe::cli {
namespace {

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
  output.stream() << (f.output.format == "json" ? lab::lava::to_json(jobs).dump(2) + "\n" : report::jobs_table(jobs));
  output.commit();
}

}  // namespace

int lava_submit(const LabFlags& f, const std::string& command_line) {
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

namespace {

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

}  // namespace

void register_lab_lava(CLI::App* lab, const std::shared_ptr<LabFlags>& f, const std::vector<std::string>& command_line) {
  auto fail_on = [](int rc) {
    if (rc != 0) throw CLI::RuntimeError(rc);
  };
  // LAVA: the same plans, scheduled by a LAVA server (docs/lab.md, "LAVA").
  auto artifacts = [f](CLI::App* cmd) {
    cmd->add_option("--artifacts-dir", f->artifacts_dir, "LAVA: copy the bundle and models here for the devices");
    cmd->add_option("--artifacts-url", f->artifacts_url, "LAVA: where the devices fetch --artifacts-dir (http(s):// or file://)");
  };
  artifacts(lab->get_subcommand("run"));  // `lab run --resume` of a LAVA lab run resubmits
  CLI::App* sub = with_selection(
      lab->add_subcommand("submit", "Submit plans to a LAVA server: one job per device and plan (docs/lab.md)"), *f);
  sub->add_option("plans", f->plans, "Bench, session or doctor plan files; or -m and bench's defaults");
  add_bench_flags(sub, *f);
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
  sub->callback([f, fail_on, command_line] { fail_on(lava_submit(*f, join_command_line(command_line))); });

  CLI::App* imp = lab->add_subcommand(
      "import", "Take a LAVA lab run's job states and logs into the store (again at will: no unit twice)");
  imp->add_option("run", f->lab_run, "The lab run (lab submit printed it)")->required();
  imp->add_option("--lava-log", f->lava_log, "A job log fetched otherwise (lava-run's output) for --device's job");
  imp->add_option("--device", f->lava_device, "The device whose job --lava-log holds");
  imp->add_option("--job", f->lava_job_index, "Which of the device's jobs (the plan's place, from 1)")
      ->capture_default_str();
  add_output_options(imp, f->output, {report::formats_of(report::OutputKind::kLab)});
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
  rec->add_option("--settle", f->receive.settle_s,
                  "After a callback whose job still reads as running, read again with a backoff for this long (s)")
      ->capture_default_str();
  add_output_options(rec, f->output, {report::formats_of(report::OutputKind::kLab)});
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
