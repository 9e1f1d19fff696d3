#include "cli/cmd_fidelity.h"

#include <CLI/CLI.hpp>

#include "app/fidelity_job.h"
#include "cli/job_options.h"
#include "cli/shared_flags.h"
#include "fidelity/report.h"

namespace edgeprobe::cli {
namespace {

struct FidelityFlags {
  app::FidelityPlan plan;
  GpuFlags gpu;
  int reference_ngl = -2;
  std::string reference_device = "\x01";
  OutputFlags output;
};

int run(FidelityFlags& f, const CLI::App& cmd) {
  OutputTarget output(f.output.file);
  auto& plan = f.plan;
  plan.n_ctx_given = cmd.count("--ctx-size") > 0;
  plan.model_options.n_gpu_layers = f.gpu.n_gpu_layers;
  plan.model_options.devices = f.gpu.devices;
  plan.model_options.split_mode = "layer";
  plan.op_offload = f.gpu.op_offload();
  plan.reference_gpu_layers = f.reference_ngl;
  plan.reference_devices = f.reference_device;
  TerminalSink sink(!f.output.quiet);
  app::JobContext ctx;
  ctx.sink = &sink;
  const auto report = app::run_fidelity(plan, ctx);
  sink.done();
  fidelity::write_report(report, f.output.format, output.stream());
  output.commit();
  return 0;
}

}  // namespace

void register_fidelity(CLI::App& app) {
  auto f = std::make_shared<FidelityFlags>();
  CLI::App* cmd = app.add_subcommand(
      "fidelity",
      "How far a model's next-token distributions are from a reference's over a text: KLD, top-1 "
      "agreement, Δp, PPL ratio, as llama-perplexity --kl-divergence measures them (docs/fidelity.md)");
  cmd->add_option("-m,--model", f->plan.model, "The model: a GGUF file or synth:SHAPE[:QUANT]")->required();
  cmd->add_option(
      "--reference", f->plan.reference,
      "The reference: a GGUF file of the same vocabulary (the model's f16), synth:..., or a stored "
      "reference written by --save-reference");
  cmd->add_option("--text", f->plan.text,
                  "The evaluation text (default: " + fidelity::default_text_path() + ")");
  cmd->add_option("-c,--ctx-size", f->plan.chunks.n_ctx,
                  "Tokens per chunk; the second half of each is scored")
      ->check(CLI::Range(4, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--chunks", f->plan.chunks.n_chunks,
                  "At most this many chunks (default: all the text holds)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("-t,--threads", f->plan.n_threads, "Threads (default: the device's)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--save-reference", f->plan.save_reference,
                  "Write the model's compact reference (top-k log-probabilities and the rest mass per scored "
                  "position) to FILE instead of comparing");
  cmd->add_option("--top-k", f->plan.top_k, "--save-reference: log-probabilities kept per position")
      ->check(CLI::Range(1, fidelity::kMaxTopK))
      ->capture_default_str();
  cmd->add_option(
         "--samples", f->plan.samples,
         "--save-reference: tokens drawn per position from the mass outside the top k, for an unbiased KLD "
         "estimate beside the lower bound")
      ->check(CLI::Range(0, fidelity::kMaxSamples))
      ->capture_default_str();
  cmd->add_option("--cpu-variant", f->plan.env.cpu_variant,
                  "The ggml CPU variant to load (default: the best one)");
  cmd->add_flag(
      "--check-quantization", f->plan.check_quantization,
      "Also quantize the reference to the model's file type with llama.cpp (cached) and say whether the "
      "model is further from the reference than that fresh quantization (a corrupted or mis-converted "
      "file)");
  add_gpu_options(cmd, f->gpu);
  cmd->add_option(
      "--reference-cpu-variant", f->plan.reference_cpu_variant,
      "Compute the reference on this ggml CPU variant, in a child process (stored compactly, --top-k)");
  cmd->add_option("--reference-ngl", f->reference_ngl, "The reference's own -ngl (default: the model's)")
      ->check(CLI::Range(-1, 100000));
  cmd->add_option("--reference-device", f->reference_device,
                  "The reference's own --device (default: the model's)");
  add_output_options(cmd, f->output, {{"md", "json"}});
  cmd->callback([f, cmd] {
    const int rc = run(*f, *cmd);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace edgeprobe::cli
