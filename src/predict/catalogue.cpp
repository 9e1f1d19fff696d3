#include "predict/catalogue.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>

#include "core/error.h"

namespace edgeprobe::predict::catalogue {
namespace {

using nlohmann::json;

// The data files are a few hundred kB; anything far larger, or nested deeper than the schema
// goes, is not one of them.
constexpr size_t kMaxFileBytes = 16u << 20;
constexpr int kMaxDepth = 16;
constexpr const char* kDevicesSchema = "edgeprobe.predict.devices/1";
constexpr const char* kMeasurementsSchema = "edgeprobe.predict.measurements/1";

std::string one_line(std::string s) {
  std::replace_if(
      s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return s;
}

// Where in which file a check is: errors name both, on one line.
struct Where {
  std::string file, entry;
  Where at(const std::string& more) const { return {file, entry.empty() ? more : entry + "." + more}; }
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    const std::string what = fmt::format(format, std::forward<Args>(args)...);
    throw_bad_input("{}: {}: {}", file, entry.empty() ? "top level" : entry, one_line(what));
  }
};

// Depth of brackets outside strings, so a hostile file cannot drive a deep recursion.
void check_depth(std::string_view text, const std::string& file) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '{' || c == '[') {
      if (++depth > kMaxDepth)
        throw_bad_input("{}: nested deeper than {} levels; not a catalogue file", file, kMaxDepth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
}

json parse_text(std::string_view text, const std::string& file) {
  if (text.size() > kMaxFileBytes)
    throw_bad_input("{}: {} bytes, over the {} a catalogue file may hold", file, text.size(), kMaxFileBytes);
  check_depth(text, file);
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    throw_bad_input("{}: not valid JSON (truncated or corrupt?): {}", file, one_line(e.what()));
  }
}

// Every key present is known and every required one is there.
void check_keys(const json& j, const Where& w, std::initializer_list<const char*> required,
                std::initializer_list<const char*> optional = {}) {
  if (!j.is_object()) w.fail("expected an object, found {}", j.type_name());
  for (const char* k : required)
    if (!j.contains(k)) w.fail("missing key '{}'", k);
  for (const auto& [k, v] : j.items()) {
    const auto known = [&](std::initializer_list<const char*> keys) {
      return std::any_of(keys.begin(), keys.end(), [&](const char* x) { return k == x; });
    };
    if (!known(required) && !known(optional)) w.fail("unknown key '{}'", k);
  }
}

std::string req_string(const json& j, const char* key, const Where& w, bool nonempty = true) {
  const json& v = j.at(key);
  if (!v.is_string()) w.fail("'{}' must be a string, found {}", key, v.type_name());
  std::string s = v.get<std::string>();
  if (nonempty && s.empty()) w.fail("'{}' is empty", key);
  return s;
}

std::optional<std::string> opt_string(const json& j, const char* key, const Where& w) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return req_string(j, key, w);
}

double check_range(double v, const char* key, double low_exclusive, double high, const char* unit,
                   const Where& w) {
  if (!std::isfinite(v) || v <= low_exclusive || v > high)
    w.fail("'{}' = {} is outside ({}, {}] {}", key, v, low_exclusive, high, unit);
  return v;
}

std::optional<double> opt_number(const json& j, const char* key, double low_exclusive, double high,
                                 const char* unit, const Where& w) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  const json& v = j.at(key);
  if (!v.is_number()) w.fail("'{}' must be a number ({}) or null, found {}", key, unit, v.type_name());
  return check_range(v.get<double>(), key, low_exclusive, high, unit, w);
}

double req_number(const json& j, const char* key, double low_exclusive, double high, const char* unit,
                  const Where& w) {
  const auto v = opt_number(j, key, low_exclusive, high, unit, w);
  if (!v) w.fail("'{}' must be a number ({}), found null", key, unit);
  return *v;
}

std::optional<int> opt_int(const json& j, const char* key, int low, int high, const Where& w) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  const json& v = j.at(key);
  if (!v.is_number_integer()) w.fail("'{}' must be an integer or null, found {}", key, v.type_name());
  const auto i = v.get<int64_t>();
  if (i < low || i > high) w.fail("'{}' = {} is outside [{}, {}]", key, i, low, high);
  return static_cast<int>(i);
}

