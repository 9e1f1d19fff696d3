#pragma once
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace edgeprobe::cli {

// One command of the CLI definition as completion sees it: "edgeprobe lab run", the
// subcommands under it and the flags it takes (short and long, hidden ones left out).
struct CommandShape {
  std::string path;
  std::vector<std::string> subcommands;
  std::vector<std::string> flags;
};
// Every visible command from the root down, the root first, each before its subcommands.
std::vector<CommandShape> command_shapes(const CLI::App& root);

// The completion script for `shell` (bash or zsh), generated from command_shapes: a
// subcommand after a command, a flag after a dash, else files.
std::string completion_script(const std::vector<CommandShape>& commands, const std::string& shell);

// Every visible command's --help, the root first, in one page (--help-all).
std::string help_all(const CLI::App& root);
// What --help-all throws out of the parse: the page, for main to print (exit 0).
struct HelpAllPage {
  std::string text;
};
// --help-all on the root: CLI11's own lists nested subcommands (lab check) without their help.
void add_help_all_flag(CLI::App& app);

// `edgeprobe completion bash|zsh|commands`, hidden from the help: the script for a shell,
// or (commands) one line per command, its path, a tab, then its flags, for tools and tests
// that walk the CLI.
void register_completion(CLI::App& app);

}  // namespace edgeprobe::cli
