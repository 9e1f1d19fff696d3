#include "cli/cmd_sysinfo.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "cli/shared_flags.h"
#include "core/error.h"
#include "core/fs.h"
#include "engine/backend.h"
#include "core/text.h"
#include "result/result.h"
#include "probe/ceilings.h"
#include "telemetry/device_info.h"
#include "report/device_reporters.h"
#include "report/formats.h"

namespace edgeprobe::cli {

namespace {
struct SysinfoOptions {
  std::string sysfs_root = "/";
  OutputFlags output;
};
}  // namespace

void register_sysinfo(CLI::App& app) {
  auto options = std::make_shared<SysinfoOptions>();
  CLI::App* sub = app.add_subcommand("sysinfo", "What this device offers for telemetry, and what it does not (and why)");
  sub->add_option("--sysfs-root", options->sysfs_root,
                   "Read /sys and /proc under this directory (a fixture tree), default /")
      ->check(CLI::ExistingDirectory);
  add_output_options(sub, options->output, {report::formats_of(report::OutputKind::kDeviceText)});
  sub->callback([options] {
    OutputTarget output(options->output.file);
    const FsRoot fs(options->sysfs_root);
    const auto info = telemetry::describe_device(fs);
    // The device's ceilings, from the probe cache (sysinfo measures nothing itself);
    // fixture trees describe another device, whose ceilings this machine cannot measure.
    std::optional<probe::DeviceCeilings> ceilings;
    std::string ceilings_note;
    // llama.cpp's GPU backends on this machine: each library, why it did not load, its devices.
    std::optional<std::vector<engine::GpuBackendInfo>> gpus;
    if (options->sysfs_root != "/") {
      ceilings_note = "unavailable: ceilings are measured on the live device, not read from a fixture tree";
    } else {
      engine::start_log_capture(false);  // keep ggml's backend-loading line off stderr
      probe::ProbeOptions po;
      ceilings = probe::load_cached(po);
      if (!ceilings) ceilings_note = "not measured yet for this device and build: run 'edgeprobe probe'";
      gpus = engine::load_gpu_backends();
    }
    if (options->output.format == "json") {
      auto j = telemetry::to_json(info);
      j["ceilings"] = ceilings ? probe::to_json(*ceilings) : nlohmann::json(ceilings_note);
      j["gpu_backends"] = gpus ? result::to_json(*gpus) : nlohmann::json(nullptr);
      output.stream() << j.dump(2) << "\n";
    } else {
      output.stream() << report::to_text(info);
      if (gpus) output.stream() << report::gpu_backends_text(*gpus);
      output.stream() << (ceilings ? report::to_text(*ceilings) : "Ceilings: " + ceilings_note + "\n");
    }
    output.commit();
  });
}

}  // namespace edgeprobe::cli
