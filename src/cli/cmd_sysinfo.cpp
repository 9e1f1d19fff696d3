#include "cli/cmd_sysinfo.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "cli/shared_flags.h"
#include "core/error.h"
#include "core/fs.h"
#include "engine/backend.h"
#include "probe/ceilings.h"
#include "telemetry/device_info.h"

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
  add_output_options(sub, options->output, {{"md", "json"}});
  sub->callback([options] {
    OutputTarget output(options->output.file);
    const FsRoot fs(options->sysfs_root);
    const auto info = telemetry::describe_device(fs);
    // The device's ceilings, from the probe cache (sysinfo measures nothing itself);
    // fixture trees describe another device, whose ceilings this machine cannot measure.
    std::optional<probe::DeviceCeilings> ceilings;
    std::string ceilings_note;
    if (options->sysfs_root != "/") {
      ceilings_note = "unavailable: ceilings are measured on the live device, not read from a fixture tree";
    } else {
      engine::start_log_capture(false);  // keep ggml's backend-loading line off stderr
      probe::ProbeOptions po;
      ceilings = probe::load_cached(po);
      if (!ceilings) ceilings_note = "not measured yet for this device and build: run 'edgeprobe probe'";
    }
    if (options->output.format == "json") {
      auto j = telemetry::to_json(info);
      j["ceilings"] = ceilings ? probe::to_json(*ceilings) : nlohmann::json(ceilings_note);
      output.stream() << j.dump(2) << "\n";
    } else {
      output.stream() << telemetry::render_text(info);
      output.stream() << (ceilings ? probe::to_text(*ceilings) : "Ceilings: " + ceilings_note + "\n");
    }
    output.commit();
  });
}

}  // namespace edgeprobe::cli