int req_int(const json& j, const char* key, int low, int high, const Where& w) {
  const auto v = opt_int(j, key, low, high, w);
  if (!v) w.fail("'{}' must be an integer, found null", key);
  return *v;
}

template <typename Set>
std::string one_of(const json& j, const char* key, const Set& allowed, const Where& w) {
  std::string s = req_string(j, key, w);
  if (std::find(allowed.begin(), allowed.end(), s) == allowed.end())
    w.fail("'{}' = '{}' is not one of: {}", key, s, fmt::join(allowed, ", "));
  return s;
}

Source parse_source(const json& j, const Where& w) {
  check_keys(j, w, {"url", "locator"}, {"repo", "commit", "path"});
  Source s;
  s.url = req_string(j, "url", w);
  s.locator = req_string(j, "locator", w);
  s.repo = opt_string(j, "repo", w).value_or("");
  s.commit = opt_string(j, "commit", w).value_or("");
  s.path = opt_string(j, "path", w).value_or("");
  if (!s.commit.empty() && !std::regex_match(s.commit, std::regex("[0-9a-f]{40}")))
    w.fail("'commit' = '{}' is not a 40-digit hex commit", s.commit);
  if (s.repo.empty() != s.path.empty()) w.fail("'repo' and 'path' go together");
  return s;
}

std::optional<Figure> parse_figure(const json& j, const char* key, double high, const char* unit,
                                   const Where& parent) {
  if (j.at(key).is_null()) return std::nullopt;
  const Where w = parent.at(key);
  const json& f = j.at(key);
  check_keys(f, w, {"value", "source"}, {"note"});
  Figure out;
  out.value = opt_number(f, "value", 0, high, unit, w);
  out.source = parse_source(f.at("source"), w.at("source"));
  out.note = opt_string(f, "note", w).value_or("");
  if (!out.value && out.note.empty()) w.fail("a null 'value' needs a 'note' saying why");
  return out;
}

std::optional<Derived> parse_derived(const json& j, const Where& parent) {
  const json& d = j.at("derived_bandwidth_gbs");
  if (d.is_null()) return std::nullopt;
  const Where w = parent.at("derived_bandwidth_gbs");
  check_keys(d, w, {"value", "formula", "inputs_source", "note"});
  Derived out;
  out.value = req_number(d, "value", 0, 20000, "GB/s", w);
  out.formula = req_string(d, "formula", w);
  out.note = req_string(d, "note", w);
  const json& inputs = d.at("inputs_source");
  if (!inputs.is_array() || inputs.empty()) w.fail("'inputs_source' must be a non-empty list of sources");
  for (size_t i = 0; i < inputs.size(); ++i)
    out.inputs.push_back(parse_source(inputs[i], w.at(fmt::format("inputs_source[{}]", i))));
  return out;
}

