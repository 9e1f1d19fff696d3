#include "cli/cmd_session.h"

#include <CLI/CLI.hpp>

#include "app/session_job.h"
#include "cli/cmd_kv_serve.h"
#include "cli/common.h"
#include "cli/hub_client.h"
#include "cli/job_options.h"
#include "cli/shared_flags.h"
#include "report/formats.h"
#include "report/reporter.h"
#include "report/session_reporters.h"
#include "store/store.h"
#include "workload/sweep.h"

namespace edgeprobe::cli {
namespace {

// The defaults are the plan's (app::SessionPlan), shown as text in --help.
struct SessionFlags {
  const app::SessionPlan defaults;
  std::vector<std::string> models, ctx = ints_as_text(defaults.n_ctx), max_tokens = ints_as_text(defaults.max_tokens),
                                   batch = ints_as_text(defaults.n_batch), threads;
  StoreFlags store;
  OutputFlags output;
  GpuFlags gpu;
  SubmitTarget submit;
};

int run(const SessionFlags& f, app::SessionPlan plan, const std::string& command_line) {
  check_submit_target(f.submit);
  OutputTarget output(f.output.file);
  auto store = open_store(f.store);
  if (f.store.resume) {
    auto stored = app::stored_session_plan(*store, f.store.resume);
    stored.env.verbose_engine_log = plan.env.verbose_engine_log;
    plan = std::move(stored);
  } else {
    plan.models.clear();
    for (const auto& m : f.models)
      for (const auto& item : workload::split_list(m)) plan.models.push_back(item);
    plan.n_ctx = workload::parse_int_lists(f.ctx, "-c");
    plan.max_tokens = workload::parse_int_lists(f.max_tokens, "--max-tokens");
    plan.n_batch = workload::parse_int_lists(f.batch, "-b");
    plan.threads = workload::parse_int_lists(f.threads, "-t");
    plan.n_gpu_layers = f.gpu.n_gpu_layers;
    plan.devices = f.gpu.devices;
    plan.op_offload = f.gpu.op_offload();
  }
  TerminalSink sink(!f.output.quiet);
  const app::JobContext ctx{store.get(), f.store.resume, &sink, command_line, ""};
  const auto result = app::run_session(std::move(plan), ctx);
  sink.done();
  report::write_session_report(result.report, f.output.format, output.stream());
  output.commit();
  const int rc = finish_job(result.outcome, store.get(), "session", sink);
  return submit_finished_job(f.submit, rc, result::to_json(result.report), result.outcome.run_id,
                             store.get());
}

}  // namespace

void register_session(CLI::App& app, const std::vector<std::string>& command_line) {
  auto f = std::make_shared<SessionFlags>();
  auto plan = std::make_shared<app::SessionPlan>();  // its members are the defaults shown in --help
  CLI::App* cmd = app.add_subcommand("session", "MELT-style multi-turn chat sessions with a QES score");
  cmd->add_option("-m,--model", f->models, "GGUF model file(s) or synth:SHAPE[:QUANT] (default: synth:tinyllama-1.1b:q4_0)");
  cmd->add_option("--rounds", plan->options.rounds, "Rounds over the conversations (MELT: 3)")->capture_default_str();
  cmd->add_option("--conversations", plan->options.conversations, "Conversations per round (the first N)")
      ->capture_default_str();
  cmd->add_option("--max-tokens", f->max_tokens, "Generation limits per turn (list)")->capture_default_str();
  cmd->add_option("-c,--ctx-size", f->ctx, "Context sizes (list)")->capture_default_str();
  cmd->add_option("-b,--batch-size", f->batch, "Batch sizes (list)")->capture_default_str();
  cmd->add_option("-t,--threads", f->threads, "Thread counts (list; default: physical cores available)");
  cmd->add_option("--prompts", plan->prompts, "Conversations JSONL (default: the built-in set in data/)");
  cmd->add_option("--on-overflow", plan->options.on_overflow, "When the context is full: stop the conversation or shift")
      ->capture_default_str();
  cmd->add_option("--cooldown", plan->options.cooldown, "Between rounds: none, seconds, or temp (back near the start temperature)")
      ->capture_default_str();
  add_endpoint_flags(cmd, plan->env, "turn", "chat");
  cmd->add_option("--sample-hz", plan->env.sample_hz, "Telemetry sampling rate (0 = off)")->capture_default_str();
  cmd->add_option("--sysfs-root", plan->env.sysfs_root, "Read sysfs/procfs under this root")->capture_default_str();
  cmd->add_option("--cpu-variant", plan->env.cpu_variant, "Load this ggml CPU variant instead of the best one for this CPU");
  add_gpu_options(cmd, f->gpu);
  add_store_flags(cmd, f->store, "Continue an interrupted session run where it stopped");
  add_output_options(cmd, f->output, {report::formats_of(report::OutputKind::kResults)});
  add_prefill_remote_flags(cmd, plan->env);
  add_submit_flags(cmd, f->submit);
  cmd->add_flag("-v,--verbose", plan->env.verbose_engine_log, "Echo llama.cpp's log to stderr");
  cmd->callback([f, plan, command_line] {
    const int rc = run(*f, *plan, join_command_line(command_line));
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace edgeprobe::cli
