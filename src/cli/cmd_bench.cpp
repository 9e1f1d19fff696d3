#include "cli/cmd_bench.h"

#include <CLI/CLI.hpp>

#include "analysis/greedy_check.h"
#include "app/bench_job.h"
#include "app/stored_run.h"
#include "cli/cmd_kv_serve.h"
#include "cli/common.h"
#include "cli/hub_client.h"
#include "cli/job_options.h"
#include "core/error.h"
#include "report/formats.h"
#include "runner/load_runner.h"
#include "store/store.h"
#include "workload/sweep.h"

namespace edgeprobe::cli {
namespace {

// Flags as typed: every test parameter takes comma lists and ranges, so they are read
// as text and parsed into the plan's sweep.
// The defaults are the plan's (app::BenchPlan), shown as text in --help.
struct BenchFlags {
  const workload::SweepSpec defaults = app::BenchPlan::default_sweep();
  std::vector<std::string> models, n_prompt = ints_as_text(defaults.n_prompt), n_gen = ints_as_text(defaults.n_gen), prompt_gen,
                                   n_depth = ints_as_text(defaults.n_depth), threads, cpu_masks,
                                   cpu_strict = ints_as_text(defaults.cpu_strict), poll = ints_as_text(defaults.poll),
                                   n_batch = ints_as_text(defaults.n_batch), n_ubatch = ints_as_text(defaults.n_ubatch),
                                   flash_attn{"auto"}, type_k = defaults.type_k, type_v = defaults.type_v,
                                   mmap = ints_as_text(defaults.use_mmap),
                                   gpu_layers = ints_as_text(defaults.n_gpu_layers), devices, split_mode = defaults.split_mode,
                                   main_gpu = ints_as_text(defaults.main_gpu), no_op_offload{"0"};
  std::vector<std::string> concurrency;
  std::string slo;
  bool no_warmup = false, no_hash = false;
  std::string trace_file;
  StoreFlags store;
  OutputFlags output;
  SubmitTarget submit;
};

void fill_sweep(const BenchFlags& f, workload::SweepSpec& s) {
  s.models = split_all(f.models);
  s.n_prompt = workload::parse_int_lists(f.n_prompt, "-p");
  s.n_gen = workload::parse_int_lists(f.n_gen, "-n");
  for (const auto& pg : f.prompt_gen) {
    const auto v = workload::parse_int_list(pg, "-pg");
    if (v.size() != 2) throw_bad_input("invalid value '{}' for -pg: expected two numbers, prompt,generate", pg);
    s.prompt_gen.emplace_back(v[0], v[1]);
  }
  s.n_depth = workload::parse_int_lists(f.n_depth, "-d");
  s.threads = workload::parse_int_lists(f.threads, "-t");
  s.cpu_masks = f.cpu_masks.empty() ? std::vector<std::string>{""} : split_all(f.cpu_masks);
  s.cpu_strict = workload::parse_int_lists(f.cpu_strict, "--cpu-strict");
  s.poll = workload::parse_int_lists(f.poll, "--poll");
  s.n_batch = workload::parse_int_lists(f.n_batch, "-b");
  s.n_ubatch = workload::parse_int_lists(f.n_ubatch, "-ub");
  s.flash_attn.clear();
  for (const auto& v : split_all(f.flash_attn)) s.flash_attn.push_back(workload::parse_flash_attn(v));
  s.type_k = split_all(f.type_k);
  s.type_v = split_all(f.type_v);
  s.use_mmap.clear();
  for (const auto& m : split_all(f.mmap)) s.use_mmap.push_back(workload::parse_bool(m, "--mmap"));
  s.n_gpu_layers = workload::parse_int_lists(f.gpu_layers, "-ngl");
  // -dev lists are comma-separated, one device set each ("Vulkan0/Vulkan1,none").
  s.devices = f.devices.empty() ? std::vector<std::string>{""} : split_all(f.devices);
  s.split_mode = split_all(f.split_mode);
  s.main_gpu = workload::parse_int_lists(f.main_gpu, "-mg");
  s.op_offload.clear();
  for (const auto& v : split_all(f.no_op_offload)) s.op_offload.push_back(workload::parse_bool(v, "-nopo") ? 0 : 1);
}

int run(const BenchFlags& f, app::BenchPlan plan, const std::string& command_line) {
  check_submit_target(f.submit);
  OutputTarget output(f.output.file);
  auto store = open_store(f.store);
  if (f.store.resume) {
    // The stored plan runs the rest as it was planned (same tests, variant, telemetry);
    // only how ceilings are found and the log echo come from this command line.
    auto stored = app::stored_bench_plan(*store, f.store.resume);
    stored.ceilings = plan.ceilings;
    stored.env.verbose_engine_log = plan.env.verbose_engine_log;
    plan = std::move(stored);
  } else {
    fill_sweep(f, plan.sweep);
    plan.run.warmup = !f.no_warmup;
    plan.run.load.concurrency = workload::parse_int_lists(f.concurrency, "--concurrency");
    if (!f.slo.empty()) plan.run.load.slo = runner::parse_slo(f.slo);
    plan.hash_models = !f.no_hash;
    if (!plan.verify_against.empty() && plan.run.verify_tokens == 0)
      plan.run.verify_tokens = runner::kVerifyTokens;
  }
  if (!plan.verify_against.empty()) {
    const auto reference = app::load_result(plan.verify_against, f.store.db);
    const auto* bench = std::get_if<result::BenchReport>(&reference);
    if (!bench)
      throw_bad_input("--verify-against {}: not a bench result (run the reference with bench --verify)",
                      plan.verify_against);
    plan.verify_reference = analysis::reference_continuations(*bench, app::result_label(plan.verify_against));
  }
  TerminalSink sink(!f.output.quiet, report::make_reporter(f.output.format, output.stream()));
  app::JobContext ctx{store.get(), f.store.resume, &sink, command_line, f.trace_file};
  const auto result = app::run_bench(std::move(plan), ctx);
  sink.done();
  output.commit();
  const int rc = finish_job(result.outcome, store.get(), "bench", sink);
  return submit_finished_job(f.submit, rc, result::to_json(result.report), result.outcome.run_id,
                             store.get());
}

}  // namespace

void register_bench(CLI::App& app, const std::vector<std::string>& command_line) {
  auto f = std::make_shared<BenchFlags>();
  auto plan = std::make_shared<app::BenchPlan>();  // its members are the defaults shown in --help
  CLI::App* cmd = app.add_subcommand("bench", "Measure prefill and decode apart, per token, through libllama");
  cmd->add_option("-m,--model", f->models,
                  "GGUF model file(s), comma list or repeated; synth:SHAPE[:QUANT] for a synthesized one, "
                  "trained:NAME[:QUANT] for a trained one "
                  "(default: synth:tinyllama-1.1b:q4_0)");
  cmd->add_option("-p,--n-prompt", f->n_prompt, "Prompt lengths (pp tests), e.g. 512 or 64-512*2")->capture_default_str();
  cmd->add_option("-n,--n-gen", f->n_gen, "Generation lengths (tg tests)")->capture_default_str();
  cmd->add_option("--pg", f->prompt_gen, "Prompt+generation pairs 'pp,tg' (alias -pg; repeat for more)");
  cmd->add_option("-d,--n-depth", f->n_depth, "Context depth filled before each timed run")->capture_default_str();
  cmd->add_option("-t,--threads", f->threads, "Thread counts (default: physical cores available)");
  cmd->add_option("-C,--cpu-mask", f->cpu_masks, "CPU affinity masks in hex, e.g. 0x3");
  cmd->add_option("--cpu-strict", f->cpu_strict, "Strict placement, one CPU per thread (0|1)")->capture_default_str();
  cmd->add_option("--poll", f->poll, "Threadpool polling level 0..100")->capture_default_str();
  cmd->add_option("-b,--batch-size", f->n_batch, "Logical batch sizes")->capture_default_str();
  cmd->add_option("--ubatch-size", f->n_ubatch, "Physical batch sizes (alias -ub)")->capture_default_str();
  cmd->add_option("--flash-attn", f->flash_attn, "Flash attention on|off|auto (alias -fa)")->capture_default_str();
  cmd->add_option("--cache-type-k", f->type_k, "K cache types (alias -ctk)")->capture_default_str();
  cmd->add_option("--cache-type-v", f->type_v, "V cache types (alias -ctv)")->capture_default_str();
  cmd->add_option("--mmap", f->mmap, "Load with mmap (1) or read into memory (0) (alias -mmp)")->capture_default_str();
  cmd->add_option("--n-gpu-layers", f->gpu_layers, "Layers to offload to a GPU, -1 = all (alias -ngl; docs/gpu.md)")
      ->capture_default_str();
  cmd->add_option("--device", f->devices, "GPU devices by name joined by '/', or none (alias -dev; default: llama.cpp's choice)");
  cmd->add_option("--split-mode", f->split_mode, "How layers split over GPUs: none, layer or row (alias -sm)")
      ->capture_default_str();
  cmd->add_option("--main-gpu", f->main_gpu, "The GPU that holds the model with -sm none (alias -mg)")->capture_default_str();
  cmd->add_option("--no-op-offload", f->no_op_offload, "1 keeps ops with weights in host memory off the GPU (alias -nopo)")
      ->capture_default_str();
  cmd->add_option("-r,--repetitions", plan->run.repetitions, "Timed repetitions per test")->capture_default_str();
  cmd->add_option("--delay", plan->run.delay_s, "Seconds to sleep before each test (cool-down)")->capture_default_str();
  cmd->add_flag("--no-warmup", f->no_warmup, "Skip the untimed full-length warm-up run (alias -nw)");
  cmd->add_option("--seed", plan->run.seed, "Seed for the prompt tokens")->capture_default_str();
  cmd->add_option("--cpu-variant", plan->env.cpu_variant,
                  "Load this ggml CPU variant (e.g. sse42) instead of the best one for this CPU");
  cmd->add_flag(
      "--verify{32}", plan->run.verify_tokens,
      "After each test's repetitions, the greedy continuation of a fixed prompt (32 tokens, or "
      "--verify=N), stored with the run so another run can be checked against it; the figures do not change");
  cmd->add_option(
      "--verify-against", plan->verify_against,
      "Compare the continuations with a reference run's (run id or result JSON file; implies --verify)");
  cmd->add_option(
      "--draft", plan->run.spec.draft,
      "Draft model for speculative decoding (file, trained:draft, ...): after each test's repetitions, "
      "pairs of plain and speculative decoding of a fixed prompt, with acceptance and speed-up");
  cmd->add_option("--draft-max", plan->run.spec.draft_max, "Draft tokens proposed per verify step, at most")
      ->capture_default_str();
  cmd->add_option("--draft-min", plan->run.spec.draft_min,
                  "A draft shorter than this (near the end) is not verified: the target steps alone")
      ->capture_default_str();
  cmd->add_flag("--no-hash", f->no_hash, "Skip the model file's SHA-256 (big files on slow storage)");
  cmd->add_flag("--llama-log", plan->keep_engine_log,
                "Keep llama.cpp's log lines (info and above) in the json result as provenance.llama_log");
  add_endpoint_flags(cmd, plan->env, "repetition", "completions");
  cmd->add_option("--concurrency", f->concurrency, "After each test, load: this many requests in flight (list, e.g. 1,2,4)");
  cmd->add_option("--request-rate", plan->run.load.request_rate, "After each test, open-loop load: Poisson arrivals per second");
  cmd->add_option("--max-concurrency", plan->run.load.max_concurrency, "Cap on requests in flight at --request-rate (0 = 64)");
  cmd->add_option("--num-requests", plan->run.load.num_requests, "Requests per load level")->capture_default_str();
  cmd->add_option("--max-duration", plan->run.load.max_duration_s, "Seconds per load level, at most")->capture_default_str();
  cmd->add_option("--slo", f->slo, "Goodput bounds: ttft_ms=N,tpot_ms=N,e2el_ms=N");
  cmd->add_option("--sample-hz", plan->env.sample_hz, "Telemetry sampling rate (0 = off)")->capture_default_str();
  cmd->add_option("--sysfs-root", plan->env.sysfs_root, "Read sysfs/procfs under this root (fixture trees)")
      ->capture_default_str();
  cmd->add_option("--trace", f->trace_file, "Write a Chrome/Perfetto trace of phases, tokens and telemetry");
  cmd->add_option("--ceilings", plan->ceilings, "Device ceilings for efficiency: auto (cached probe), refresh (measure again, "
                  "keeping a higher stored figure), replace (store what is measured) or off")
      ->capture_default_str();
  add_store_flags(cmd, f->store, "Finish an interrupted bench run from the store (its stored plan)");
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