Device parse_device(const std::string& key, const json& j, const Where& w) {
  if (!std::regex_match(key, std::regex("[a-z0-9][a-z0-9-]*")))
    w.fail("device key '{}' must be lower-case letters, digits and '-'", key);
  check_keys(j, w, {"name", "aliases", "class", "memory", "cpu", "gpu", "notes"});
  Device d;
  d.key = key;
  d.name = req_string(j, "name", w);
  d.device_class = one_of(j, "class", device_classes(), w);
  d.notes = opt_string(j, "notes", w).value_or("");
  const json& aliases = j.at("aliases");
  if (!aliases.is_array()) w.fail("'aliases' must be a list of strings");
  for (const json& a : aliases) {
    if (!a.is_string() || a.get<std::string>().empty()) w.fail("'aliases' must hold non-empty strings");
    d.aliases.push_back(a.get<std::string>());
  }
  const Where wm = w.at("memory");
  const json& m = j.at("memory");
  check_keys(m, wm, {"bandwidth_gbs", "size_gb", "type", "derived_bandwidth_gbs"});
  d.bandwidth_gbs = parse_figure(m, "bandwidth_gbs", 20000, "GB/s", wm);
  d.size_gb = parse_figure(m, "size_gb", 4096, "GB", wm);
  d.memory_type = opt_string(m, "type", wm).value_or("");
  d.derived_bandwidth_gbs = parse_derived(m, wm);
  if (const json& c = j.at("cpu"); !c.is_null()) {
    const Where wc = w.at("cpu");
    check_keys(c, wc, {"clusters", "source"}, {"note"});
    Cpu cpu;
    if (!c.at("clusters").is_array() || c.at("clusters").empty())
      wc.fail("'clusters' must be a non-empty list");
    for (size_t i = 0; i < c.at("clusters").size(); ++i) {
      const Where wk = wc.at(fmt::format("clusters[{}]", i));
      const json& k = c.at("clusters")[i];
      check_keys(k, wk, {"core", "count", "max_ghz"});
      cpu.clusters.push_back({req_string(k, "core", wk), req_int(k, "count", 1, 1024, wk),
                              opt_number(k, "max_ghz", 0, 10, "GHz", wk)});
    }
    cpu.source = parse_source(c.at("source"), wc.at("source"));
    cpu.note = opt_string(c, "note", wc).value_or("");
    d.cpu = std::move(cpu);
  }
  if (const json& g = j.at("gpu"); !g.is_null()) {
    const Where wg = w.at("gpu");
    check_keys(g, wg, {"name", "cores", "source"}, {"note"});
    d.gpu = Gpu{req_string(g, "name", wg), opt_int(g, "cores", 1, 1000000, wg),
                parse_source(g.at("source"), wg.at("source")), opt_string(g, "note", wg).value_or("")};
  }
  return d;
}

Measurement parse_measurement(const json& j, const Where& w) {
  check_keys(j, w,
             {"id", "device", "backend", "threads", "n_gpu_layers", "model", "quant", "test", "phase",
              "tokens_per_s", "llama_cpp_build", "date", "source", "notes", "split"});
  Measurement m;
  m.id = req_string(j, "id", w);
  const Where wi = Where{w.file, m.id};
  m.device = req_string(j, "device", wi);
  m.backend = one_of(j, "backend", backends(), wi);
  m.threads = opt_int(j, "threads", 1, 4096, wi);
  m.n_gpu_layers = opt_int(j, "n_gpu_layers", 0, 1000, wi);
  const json& model = j.at("model");
  check_keys(model, wi.at("model"), {"name", "params_b", "file_gib"});
  m.model.name = req_string(model, "name", wi.at("model"));
  m.model.params_b = req_number(model, "params_b", 0, 10000, "billion parameters", wi.at("model"));
  m.model.file_gib = opt_number(model, "file_gib", 0, 10000, "GiB", wi.at("model"));
  m.quant = req_string(j, "quant", wi);
  m.test = req_string(j, "test", wi);
  std::smatch test_match;
  if (!std::regex_match(m.test, test_match, std::regex("(pp|tg)([0-9]+|_avg)?")))
    wi.fail("'test' = '{}' is not pp<N>, tg<N>, pp, tg, pp_avg or tg_avg", m.test);
  m.phase = one_of(j, "phase", std::vector<std::string>{"prefill", "decode"}, wi);
  if ((test_match[1] == "pp") != (m.phase == "prefill"))
    wi.fail("'phase' = '{}' does not match test '{}'", m.phase, m.test);
  m.tokens_per_s = req_number(j, "tokens_per_s", 0, 1e7, "tokens/s", wi);
  m.llama_cpp_build = opt_string(j, "llama_cpp_build", wi);
  m.date = opt_string(j, "date", wi);
  if (m.date && !std::regex_match(*m.date, std::regex("[0-9]{4}-[0-9]{2}(-[0-9]{2})?")))
    wi.fail("'date' = '{}' is not YYYY-MM or YYYY-MM-DD", *m.date);
  m.source = parse_source(j.at("source"), wi.at("source"));
  m.notes = opt_string(j, "notes", wi).value_or("");
  m.split = one_of(j, "split", std::vector<std::string>{"fit", "validation"}, wi);
  return m;
}

