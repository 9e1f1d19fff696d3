#include "cli/cmd_doctor.h"

#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>
#include <memory>

#include "cli/common.h"
#include "core/error.h"
#include "doctor/doctor.h"
#include "doctor/tune.h"
#include "engine/llama_engine.h"
#include "model/synth.h"
#include "workload/plan.h"

namespace edgeprobe::cli {

void register_doctor(CLI::App& app) {
  struct Args {
    std::string model, mmap = "1", output_format = "text", output_file, baseline, sysfs_root = "/";
    doctor::RunConfig config;
    int n_prompt = 128, n_gen = 32, repetitions = 3;
    double sample_hz = 20;
    bool no_experiments = false, tune = false, quiet = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("doctor", "Name what slows a model down on this device, with evidence and the fix");
  cmd->add_option("-m,--model", a->model, "GGUF model file or synth:SHAPE[:QUANT] (default: synth:tinyllama-1.1b:q4_0)");
  cmd->add_option("-t,--threads", a->config.threads, "Threads of the configuration to diagnose (default: physical cores available)")
      ->check(CLI::Range(1, 512));
  cmd->add_option("-C,--cpu-mask", a->config.cpu_mask, "CPU affinity mask in hex, e.g. 0x3");
  cmd->add_option("--cpu-strict", a->config.cpu_strict, "Strict placement (0|1)")->check(CLI::Range(0, 1))->capture_default_str();
  cmd->add_option("--poll", a->config.poll, "Threadpool polling level 0..100")->check(CLI::Range(0, 100))->capture_default_str();
  cmd->add_option("-b,--batch-size", a->config.n_batch, "Logical batch size")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--ubatch-size", a->config.n_ubatch, "Physical batch size (alias -ub)")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--flash-attn", a->config.flash_attn, "Flash attention 0|1|auto (alias -fa)")
      ->check(CLI::IsMember({"0", "1", "auto", "on", "off"}))
      ->capture_default_str();
  cmd->add_option("--cache-type-k", a->config.type_k, "K cache type (alias -ctk)")->capture_default_str();
  cmd->add_option("--cache-type-v", a->config.type_v, "V cache type (alias -ctv)")->capture_default_str();
  cmd->add_option("--mmap", a->mmap, "Load with mmap (1) or read into memory (0) (alias -mmp)")
      ->check(CLI::IsMember({"0", "1"}))
      ->capture_default_str();
  cmd->add_option("--cpu-variant", a->config.cpu_variant, "Load this ggml CPU variant instead of the best one");
  cmd->add_option("-p,--n-prompt", a->n_prompt, "Prompt tokens of doctor's prefill test")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  cmd->add_option("-n,--n-gen", a->n_gen, "Tokens of doctor's decode test")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  cmd->add_option("-r,--repetitions", a->repetitions, "Repetitions per test (the median is used)")->check(CLI::Range(1, 100))->capture_default_str();
  cmd->add_option("--baseline", a->baseline, "A result from another device or run (bench or doctor -o json) to check the model against");
  cmd->add_option("--sysfs-root", a->sysfs_root, "Read sysfs under this root (fixture trees)")->capture_default_str();
  cmd->add_option("--sample-hz", a->sample_hz, "Telemetry sampling rate")->check(CLI::Range(1.0, 1000.0))->capture_default_str();
  cmd->add_flag("--no-experiments", a->no_experiments, "Diagnose from the one run; do not measure the fixes");
  cmd->add_flag("--tune", a->tune, "Search threads, CPU mask, placement, polling, batch sizes and flash attention for the fastest configuration");
  cmd->add_option("-o,--output-format", a->output_format, "text or json")->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  cmd->add_option("--output", a->output_file, "Write the report to FILE instead of stdout");
  cmd->add_flag("-q,--quiet", a->quiet, "No progress on stderr");
  cmd->callback([a] {
    if (a->config.flash_attn == "on") a->config.flash_attn = "1";
    if (a->config.flash_attn == "off") a->config.flash_attn = "0";
    engine::parse_cache_type(a->config.type_k);
    engine::parse_cache_type(a->config.type_v);
    if (!a->config.cpu_mask.empty()) engine::parse_cpu_mask(a->config.cpu_mask);
    if (!a->baseline.empty()) doctor::load_baseline(a->baseline);  // a bad file fails before minutes of measuring
    std::ofstream file;
    if (!a->output_file.empty()) {
      file.open(a->output_file, std::ios::trunc);
      if (!file) throw_bad_input("cannot write --output '{}'", a->output_file);
    }
    std::ostream& out = a->output_file.empty() ? std::cout : file;

    Progress progress(!a->quiet);
    if (a->model.empty() || a->model.starts_with("synth:"))
      progress.update("preparing the synthesized model (written on first use, then cached)");
    doctor::DoctorOptions options;
    options.model_path = model::resolve_model_spec(a->model);
    options.config = a->config;
    options.config.use_mmap = a->mmap == "1";
    if (options.config.threads == 0) options.config.threads = workload::default_thread_count();
    options.n_prompt = a->n_prompt;
    options.n_gen = a->n_gen;
    options.repetitions = a->repetitions;
    options.sysfs_root = a->sysfs_root;
    options.sample_hz = a->sample_hz;
    options.baseline_path = a->baseline;
    options.experiments = !a->no_experiments;
    auto on_progress = [&](const std::string& s) { progress.update(s); };

    if (a->tune) {
      const auto result = doctor::tune(options, on_progress);
      progress.finish();
      out << (a->output_format == "json" ? doctor::to_json(result).dump(2) + "\n" : doctor::to_text(result));
      return;
    }
    const auto diagnosis = doctor::run_doctor(options, on_progress);
    progress.finish();
    out << (a->output_format == "json" ? doctor::to_json(diagnosis).dump(2) + "\n" : doctor::to_text(diagnosis));
  });
}

}  // namespace edgeprobe::cli
