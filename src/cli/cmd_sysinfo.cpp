#include "cli/cmd_sysinfo.h"

#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <string>

#include "core/error.h"
#include "core/fs.h"
#include "telemetry/device_info.h"

namespace edgeprobe::cli {

namespace {
struct SysinfoOptions {
  std::string sysfs_root = "/";
  std::string output = "text";
};
}  // namespace

void register_sysinfo(CLI::App& app) {
  auto options = std::make_shared<SysinfoOptions>();
  CLI::App* sub = app.add_subcommand("sysinfo", "What this device offers for telemetry, and what it does not (and why)");
  sub->add_option("--sysfs-root", options->sysfs_root,
                   "Read /sys and /proc under this directory (a fixture tree), default /")
      ->check(CLI::ExistingDirectory);
  sub->add_option("-o,--output", options->output, "Output format")->check(CLI::IsMember({"text", "json"}));
  sub->callback([options] {
    const FsRoot fs(options->sysfs_root);
    const auto info = telemetry::describe_device(fs);
    if (options->output == "json") {
      std::cout << telemetry::to_json(info).dump(2) << "\n";
    } else {
      std::cout << telemetry::render_text(info);
    }
  });
}

}  // namespace edgeprobe::cli
