#pragma once
#include <fstream>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/context_defaults.h"

namespace CLI {
class App;
class Option;
class Validator;
}  // namespace CLI

namespace edgeprobe::cli {

// What a subcommand prints: -o FORMAT, --output FILE and -q, declared by
// add_output_options so every subcommand spells, checks and documents them the same way.
struct OutputFlags {
  std::string format = "md";
  std::string file;    // "" or "-" = stdout; a subcommand may start it at its default file
  bool quiet = false;  // no progress or notes on stderr (errors always show)
};

// The formats a subcommand writes. Where md is one, `text` is accepted for it: several
// subcommands called their human-readable format `text` before it was `md`.
struct Formats {
  std::vector<std::string> names;
  // false where -q means something else (predict: its quantizations); --quiet stays.
  bool short_quiet = true;
};

// "md, csv, json or jsonl", as help and errors list them.
std::string format_list(const Formats& formats);

// -o,--output-format FORMAT, by default flags.format as given, else the first of
// `formats` (checked while parsing: an unknown one is one line, exit 2, before anything
// runs; `text` becomes `md`); --output FILE ('-': stdout; without it flags.file as given,
// stdout when empty); -q,--quiet. `what` names the output in the help ("the HTML page").
void add_output_options(CLI::App* cmd, OutputFlags& flags, const Formats& formats,
                        const std::string& what = "the results");

// The check of a flag that takes one of `names` (`what` names one: "kind"): anything else
// is one line, exit 2, listing them and the nearest to what was typed.
CLI::Validator one_of(const std::vector<std::string>& names, const std::string& what);

// GPU offload of a subcommand that runs one configuration (doctor, session, kv-serve):
// -ngl/--n-gpu-layers, -dev/--device, -nopo/--no-op-offload, single values as llama.cpp
// takes them (bench's, sweepable lists, are its own).
struct GpuFlags {
  int n_gpu_layers = kDefaultGpuLayers;  // -1 = all (llama-bench's default)
  std::string devices;         // "" llama.cpp's choice, "none", or names joined by '/'
  std::string no_op_offload = "0";
  bool op_offload() const { return no_op_offload != "1"; }
};
void add_gpu_options(CLI::App* cmd, GpuFlags& flags);

// --db, one help text for every subcommand. `default_text` says what happens without it
// where that is not the per-user store (run: "not stored").
CLI::Option* add_db_option(CLI::App* cmd, std::string& db, const std::string& default_text = "");
// --db as given, else the per-user default store (store::default_db_path).
std::string resolve_db_path(const std::string& db_option);

// Where rendered output goes: stdout, or FILE written whole. The file is written as
// FILE.tmp, opened at once (an unwritable path fails in a second, exit 2, before any
// measuring) and renamed over FILE by commit(); a render that throws before commit
// leaves FILE as it was and no FILE.tmp. A FILE that is not a regular file (/dev/stdout,
// a pipe) is written in place.
class OutputTarget {
 public:
  explicit OutputTarget(const std::string& file);
  ~OutputTarget();
  OutputTarget(const OutputTarget&) = delete;
  OutputTarget& operator=(const OutputTarget&) = delete;

  std::ostream& stream();
  // Flushes and puts the file in place; a write that failed (disk full) throws, exit 3.
  void commit();

 private:
  std::string file_, temp_;
  std::ofstream out_;
  bool to_file_ = false, committed_ = false;
};

// The whole rendered text to stdout or --output FILE, as OutputTarget writes it.
void write_output(const std::string& file, const std::string& text);

}  // namespace edgeprobe::cli
