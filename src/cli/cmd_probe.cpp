#include "cli/cmd_probe.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "cli/job_options.h"
#include "core/error.h"
#include "engine/backend.h"
#include "platform/cpu_features.h"
#include "platform/isa_gap.h"
#include "platform/topology.h"
#include "model/gguf_info.h"
#include "probe/ceilings.h"
#include "probe/gpu_ceilings.h"
#include "probe/roofline.h"
#include "core/context_defaults.h"
#include "report/device_reporters.h"
#include "report/formats.h"

namespace edgeprobe::cli {

void register_probe(CLI::App& app) {
  struct Args {
    bool refresh = false;
    bool replace = false;
    std::string model;
    int threads = 0;
    std::string sysfs_root = "/";
    OutputFlags output;
    std::string cpu_variant;
    uint64_t buffer_mib = 0;
    bool no_compute = false;
    int ubatch = kDefaultUbatch;
    std::vector<std::string> gpus;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand(
      "probe", "Measure the device's ceilings: memory bandwidth (decode), matrix compute (prefill), storage (load)");
  cmd->add_flag("--refresh", args->refresh,
                "Measure again instead of using the cached figures (a stored figure that is higher is kept)");
  cmd->add_flag("--replace", args->replace,
                "With --refresh: store what is measured even where the stored ceiling is higher");
  cmd->add_option("-m,--model", args->model, "GGUF file whose read throughput (cold and warm) to measure");
  cmd->add_option("-t,--threads", args->threads, "Most threads to use (default: one per physical core)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--sysfs-root", args->sysfs_root,
                  "Read topology and CPU features from this tree instead of / (nothing is measured then)")
      ->capture_default_str();
  add_output_options(cmd, args->output, {report::formats_of(report::OutputKind::kDeviceText)});
  cmd->add_option("--cpu-variant", args->cpu_variant, "ggml CPU variant to load (default: the best for this CPU)");
  cmd->add_option("--buffer-mib", args->buffer_mib, "Bandwidth buffer size in MiB (default: 8x LLC, 512-1024 MiB)");
  cmd->add_flag("--no-compute", args->no_compute, "Skip the compute probe (no ggml backend is loaded)");
  cmd->add_option("--ubatch-size", args->ubatch,
                  "With -m: the prompt batch the model's prefill kernels are measured at (bench's -ub)")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--gpu", args->gpus,
                  "Also measure these GPU devices through ggml (ggml's names, e.g. Vulkan0; 'all': every GPU here): "
                  "bandwidth, matmul rates and, with -m, the model's kernels")
      ->expected(0, 1)
      ->default_str("all")
      ->delimiter(',');
  cmd->callback([args] {
    OutputTarget output(args->output.file);  // a bad path fails before minutes of measuring
    const FsRoot fs(args->sysfs_root);
    const bool live = fs.root() == "/";
    const std::string model_name = platform::cpu_model_name(fs);
    const auto features = platform::detect_cpu_features(fs);
    const auto topology = platform::detect_topology(fs);

    nlohmann::json out = {{"cpu_model", model_name},
                          {"sysfs_root", fs.root()},
                          {"cpu_features", platform::to_json(features)},
                          {"topology", platform::to_json(topology)}};
    std::string text = fmt::format("CPU: {}\n", model_name) + report::to_text(features) + report::to_text(topology);

    if (!live) {
      // No variant is loaded for another device, but the best one for its CPU can be named.
      const auto gap = platform::compare_isa(features, engine::CpuBackendInfo{});
      out["isa_gap"] = platform::to_json(gap);
      text += fmt::format("best ggml CPU variant for this CPU: {}\n", gap.best_variant.empty() ? "?" : gap.best_variant);
      out["ceilings"] = nullptr;
      out["ceilings_status"] = "unavailable: --sysfs-root describes another device; nothing was measured";
      text += "ceilings: unavailable: --sysfs-root describes another device; nothing was measured\n";
    } else {
      engine::start_log_capture(false);  // ggml's load lines stay out of the report
      probe::ProbeOptions o;
      o.sysfs_root = fs.root();
      o.max_threads = args->threads;
      o.model_path = args->model;
      o.variant = args->cpu_variant;
      o.buffer_bytes = args->buffer_mib << 20;
      o.measure_compute = !args->no_compute;
      if (!args->no_compute) {
        const auto& backend = engine::load_cpu_backend(args->cpu_variant);
        const auto gap = platform::compare_isa(features, backend, engine::installed_cpu_variants());
        out["isa_gap"] = platform::to_json(gap);
        text += report::to_text(gap);
      } else {
        out["isa_gap"] = nullptr;
        text += "ggml CPU variant: not loaded (--no-compute)\n";
      }
      TerminalSink sink(!args->output.quiet);
      o.progress = [&sink](const std::string& step, size_t done, size_t total) {
        sink.progress(step == "done" ? "measured (cached for later runs)" : "measuring " + step);
        sink.units(done, total, "measurements");
      };
      o.replace = args->replace;
      o.remeasure_kernels = args->refresh || args->replace;
      auto ceilings = probe::load_or_measure(o, args->refresh || args->replace);
      if (!args->model.empty()) {
        // The model's own prefill shapes and decode matvecs, as a bench of it would use them.
        probe::KernelNeeds needs;
        needs.prefill_tokens.insert(args->ubatch);
        needs.decode_threads.insert(ceilings.threads);
        sink.progress("measuring the model's prefill and decode kernels (cached for later runs)");
        probe::ensure_model_kernels(ceilings, model::read_gguf_info(args->model), needs, o);
      }
      if (!args->gpus.empty()) {
        std::vector<std::string> devices = args->gpus;
        if (devices == std::vector<std::string>{"all"} || devices == std::vector<std::string>{""}) {
          devices = probe::gpu_device_names();
          if (devices.empty())
            throw_environment("--gpu: ggml offers no GPU device here ('edgeprobe sysinfo' lists the GPU backends and "
                              "why one has none; lavapipe needs GGML_VK_VISIBLE_DEVICES=0)");
        }
        probe::ensure_gpu_ceilings(ceilings, devices, o, args->refresh || args->replace);
        if (!args->model.empty()) {
          const auto info = model::read_gguf_info(args->model);
          probe::KernelNeeds needs;
          needs.prefill_tokens.insert(args->ubatch);
          needs.decode_threads.insert(0);
          for (const auto& d : devices) {
            sink.progress("measuring the model's kernels on " + d + " (cached for later runs)");
            probe::ensure_gpu_model_kernels(ceilings, d, info, needs, o);
          }
        }
      }
      sink.done();
      out["ceilings"] = probe::to_json(ceilings);
      out["ceilings"]["from_cache"] = ceilings.from_cache;
      out["ceilings"]["cache_path"] = ceilings.cache_path;
      out["ceilings"]["refresh_kept"] = ceilings.kept_notes;
      text += report::to_text(ceilings);
    }
    output.stream() << (args->output.format == "json" ? out.dump(2) + "\n" : text);
    output.commit();
  });
}

}  // namespace edgeprobe::cli
