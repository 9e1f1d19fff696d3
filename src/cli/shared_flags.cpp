#include "cli/shared_flags.h"

#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "cli/cli_errors.h"
#include "core/error.h"
#include "core/text.h"
#include "store/store.h"
#include "report/formats.h"

namespace edgeprobe::cli {

std::string format_list(const Formats& formats) { return report::format_list(formats.names); }

void add_output_options(CLI::App* cmd, OutputFlags& flags, const Formats& formats, const std::string& what) {
  const auto& names = formats.names;
  if (std::find(names.begin(), names.end(), flags.format) == names.end()) flags.format = names.at(0);
  const bool has_md = std::find(names.begin(), names.end(), "md") != names.end();
  std::string help = "Output format: " + format_list(formats);
  if (has_md) help += " (text: md's old name, still accepted)";
  // A transform, not a check: it may rewrite `text` to `md`, so the command sees one name.
  CLI::Validator known(
      [formats, has_md](std::string& value) -> std::string {
        if (has_md && value == "text") value = "md";
        if (std::find(formats.names.begin(), formats.names.end(), value) != formats.names.end()) return "";
        if (value == "-") return "-o is the output format (" + format_list(formats) + "); stdout is --output -";
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
  const std::string where = flags.file.empty() ? "instead of stdout" : "(default: " + flags.file + ")";
  cmd->add_option("--output", flags.file,
                  "Write " + what + " to FILE " + where + "; '-' is stdout; a run that fails leaves FILE as it was")
      ->type_name("FILE")
      ->check(not_a_format);
  cmd->add_flag(formats.short_quiet ? "-q,--quiet" : "--quiet", flags.quiet,
                "No progress or notes on stderr (errors still show)");
}

CLI::Validator one_of(const std::vector<std::string>& names, const std::string& what) {
  return CLI::Validator(
      [names, what](std::string& value) -> std::string {
        if (std::find(names.begin(), names.end(), value) != names.end()) return "";
        const std::string near = nearest_word(value, names);
        return "unknown " + what + " '" + one_line(value, 80) + "'" +
               (near.empty() ? "" : "; did you mean '" + near + "'?") + " (" + what + "s: " + format_list({names}) +
               ")";
      },
      "");
}

void add_gpu_options(CLI::App* cmd, GpuFlags& flags) {
  cmd->add_option("--n-gpu-layers", flags.n_gpu_layers, "Layers to offload to a GPU, -1 = all (alias -ngl; docs/gpu.md)")
      ->check(CLI::Range(-1, 100000))
      ->capture_default_str();
  cmd->add_option("--device", flags.devices, "GPU devices joined by '/', or none (alias -dev; default: llama.cpp's choice)");
  cmd->add_option("--no-op-offload", flags.no_op_offload, "1 keeps ops with weights in host memory off the GPU (alias -nopo)")
      ->check(CLI::IsMember({"0", "1"}))
      ->capture_default_str();
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

// Why `file` cannot be written through `temp` beside it, from the open(2) that fails: the
// file itself first (permission, a read-only filesystem), then the temporary file. ""
// when both open.
std::string unwritable_reason(const std::string& file, const std::string& temp) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(file, ec)) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CLOEXEC);  // no O_TRUNC: nothing changes yet
    if (fd < 0) return std::strerror(errno);
    ::close(fd);
  }
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd >= 0) {
    ::close(fd);
    return "";
  }
  const int err = errno;
  const fs::path dir = fs::absolute(file, ec).parent_path();
  if (err == ENOENT && !fs::is_directory(dir, ec)) return fmt::format("its directory '{}' does not exist", dir.string());
  // procfs and sysfs: the file is there, but no file can be made beside it.
  if (err == ENOENT) return fmt::format("'{}' takes no new files (it is written as '{}', then renamed)", dir.string(), temp);
  return fmt::format("cannot create '{}' beside it: {}", temp, std::strerror(err));
}

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
  // Not probed in place: a FIFO opened and closed would send its reader an end of file.
  if (!in_place)
    if (const std::string why = unwritable_reason(file_, temp_); !why.empty())
      throw_bad_input("cannot write --output '{}': {}", file_, why);
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
