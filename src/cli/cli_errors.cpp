#include "cli/cli_errors.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>

#include "cli/shared_flags.h"
#include "core/text.h"

namespace edgeprobe::cli {

std::string command_path(const CLI::App& cmd) {
  std::string path = cmd.get_parent() ? cmd.get_name() : "edgeprobe";
  for (const CLI::App* p = cmd.get_parent(); p; p = p->get_parent())
    path = (p->get_parent() ? p->get_name() : "edgeprobe") + " " + path;
  return path;
}

std::vector<std::string> flag_names(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt->get_group().empty()) continue;
    for (const auto& s : opt->get_snames()) names.push_back("-" + s);
    for (const auto& l : opt->get_lnames()) names.push_back("--" + l);
  }
  return names;
}

const CLI::App& deepest_parsed(const CLI::App& root) {
  const CLI::App* cmd = &root;
  for (auto subs = cmd->get_subcommands(); !subs.empty(); subs = cmd->get_subcommands()) cmd = subs.front();
  return *cmd;
}

namespace {

bool looks_like_flag(const std::string& arg) {
  return arg.size() > 1 && arg[0] == '-' && !std::isdigit(static_cast<unsigned char>(arg[1])) && arg[1] != '.';
}

std::vector<const CLI::App*> visible_subcommands(const CLI::App& cmd) {
  return cmd.get_subcommands([](const CLI::App* sub) { return !sub->get_group().empty(); });
}

std::string names_list(const std::vector<const CLI::App*>& subs) {
  std::vector<std::string> names;
  for (const CLI::App* s : subs) names.push_back(s->get_name());
  return format_list({names});
}

const CLI::Option* required_missing(const CLI::App& cmd) {
  for (const CLI::Option* opt : cmd.get_options())
    if (opt->get_required() && opt->count() == 0 && opt->nonpositional()) return opt;
  return nullptr;
}

// `typed`: the subcommand the command line reached, asked first whether the flag is its.
std::string unknown_flag(const CLI::App& cmd, const std::string& arg, const CLI::App& typed) {
  const std::string flag = arg.substr(0, arg.find('='));
  const std::string path = command_path(cmd);
  std::string line = "unknown flag '" + one_line(flag, 80) + "' for '" + path + "'";
  const std::string near = nearest_word(flag, flag_names(cmd));
  if (!near.empty()) return line + "; did you mean '" + near + "'?";
  // A subcommand's flag typed before the subcommand.
  std::vector<const CLI::App*> subs = visible_subcommands(cmd);
  if (&typed != &cmd) subs.insert(subs.begin(), &typed);
  for (const CLI::App* sub : subs) {
    const auto names = flag_names(*sub);
    if (std::find(names.begin(), names.end(), flag) != names.end())
      return line + "; it is a flag of '" + command_path(*sub) + "': put it after the subcommand";
  }
  return line;
}

std::string stray_argument(const CLI::App& cmd, const std::string& arg) {
  const std::string path = command_path(cmd);
  const std::string shown = one_line(arg, 80);
  const auto subs = visible_subcommands(cmd);
  if (!subs.empty()) {
    std::vector<std::string> names;
    for (const CLI::App* s : subs) names.push_back(s->get_name());
    const std::string near = nearest_word(arg, names);
    return "unknown subcommand '" + shown + "' for '" + path + "'" +
           (near.empty() ? "; the subcommands are " + names_list(subs) : "; did you mean '" + near + "'?");
  }
  if (const CLI::Option* flag = required_missing(cmd))
    return "'" + shown + "' is not a flag's value: use " + flag->get_name() + " " + shell_quote(arg);
  // A model file where the command takes -m.
  const auto flags = flag_names(cmd);
  if (arg.ends_with(".gguf") && std::find(flags.begin(), flags.end(), "-m") != flags.end())
    return "'" + shown + "' is not a flag's value: use -m " + shell_quote(arg);
  return "unexpected argument '" + shown + "' for '" + path + "' (a value needs its flag)";
}

// Each place `opt` was given in `args`, with its value: "'--repetitions 1' and '-r 1'".
std::string occurrences(const CLI::Option& opt, const std::vector<std::string>& args) {
  std::vector<std::string> names;
  for (const auto& s : opt.get_snames()) names.push_back("-" + s);
  for (const auto& l : opt.get_lnames()) names.push_back("--" + l);
  std::vector<std::string> found;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string name = args[i].substr(0, args[i].find('='));
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;
    const bool with_value = name == args[i] && opt.get_items_expected_max() > 0 && i + 1 < args.size();
    found.push_back("'" + one_line(args[i] + (with_value ? " " + args[i + 1] : ""), 60) + "'");
  }
  std::string out;
  for (size_t i = 0; i < found.size(); ++i) out += (i == 0 ? "" : i + 1 == found.size() ? " and " : ", ") + found[i];
  return out;
}

std::string duplicate_flag(const CLI::App& cmd, const std::string& name, const std::vector<std::string>& args) {
  for (const CLI::App* c = &cmd; c; c = c->get_parent())
    for (const CLI::Option* opt : c->get_options())
      if (opt->get_name() == name) {
        const std::string given = occurrences(*opt, args);
        return opt->get_name(false, true) + " takes one value but was given more than once" +
               (given.empty() ? "" : " (" + given + ")") + ": give it once";
      }
  return "";
}

// The command whose arguments no option or subcommand took, the deepest first (a flag
// given before its subcommand stays with the root); the deepest parsed when none.
const CLI::App& command_with_extras(const CLI::App& root) {
  for (const CLI::App* c = &deepest_parsed(root); c; c = c->get_parent())
    if (!c->remaining(false).empty()) return *c;
  return deepest_parsed(root);
}

std::string explain(const CLI::App& root, const CLI::ParseError& error, const std::vector<std::string>& args) {
  const CLI::App& cmd = command_with_extras(root);
  // Arguments no option or subcommand took are the cause of most other errors ("A
  // subcommand is required" for a misspelt one, "--plan is required" for a bare file).
  const std::vector<std::string> extras = cmd.remaining(false);
  for (const std::string& arg : extras)
    if (looks_like_flag(arg)) return unknown_flag(cmd, arg, deepest_parsed(root));
  if (!extras.empty()) return stray_argument(cmd, extras.front());

  const std::string what = error.what();
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error)) {
    const auto at = what.find(": At Most ");
    if (at != std::string::npos) {
      const std::string line = duplicate_flag(cmd, what.substr(0, at), args);
      if (!line.empty()) return line;
    }
  }
  if (dynamic_cast<const CLI::ExcludesError*>(&error)) {
    const auto at = what.find(" excludes ");
    if (at != std::string::npos)
      return what.substr(0, at) + " and " + what.substr(at + 10) + " cannot be given together: choose one";
  }
  if (dynamic_cast<const CLI::RequiredError*>(&error) && what.find("ubcommand") != std::string::npos) {
    const auto subs = visible_subcommands(cmd);
    if (!subs.empty()) return "'" + command_path(cmd) + "' needs a subcommand: " + names_list(subs);
  }
  return what;
}

}  // namespace

std::string explain_parse_error(const CLI::App& root, const CLI::ParseError& error,
                                const std::vector<std::string>& args) {
  return one_line(explain(root, error, args), 400) + " (see '" + command_path(command_with_extras(root)) + " --help')";
}

}  // namespace edgeprobe::cli
