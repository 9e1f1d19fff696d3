// edgeprobe: measures and diagnoses how LLMs run on a device. The binary only wires
// subcommands to the library; each subcommand lives in its own file.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <csignal>
#include <iostream>

#include "cli/cli_errors.h"
#include "cli/cmd_bench.h"
#include "cli/cmd_compare.h"
#include "cli/cmd_doctor.h"
#include "cli/cmd_explain.h"
#include "cli/cmd_export.h"
#include "cli/cmd_fidelity.h"
#include "cli/cmd_frontier.h"
#include "cli/cmd_kv_serve.h"
#include "cli/cmd_lab.h"
#include "cli/cmd_predict.h"
#include "cli/cmd_predict_disagg.h"
#include "cli/cmd_probe.h"
#include "cli/cmd_report.h"
#include "cli/cmd_run.h"
#include "cli/cmd_runs.h"
#include "cli/cmd_serve.h"
#include "cli/cmd_session.h"
#include "cli/cmd_synth.h"
#include "cli/cmd_sysinfo.h"
#include "cli/cmd_train.h"
#include "cli/common.h"
#include "cli/completion.h"
#include "core/error.h"
#include "core/stop_token.h"
#include "edgeprobe_version.h"

namespace {

constinit std::atomic<int> g_interrupts{0};
constinit bool g_stderr_is_terminal = false;  // set before the handler is installed

void say(const char* text, size_t size) {
  if (g_stderr_is_terminal) (void)!write(STDERR_FILENO, "\r\033[K", 4);  // off the progress bar's line
  (void)!write(STDERR_FILENO, text, size);
}

// Async-signal-safe (lock-free atomics, write(2), signal(2), raise(3)). The first Ctrl-C or
// SIGTERM sets the process's StopToken, which every job and lab run holds unless its
// caller gave it another: the job ends after the unit in flight. The second stops at once
// (the unit in flight is dropped, what finished is kept); a third, for a job stuck where
// no abort reaches (a server's request, a model load), exits without last words.
void on_interrupt(int sig) {
  if (!edgeprobe::process_stop_watched()) {
    // No job is running to see the flag, and the program may be blocked where it never
    // would (an open(2) of a FIFO is restarted after the handler): the signal's own
    // default action ends it, as if no handler were installed. `sig` stays blocked until
    // the handler returns, then kills.
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  const int count = g_interrupts.fetch_add(1) + 1;
  if (count == 1) {
    static const char kFirst[] = "edgeprobe: stopping after the unit in flight (interrupt again to stop at once)\n";
    say(kFirst, sizeof kFirst - 1);
    edgeprobe::request_process_stop();
  } else if (count == 2) {
    static const char kSecond[] = "edgeprobe: stopping at once: the unit in flight is dropped\n";
    say(kSecond, sizeof kSecond - 1);
    edgeprobe::request_process_stop_now();
  } else {
    _exit(130);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace edgeprobe;
  std::vector<std::string> args(argv + 1, argv + argc);
  std::vector<std::string> command_line(argv, argv + argc);
  args = cli::rewrite_llama_bench_aliases(args);

  CLI::App app{"edgeprobe: how fast an LLM really runs on this device, and why not faster"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] { return cli::version_text(); });
  app.name("edgeprobe");  // the usage lines of --help say "edgeprobe bench [OPTIONS]"
  cli::add_help_all_flag(app);
  cli::register_bench(app, command_line);
  cli::register_synth(app);
  cli::register_train(app);
  cli::register_session(app, command_line);
  cli::register_sysinfo(app);
  cli::register_probe(app);
  cli::register_runs(app);
  cli::register_export(app);
  cli::register_compare(app);
  cli::register_explain(app);
  cli::register_doctor(app, command_line);
  cli::register_run(app, command_line);
  cli::register_report(app);
  cli::register_kv_serve(app);
  cli::register_predict(app);
  cli::register_predict_disagg(app);
  cli::register_lab(app, command_line);
  cli::register_fidelity(app);
  cli::register_frontier(app);
  cli::register_serve(app);
  cli::register_submit(app);
  cli::register_completion(app);

  // Ctrl-C ends the sweep after the repetition in flight; what was measured is written.
  g_stderr_is_terminal = isatty(STDERR_FILENO) == 1;
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  const std::vector<std::string> given = args;
  try {
    std::reverse(args.begin(), args.end());
    app.parse(args);
  } catch (const cli::HelpAllPage& page) {
    std::cout << page.text;
    return 0;
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "edgeprobe: error: " << cli::explain_parse_error(app, e, given) << "\n";
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
