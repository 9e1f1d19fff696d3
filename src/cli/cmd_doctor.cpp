#include "cli/cmd_doctor.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "app/doctor_job.h"
#include "app/models.h"
#include "app/plan.h"
#include "app/stored_run.h"
#include "cli/common.h"
#include "cli/hub_client.h"
#include "cli/job_options.h"
#include "core/error.h"
#include "doctor/doctor.h"
#include "doctor/tune.h"
#include "engine/llama_engine.h"
#include "report/doctor_reporters.h"
#include "report/formats.h"
#include "store/store.h"
#include "workload/sweep.h"

namespace edgeprobe::cli {

void register_doctor(CLI::App& app, const std::vector<std::string>& command_line) {
  struct Args {
    app::DoctorPlan plan;  // the defaults are the plan's (one set, shared with run --plan)
    std::string mmap = "1", baseline;
    GpuFlags gpu;
    bool no_experiments = false;
    StoreFlags store;
    OutputFlags output;
    SubmitTarget submit;
  };
  auto a = std::make_shared<Args>();
  auto& p = a->plan;
  CLI::App* cmd = app.add_subcommand("doctor", "Name what slows a model down on this device, with evidence and the fix");
  cmd->add_option("-m,--model", p.model, "GGUF model file or synth:SHAPE[:QUANT] (default: synth:tinyllama-1.1b:q4_0)");
  cmd->add_option("-t,--threads", p.config.threads, "Threads of the configuration to diagnose (default: physical cores available)")
      ->check(CLI::Range(1, 512));
  cmd->add_option("-C,--cpu-mask", p.config.cpu_mask, "CPU affinity mask in hex, e.g. 0x3");
  cmd->add_option("--cpu-strict", p.config.cpu_strict, "Strict placement (0|1)")->check(CLI::Range(0, 1))->capture_default_str();
  cmd->add_option("--poll", p.config.poll, "Threadpool polling level 0..100")->check(CLI::Range(0, 100))->capture_default_str();
  cmd->add_option("-b,--batch-size", p.config.n_batch, "Logical batch size")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--ubatch-size", p.config.n_ubatch, "Physical batch size (alias -ub)")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--flash-attn", p.config.flash_attn, "Flash attention 0|1|auto (alias -fa)")
      ->check(CLI::IsMember({"0", "1", "auto", "on", "off"}))
      ->capture_default_str();
  cmd->add_option("--cache-type-k", p.config.type_k, "K cache type (alias -ctk)")->capture_default_str();
  cmd->add_option("--cache-type-v", p.config.type_v, "V cache type (alias -ctv)")->capture_default_str();
  cmd->add_option("--mmap", a->mmap, "Load with mmap (1) or read into memory (0) (alias -mmp)")
      ->check(CLI::IsMember({"0", "1"}))
      ->capture_default_str();
  cmd->add_option("--cpu-variant", p.config.cpu_variant, "Load this ggml CPU variant instead of the best one");
  add_gpu_options(cmd, a->gpu);
  cmd->add_option("-p,--n-prompt", p.n_prompt, "Prompt tokens of doctor's prefill test")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  cmd->add_option("-n,--n-gen", p.n_gen, "Tokens of doctor's decode test")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  cmd->add_option("-r,--repetitions", p.repetitions, "Repetitions per test (the median is used)")->check(CLI::Range(1, 100))->capture_default_str();
  cmd->add_option("--baseline", a->baseline, "A result from another device or run (bench or doctor -o json), or a stored run id, to check the model against");
  cmd->add_option("--sysfs-root", p.sysfs_root, "Read sysfs under this root (fixture trees)")->capture_default_str();
  cmd->add_option("--sample-hz", p.sample_hz, "Telemetry sampling rate")->check(CLI::Range(1.0, 1000.0))->capture_default_str();
  cmd->add_option("--budget", p.budget_s,
                  "Seconds the whole diagnosis may take; comparisons still undecided then are reported inconclusive "
                  "(default: twice llama-bench's default run, estimated from the first run)")
      ->check(CLI::Range(1.0, 86400.0));
  cmd->add_option(
      "--draft", p.draft,
      "A draft model for speculative decoding (a file, trained:draft, ...): the configuration as given "
      "also runs bench --draft's pairs, and a draft that costs more than it saves is named");
  cmd->add_option("--draft-max", p.draft_max, "With --draft: tokens a draft proposes at most")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_flag("--no-experiments", a->no_experiments, "Diagnose from the one run; do not measure the fixes");
  cmd->add_flag("--tune", p.tune, "Search threads, CPU mask, placement, polling, batch sizes and flash attention for the fastest configuration");
  add_store_flags(cmd, a->store, nullptr);
  add_output_options(cmd, a->output, {report::formats_of(report::OutputKind::kResults)});
  add_submit_flags(cmd, a->submit);
  cmd->callback([a, command_line] {
    auto& plan = a->plan;
    plan.config.use_mmap = a->mmap == "1";
    plan.config.n_gpu_layers = a->gpu.n_gpu_layers;
    plan.config.devices = a->gpu.devices;
    plan.config.op_offload = a->gpu.op_offload();
    plan.experiments = !a->no_experiments;
    app::validate(plan, workload::default_thread_count());
    check_submit_target(a->submit);
    // A bad baseline fails before minutes of measuring. Not a file: a run id in the store
    // (another device's run, as `lab run` stores them).
    if (!a->baseline.empty()) {
      plan.baseline_name = a->baseline;
      plan.baseline = std::filesystem::exists(a->baseline)
                          ? doctor::load_baseline(a->baseline)
                          : doctor::baseline_from_json(app::load_result_document(a->baseline, a->store.db),
                                                       "run " + a->baseline);
    }
    OutputTarget output(a->output.file);
    auto store = open_store(a->store);
    TerminalSink sink(!a->output.quiet);
    const doctor::DoctorOptions options = app::doctor_options(plan, app::ModelSet::resolve(plan.model, &sink));
    const app::JobContext ctx{store.get(), 0, &sink, join_command_line(command_line), ""};
    if (plan.tune) {
      const auto result = app::run_tune(options, ctx);
      sink.done();
      const auto report = doctor::to_report(result.tune);
      report::write_doctor_report(report, a->output.format, output.stream());
      output.commit();
      const int rc = finish_job(result.outcome, store.get(), "doctor", sink);
      if (a->submit.wanted())
        if (const int s = submit_finished_job(a->submit, rc, result::to_json(result::DoctorResult(report)),
                                              result.outcome.run_id, store.get());
            s != 0)
          throw CLI::RuntimeError(s);
      return;
    }
    const auto result = app::run_doctor(options, ctx);
    sink.done();
    const auto report = doctor::to_report(result.diagnosis);
    report::write_doctor_report(report, a->output.format, output.stream());
    output.commit();
    const int rc = finish_job(result.outcome, store.get(), "doctor", sink);
    if (a->submit.wanted())  // doctor's own exit code does not follow the job's (as before)
      if (const int s = submit_finished_job(a->submit, rc, result::to_json(result::DoctorResult(report)),
                                            result.outcome.run_id, store.get());
          s != 0)
        throw CLI::RuntimeError(s);
  });
}

}  // namespace edgeprobe::cli