std::string read_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw_bad_input("{}: cannot read: {}", path.string(), ec.message());
  if (size > kMaxFileBytes)
    throw_bad_input("{}: {} bytes, over the {} a catalogue file may hold", path.string(), size,
                    kMaxFileBytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_bad_input("{}: cannot open", path.string());
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

const std::vector<std::string>& device_classes() {
  static const std::vector<std::string> kClasses = {"arm-phone",  "arm-board",   "apple-m",
                                                    "jetson",     "x86-client",  "x86-workstation",
                                                    "x86-server", "discrete-gpu"};
  return kClasses;
}

const std::vector<std::string>& backends() {
  static const std::vector<std::string> kBackends = {"cpu",    "cuda", "metal", "vulkan",
                                                     "opencl", "rocm", "sycl"};
  return kBackends;
}

std::map<std::string, Device> parse_devices(std::string_view text, std::string_view file) {
  const Where w{std::string(file), ""};
  const json doc = parse_text(text, w.file);
  check_keys(doc, w, {"schema", "description", "devices"});
  if (req_string(doc, "schema", w) != kDevicesSchema) w.fail("'schema' must be '{}'", kDevicesSchema);
  const json& devices = doc.at("devices");
  if (!devices.is_object() || devices.empty()) w.fail("'devices' must be a non-empty object keyed by device");
  std::map<std::string, Device> out;
  for (const auto& [key, value] : devices.items())
    out.emplace(key, parse_device(key, value, Where{w.file, key}));
  // An alias must name one device only, or a lookup could not tell which.
  std::map<std::string, std::string> names;
  for (const auto& [key, d] : out) {
    for (const std::string& n : d.aliases) {
      const auto [it, fresh] = names.emplace(lower(n), key);
      if (!fresh && it->second != key) Where{w.file, key}.fail("alias '{}' also names '{}'", n, it->second);
    }
  }
  return out;
}

std::vector<Measurement> parse_measurements(std::string_view text, std::string_view file,
                                            std::string* split_rule) {
  const Where w{std::string(file), ""};
  const json doc = parse_text(text, w.file);
  check_keys(doc, w, {"schema", "description", "split_rule", "measurements"});
  if (req_string(doc, "schema", w) != kMeasurementsSchema)
    w.fail("'schema' must be '{}'", kMeasurementsSchema);
  if (split_rule) *split_rule = req_string(doc, "split_rule", w);
  const json& list = doc.at("measurements");
  if (!list.is_array() || list.empty()) w.fail("'measurements' must be a non-empty list");
  std::vector<Measurement> out;
  std::set<std::string> ids;
  for (size_t i = 0; i < list.size(); ++i) {
    const json& item = list[i];
    const std::string entry = item.is_object() && item.contains("id") && item.at("id").is_string()
                                  ? item.at("id").get<std::string>()
                                  : fmt::format("measurements[{}]", i);
    out.push_back(parse_measurement(item, Where{w.file, entry}));
    if (!ids.insert(out.back().id).second) Where{w.file, entry}.fail("duplicate id");
  }
  return out;
}

Catalogue load(const std::filesystem::path& devices_json, const std::filesystem::path& measurements_json) {
  Catalogue c;
  c.devices = parse_devices(read_file(devices_json), devices_json.string());
  c.measurements =
      parse_measurements(read_file(measurements_json), measurements_json.string(), &c.split_rule);
  for (const Measurement& m : c.measurements)
    if (!c.devices.count(m.device))
      throw_bad_input("{}: {}: device '{}' is not in {}", measurements_json.string(), m.id, m.device,
                      devices_json.string());
  return c;
}

std::vector<std::string> nearest_names(const Catalogue& catalogue, std::string_view name, size_t count) {
  const std::string wanted = lower(name);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& [key, d] : catalogue.devices) {
    size_t best = edit_distance(wanted, lower(key));
    for (const std::string& a : d.aliases) best = std::min(best, edit_distance(wanted, lower(a)));
    scored.emplace_back(best, key);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < count; ++i) out.push_back(scored[i].second);
  return out;
}

const Device& find_device(const Catalogue& catalogue, std::string_view name) {
  const std::string wanted = lower(name);
  for (const auto& [key, d] : catalogue.devices) {
    if (key == wanted) return d;
    for (const std::string& a : d.aliases)
      if (lower(a) == wanted) return d;
  }
  throw_bad_input("unknown device '{}'; nearest: {}", name, fmt::join(nearest_names(catalogue, name), ", "));
}

}  // namespace edgeprobe::predict::catalogue
