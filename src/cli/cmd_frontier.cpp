#include "cli/cmd_frontier.h"

#include <CLI/CLI.hpp>

#include "app/frontier_job.h"
#include "cli/job_options.h"
#include "cli/shared_flags.h"
#include "fidelity/frontier.h"

namespace edgeprobe::cli {
namespace {

struct FrontierFlags {
  app::FrontierPlan plan;
  OutputFlags output;
};

int run(FrontierFlags& f) {
  OutputTarget output(f.output.file);
  TerminalSink sink(!f.output.quiet);
  app::JobContext ctx;
  ctx.sink = &sink;
  const auto frontier = app::run_frontier(f.plan, ctx);
  sink.done();
  fidelity::write_frontier(frontier, f.output.format, output.stream());
  output.commit();
  return 0;
}

}  // namespace

void register_frontier(CLI::App& app) {
  auto f = std::make_shared<FrontierFlags>();
  auto& plan = f->plan;
  CLI::App* cmd = app.add_subcommand(
      "frontier",
      "One model's quantizations on the accuracy/efficiency frontier: each one's size, speed against the "
      "full-precision file (interleaved rounds) and fidelity against it; dominated ones marked "
      "(docs/fidelity.md)");
  cmd->add_option("-m,--model", plan.model,
                  "trained:NAME or synth:SHAPE (their f32/f16 is the reference), or an f16/f32 GGUF file "
                  "(quantized on first use, cached)")
      ->required();
  cmd->add_option("-q,--quants", plan.quants, "Quantizations, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--text", plan.text, "The evaluation text (default: the trained models' held-out text)");
  cmd->add_option("-c,--ctx-size", plan.chunks.n_ctx,
                  "Fidelity: tokens per chunk; the second half of each is scored")
      ->check(CLI::Range(4, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--chunks", plan.chunks.n_chunks, "Fidelity: at most this many chunks")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("-t,--threads", plan.n_threads, "Threads (default: the device's)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--rounds", plan.rounds,
                  "Speed: rounds, each running every quantization and the reference once")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("-p,--n-prompt", plan.n_prompt, "Speed: prompt tokens per test")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("-n,--n-gen", plan.n_gen, "Speed: generated tokens per test")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--cpu-variant", plan.env.cpu_variant,
                  "The ggml CPU variant to load (default: the best one)");
  add_output_options(cmd, f->output, {{"md", "json"}, /*short_quiet=*/false});
  cmd->callback([f] {
    const int rc = run(*f);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace edgeprobe::cli
