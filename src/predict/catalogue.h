#pragma once
// The device catalogue and the published measurements behind `predict` for a device it has
// not probed (issue 47): data/predict/devices.json and data/predict/measurements.json, whose
// schema data/predict/README.md describes. This reader is strict where the lenient
// core/json_read.h is not: a file that holds an unknown key, a figure without its source, a
// wrong type or an impossible unit is refused whole, with one line naming the file and the
// entry, so a bad edit to the data cannot turn into a silent change of every prediction.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edgeprobe::predict::catalogue {

// Where a figure was read: a page (url) or a repository file (repo, commit, path), and which
// table, row or sentence of it (locator).
struct Source {
  std::string url, locator, repo, commit, path;
};

// A spec figure as a source states it; value empty where the source gives only part of it.
struct Figure {
  std::optional<double> value;
  Source source;
  std::string note;
};

// A figure computed from a source's inputs (rate x bus width), never mixed with read ones.
struct Derived {
  double value = 0;
  std::string formula, note;
  std::vector<Source> inputs;
};

struct Cluster {
  std::string core;
  int count = 0;
  std::optional<double> max_ghz;
};

struct Cpu {
  std::vector<Cluster> clusters;
  Source source;
  std::string note;
};

struct Gpu {
  std::string name;
  std::optional<int> cores;
  Source source;
  std::string note;
};

struct Device {
  std::string key, name, device_class, notes, memory_type;
  std::vector<std::string> aliases;
  std::optional<Figure> bandwidth_gbs, size_gb;
  std::optional<Derived> derived_bandwidth_gbs;
  std::optional<Cpu> cpu;
  std::optional<Gpu> gpu;
};

struct Model {
  std::string name;
  double params_b = 0;
  std::optional<double> file_gib;
};

struct Measurement {
  std::string id, device, backend, quant, test, phase, split, notes;
  std::optional<int> threads, n_gpu_layers;
  Model model;
  double tokens_per_s = 0;
  std::optional<std::string> llama_cpp_build, date;
  Source source;
};

struct Catalogue {
  std::map<std::string, Device> devices;  // by key
  std::vector<Measurement> measurements;  // in file order
  std::string split_rule;
};

// The device classes and backends the files may name.
const std::vector<std::string>& device_classes();
const std::vector<std::string>& backends();

// Parse one file's text; `file` names it in errors. Throws edgeprobe::Error (bad input).
std::map<std::string, Device> parse_devices(std::string_view text, std::string_view file);
std::vector<Measurement> parse_measurements(std::string_view text, std::string_view file,
                                            std::string* split_rule = nullptr);

// Both files, checked against each other (every measurement names a catalogued device).
Catalogue load(const std::filesystem::path& devices_json, const std::filesystem::path& measurements_json);

// A device by key or alias, case-insensitive; an unknown name is refused with the nearest
// keys and aliases suggested.
const Device& find_device(const Catalogue& catalogue, std::string_view name);
std::vector<std::string> nearest_names(const Catalogue& catalogue, std::string_view name, size_t count = 3);

}  // namespace edgeprobe::predict::catalogue
