#include "cli/shared_flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "core/error.h"
#include "store/store.h"

namespace edgeprobe::cli {

std::string format_list(const Formats& formats) {
  std::string out;
  for (size_t i = 0; i < formats.names.size(); ++i) {
    if (i > 0) out += i + 1 == formats.names.size() ? " or " : ", ";
    out += formats.names[i];
  }
  return out;
}

void add_output_options(CLI::App* cmd, OutputFlags& flags, const Formats& formats) {
  const auto& names = formats.names;
  if (std::find(names.begin(), names.end(), flags.format) == names.end()) flags.format = names.at(0);
  std::string help = "Output format: " + format_list(formats);
  if (formats.text_alias) help += " (text: md's old name, still accepted)";
  // A transform, not a check: it may rewrite `text` to `md`, so the command sees one name.
  CLI::Validator known(
      [formats](std::string& value) -> std::string {
        if (formats.text_alias && value == "text") value = "md";
        if (std::find(formats.names.begin(), formats.names.end(), value) != formats.names.end()) return "";
        return "unknown output format '" + value + "'; use " + format_list(formats);
      },
      "");
  cmd->add_option("-o,--output-format", flags.format, help)
      ->transform(known)
      ->type_name("FORMAT")
      ->capture_default_str();
  // `--output json` meant as the format would silently write a file named json.
  CLI::Validator not_a_format(
      [formats](std::string& value) -> std::string {
        if (std::find(formats.names.begin(), formats.names.end(), value) == formats.names.end()) return "";
        return "a file, not a format: for the format use -o " + value + " (a file of that name: ./" + value +
               ")";
      },
      "");
  add_output_file_option(cmd, flags.file, "the results", "stdout")->check(not_a_format);
}

CLI::Option* add_output_file_option(CLI::App* cmd, std::string& file, const std::string& what,
                                    const std::string& default_text) {
  const std::string where =
      default_text == "stdout" ? " instead of stdout" : " (default: " + default_text + "; '-': stdout)";
  return cmd
      ->add_option("--output", file,
                   "Write " + what + " to FILE" + where + "; a run that fails leaves FILE as it was")
      ->type_name("FILE");
}

CLI::Option* add_db_option(CLI::App* cmd, std::string& db, const std::string& default_text) {
  const std::string fallback =
      default_text.empty()
          ? "$XDG_DATA_HOME/edgeprobe/results.db, ~/.local/share/edgeprobe/results.db without it"
          : default_text;
  return cmd
      ->add_option("--db", db,
                   "Results store: a SQLite file (path or sqlite:PATH) or a PostgreSQL URL postgresql://... "
                   "(default: " +
                       fallback + ")")
      ->type_name("PATH|URL");
}

std::string resolve_db_path(const std::string& db_option) {
  return db_option.empty() ? store::default_db_path() : db_option;
}

namespace {

bool is_stdout(const std::string& file) { return file.empty() || file == "-"; }

}  // namespace

OutputTarget::OutputTarget(const std::string& file) : file_(file), to_file_(!is_stdout(file)) {
  if (!to_file_) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto status = fs::status(file_, ec);
  if (fs::is_directory(status)) throw_bad_input("cannot write --output '{}': it is a directory", file_);
  // A device or a pipe cannot be replaced by a rename (and must not be): written in place.
  const bool in_place = fs::exists(status) && !fs::is_regular_file(status);
  temp_ = in_place ? file_ : file_ + ".tmp";
  out_.open(temp_, std::ios::binary | std::ios::trunc);
  if (!out_) throw_bad_input("cannot write --output '{}': {}", file_, std::strerror(errno));
  if (in_place) temp_.clear();
}

OutputTarget::~OutputTarget() {
  if (!to_file_ || committed_ || temp_.empty()) return;
  out_.close();
  std::remove(temp_.c_str());
}

std::ostream& OutputTarget::stream() { return to_file_ ? static_cast<std::ostream&>(out_) : std::cout; }

void OutputTarget::commit() {
  if (!to_file_) {
    if (!std::cout.flush()) throw_environment("cannot write to stdout");
    return;
  }
  out_.flush();
  const bool written = static_cast<bool>(out_);
  out_.close();
  if (!written || out_.fail()) throw_environment("cannot write --output '{}' (disk full?)", file_);
  if (!temp_.empty() && std::rename(temp_.c_str(), file_.c_str()) != 0)
    throw_environment("cannot write --output '{}': {}", file_, std::strerror(errno));
  committed_ = true;
}

void write_output(const std::string& file, const std::string& text) {
  OutputTarget target(file);
  target.stream() << text;
  target.commit();
}

}  // namespace edgeprobe::cli
