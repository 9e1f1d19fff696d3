// edgeprobe: measures and diagnoses how LLMs run on a device. The binary only wires
// subcommands to the library; each subcommand lives in its own file.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <csignal>
#include <iostream>

#include "cli/cmd_bench.h"
#include "cli/cmd_compare.h"
#include "cli/cmd_doctor.h"
#include "cli/cmd_export.h"
#include "cli/cmd_kv_serve.h"
#include "cli/cmd_predict.h"
#include "cli/cmd_predict_disagg.h"
#include "cli/cmd_lab.h"
#include "cli/cmd_probe.h"
#include "cli/cmd_report.h"
#include "cli/cmd_run.h"
#include "cli/cmd_runs.h"
#include "cli/cmd_session.h"
#include "cli/cmd_synth.h"
#include "cli/cmd_sysinfo.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/stop_token.h"
#include "edgeprobe_version.h"

namespace {

// Async-signal-safe (one store to a lock-free atomic): sets the process's StopToken, which
// every job and lab run holds unless its caller gave it another.
void on_interrupt(int) { edgeprobe::request_process_stop(); }

}  // namespace

int main(int argc, char** argv) {
  using namespace edgeprobe;
  std::vector<std::string> args(argv + 1, argv + argc);
  std::vector<std::string> command_line(argv, argv + argc);
  args = cli::rewrite_llama_bench_aliases(args);

  CLI::App app{"edgeprobe: how fast an LLM really runs on this device, and why not faster"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("edgeprobe ") + kVersion + " (llama.cpp " + kLlamaCppCommit + ")");
  cli::register_bench(app, command_line);
  cli::register_synth(app);
  cli::register_session(app, command_line);
  cli::register_sysinfo(app);
  cli::register_probe(app);
  cli::register_runs(app);
  cli::register_export(app);
  cli::register_compare(app);
  cli::register_doctor(app, command_line);
  cli::register_run(app, command_line);
  cli::register_report(app);
  cli::register_kv_serve(app);
  cli::register_predict(app);
  cli::register_predict_disagg(app);
  cli::register_lab(app, command_line);

  // Ctrl-C ends the sweep after the repetition in flight; what was measured is written.
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  try {
    std::reverse(args.begin(), args.end());
    app.parse(args);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "edgeprobe: error: " << e.what() << " (see 'edgeprobe --help')\n";
    return static_cast<int>(ErrorKind::kBadInput);
  } catch (const Error& e) {
    std::cerr << "edgeprobe: error: " << e.what() << "\n";
    return e.exit_code();
  } catch (const std::exception& e) {
    std::cerr << "edgeprobe: internal error: " << e.what() << "\n";
    return static_cast<int>(ErrorKind::kBug);
  }
  return 0;
}
