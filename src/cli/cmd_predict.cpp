#include "cli/cmd_predict.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "app/predict_job.h"
#include "cli/common.h"
#include "cli/job_options.h"
#include "cli/shared_flags.h"
#include "core/error.h"
#include "report/predict_reporters.h"
#include "workload/sweep.h"
#include "report/formats.h"

namespace edgeprobe::cli {
namespace {

struct PredictFlags {
  std::vector<std::string> models, quants, threads, n_prompt{"512"}, n_gen{"128"}, n_depth{"0"},
      n_ubatch{"512"}, type_k{"f16"}, draft_max;
  std::string check;
  double acceptance = -1;
  double bandwidth = 0, gflops = 0, storage = 0, memory_gb = 0;
  int cores = 0;
  std::string db, device_spec, backend;
  OutputFlags output;
  app::PredictPlan plan;
};

int run(PredictFlags& f, const CLI::App& cmd) {
  OutputTarget output(f.output.file);
  if (!f.check.empty()) {
    const auto doc = app::check_stored_run(f.check, f.db);
    report::write_predict_check(doc, f.output.format, output.stream());
    output.commit();
    return 0;
  }
  app::PredictPlan& plan = f.plan;
  if (!f.models.empty()) plan.models = split_all(f.models);
  plan.quants = split_all(f.quants);
  plan.threads = workload::parse_int_lists(f.threads, "-t");
  plan.n_prompt = workload::parse_int_lists(f.n_prompt, "-p");
  plan.n_gen = workload::parse_int_lists(f.n_gen, "-n");
  plan.n_depth = workload::parse_int_lists(f.n_depth, "-d");
  plan.n_ubatch = workload::parse_int_lists(f.n_ubatch, "-ub");
  plan.type_k = split_all(f.type_k);
  plan.draft_max = workload::parse_int_lists(f.draft_max, "--draft-max");
  if (cmd.count("--acceptance")) plan.acceptance = f.acceptance;
  plan.db = resolve_db_path(f.db);
  const bool spec = cmd.count("--bandwidth") || cmd.count("--gflops") || cmd.count("--cores") ||
                    cmd.count("--memory-gb") || cmd.count("--storage-mb-per-s");
  plan.device_spec = f.device_spec;
  plan.backend = f.backend;
  if (spec) {
    if (!cmd.count("--bandwidth") && f.device_spec.empty())
      throw_bad_input("a device spec needs --bandwidth GB/s (its memory bandwidth: the figure decode scales with)");
    predict::DeviceSpec s;
    s.bandwidth_gb_per_s = f.bandwidth;
    s.matmul_gflop_per_s = f.gflops;
    s.storage_mb_per_s = f.storage;
    s.memory_bytes = static_cast<uint64_t>(f.memory_gb * 1e9);
    s.cores = f.cores;
    plan.spec = s;
  }
  TerminalSink sink(!f.output.quiet);
  app::JobContext ctx;
  ctx.sink = &sink;
  const auto report = app::run_predict(plan, ctx);
  sink.done();
  report::write_predict_report(app::to_json(report), f.output.format, output.stream());
  output.commit();
  return 0;
}

}  // namespace

void register_predict(CLI::App& app) {
  auto f = std::make_shared<PredictFlags>();
  CLI::App* cmd = app.add_subcommand("predict", "Predict prefill, decode, memory and load of a model on a device "
                                                "from its measured ceilings, before running it there");
  cmd->add_option("-m,--model", f->models, "GGUF file(s), synth:SHAPE[:QUANT], or a shape name (tiny, tinyllama-1.1b, "
                                           "llama-7b) with -q; comma list (default: synth:tinyllama-1.1b)");
  cmd->add_option("-q,--quant", f->quants, "Quantizations of a shape, comma list (e.g. q4_0,q4_k_m,q3_k_m); "
                                           "planned by llama.cpp's quantizer, no file written");
  cmd->add_option("-t,--threads", f->threads, "Thread counts (default: the device's)");
  cmd->add_option("-p,--n-prompt", f->n_prompt, "Prompt lengths")->capture_default_str();
  cmd->add_option("-n,--n-gen", f->n_gen, "Generation lengths")->capture_default_str();
  cmd->add_option("-d,--n-depth", f->n_depth, "Context depth before the prompt")->capture_default_str();
  cmd->add_option("--ubatch-size", f->n_ubatch, "Physical batch sizes (alias -ub)")->capture_default_str();
  cmd->add_option("--cache-type-k", f->type_k, "KV cache types (K and V alike; alias -ctk)")->capture_default_str();
  cmd->add_option("--cpu-variant", f->plan.cpu_variant, "This machine: the ggml CPU variant to predict for");
  cmd->add_option("--device", f->plan.device_id, "A device in the store (its id, as `edgeprobe runs` shows it) "
                                                 "instead of this machine");
  cmd->add_option("--gpu", f->plan.gpu,
                  "Predict for this GPU of the device, by ggml's name (Vulkan0): its own ceilings, measured through "
                  "ggml (all layers offloaded)");
  cmd->add_option("--device-spec", f->device_spec,
                  "A device not at hand, from the catalogue (data/predict/devices.json): its key or alias "
                  "(raspberry-pi-5); the spec flags below override its figures");
  cmd->add_option("--backend", f->backend,
                  "With --device-spec or a spec: the llama.cpp backend whose published efficiencies apply "
                  "(cpu, cuda, metal, vulkan, opencl, rocm; default cpu)");
  cmd->add_option("--bandwidth", f->bandwidth, "A device not measured: its memory bandwidth, GB/s")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--gflops", f->gflops, "A device not measured: its matmul rate, GFLOP/s (for prefill)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--cores", f->cores,
                  "A device not measured: its cores (the default thread count; with --device-spec they "
                  "replace its clusters)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--memory-gb", f->memory_gb, "A device not measured: its memory, GB (for 'will not fit')")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--storage-mb-per-s", f->storage, "A device not measured: its storage read rate, MB/s (load time)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--check", f->check, "Print how far a stored bench run (id or result file) fell from its predictions");
  cmd->add_option(
      "--draft", f->plan.draft,
      "Speculative decoding with this draft model (a GGUF file or synth:SHAPE:QUANT): per draft length, "
      "the break-even acceptance and, with an acceptance, the speed-up over plain decoding");
  cmd->add_option("--draft-max", f->draft_max,
                  "With --draft: draft lengths, comma list (default 2,4,8; with "
                  "--acceptance-from, the run's)");
  cmd->add_option("--acceptance", f->acceptance,
                  "With --draft: the chance each proposal is accepted after the ones before it (0 to 1)");
  cmd->add_option(
      "--acceptance-from", f->plan.acceptance_from,
      "With --draft: a bench --draft run (id or result file) whose measured acceptance per draft position "
      "to predict at");
  cmd->add_flag("--remeasure", f->plan.remeasure, "Measure this machine's per-step costs again");
  cmd->add_option("--sysfs-root", f->plan.sysfs_root, "Read sysfs/procfs under this root")->capture_default_str();
  add_db_option(cmd, f->db);
  add_output_options(cmd, f->output, {report::formats_of(report::OutputKind::kPredict), /*short_quiet=*/false});
  cmd->callback([f, cmd] {
    const int rc = run(*f, *cmd);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace edgeprobe::cli
