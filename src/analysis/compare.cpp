#include "analysis/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <tuple>

#include "core/stats.h"

namespace edgeprobe::analysis {
namespace {

double median_of(std::span<const double> xs) { return stats::quantile(xs, 0.5); }

// Probability of each U under the null for sample sizes m and n, from the coefficients
// of the Gaussian binomial [m+n choose m]_q = prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i).
std::vector<double> exact_u_distribution(size_t m, size_t n) {
  std::vector<double> c(m * n + 1, 0.0);
  c[0] = 1;
  for (size_t i = 1; i <= m; ++i) {
    for (size_t k = c.size(); k-- > n + i;) c[k] -= c[k - (n + i)];  // * (1 - q^(n+i))
    for (size_t k = i; k < c.size(); ++k) c[k] += c[k - i];          // / (1 - q^i), exact
  }
  double total = 0;
  for (double& v : c) total += (v = std::max(0.0, v));
  for (double& v : c) v /= total;
  return c;
}

std::string value_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// Long identifiers (SHA-256, commits) are cut to 12 characters unless that would hide
// where they differ.
std::pair<std::string, std::string> shorten_pair(const std::string& a, const std::string& b) {
  constexpr size_t kShort = 12, kLong = 80;
  auto cut = [](const std::string& s, size_t len) { return s.size() > len ? s.substr(0, len) + "…" : s; };
  if (a.substr(0, kShort) != b.substr(0, kShort)) return {cut(a, kShort + 4), cut(b, kShort + 4)};
  return {cut(a, kLong), cut(b, kLong)};
}

// Numeric fields that label a sample rather than measure it.
bool is_label_field(const std::string& key) {
  static const char* const kLabels[] = {"ordinal", "repetition", "round", "turn", "turn_index", "index", "seed", "start_ns", "end_ns"};
  return std::any_of(std::begin(kLabels), std::end(kLabels), [&](const char* l) { return key == l; });
}

void add_numeric_fields(const nlohmann::json& object, std::map<std::string, std::vector<double>>& into) {
  if (!object.is_object()) return;
  for (const auto& [key, value] : object.items())
    if (!is_label_field(key) && value.is_number() && std::isfinite(value.get<double>())) into[key].push_back(value.get<double>());
}

// The label of each bench result: its test name, and where several results of the
// document share it (a sweep over threads, several models), the fields that tell them
// apart, so their samples are never pooled: "tg16 (n_threads=1)".
std::vector<std::string> result_labels(const nlohmann::json& results) {
  auto identity = [](const nlohmann::json& r) {
    nlohmann::json id =
        r.is_object() ? r.value("config", nlohmann::json::object()) : nlohmann::json::object();
    if (!id.is_object()) id = nlohmann::json::object();
    if (r.is_object() && r.contains("model_index")) id["model"] = r["model_index"];
    return id;
  };
  std::vector<std::string> names;
  for (size_t i = 0; i < results.size(); ++i) {
    const nlohmann::json& r = results[i];
    names.push_back(r.is_object() && r.contains("test") && r["test"].is_string()
                        ? r["test"].get<std::string>()
                        : fmt::format("result{}", i));
  }
  std::vector<std::string> labels = names;
  for (size_t i = 0; i < results.size(); ++i) {
    const nlohmann::json mine = identity(results[i]);
    std::vector<std::string> differing;
    for (size_t j = 0; j < results.size(); ++j) {
      if (j == i || names[j] != names[i]) continue;
      const nlohmann::json other = identity(results[j]);
      for (const auto& [key, value] : mine.items())
        if ((!other.contains(key) || other[key] != value) &&
            std::find(differing.begin(), differing.end(), key) == differing.end())
          differing.push_back(key);
    }
    std::string suffix;
    for (const std::string& key : differing)
      suffix += (suffix.empty() ? "" : ", ") + key + "=" + value_text(mine[key]);
    if (!suffix.empty()) labels[i] += " (" + suffix + ")";
  }
  return labels;
}

std::string config_label(const nlohmann::json& config, const nlohmann::json& ordinal) {
  if (config.is_object()) {
    for (const char* key : {"test", "name", "label"})
      if (config.contains(key) && config[key].is_string()) return config[key].get<std::string>();
  }
  return fmt::format("config{}", ordinal.is_number() ? ordinal.get<int64_t>() : 0);
}

}  // namespace

MannWhitney mann_whitney(std::span<const double> a, std::span<const double> b) {
  MannWhitney r;
  const size_t m = a.size(), n = b.size();
  if (m == 0 || n == 0) return r;
  // Pool, sort, average ranks over ties.
  std::vector<std::pair<double, int>> pooled;
  pooled.reserve(m + n);
  for (double v : a) pooled.push_back({v, 0});
  for (double v : b) pooled.push_back({v, 1});
  std::sort(pooled.begin(), pooled.end());
  double rank_sum_a = 0, tie_term = 0;
  for (size_t i = 0; i < pooled.size();) {
    size_t j = i;
    while (j < pooled.size() && pooled[j].first == pooled[i].first) ++j;
    const double avg_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;
    const double t = static_cast<double>(j - i);
    tie_term += t * t * t - t;
    for (size_t k = i; k < j; ++k)
      if (pooled[k].second == 0) rank_sum_a += avg_rank;
    i = j;
  }
  const double md = static_cast<double>(m), nd = static_cast<double>(n);
  r.u = rank_sum_a - md * (md + 1) / 2.0;
  if (tie_term == 0 && m <= 50 && n <= 50) {
    const std::vector<double> dist = exact_u_distribution(m, n);
    const auto u = static_cast<size_t>(std::llround(r.u));
    double lower = 0, upper = 0;
    for (size_t k = 0; k <= u; ++k) lower += dist[k];
    for (size_t k = u; k < dist.size(); ++k) upper += dist[k];
    r.p_value = std::min(1.0, 2.0 * std::min(lower, upper));
    r.exact = true;
    return r;
  }
  const double total = md + nd;
  const double mean_u = md * nd / 2.0;
  const double var_u = md * nd / 12.0 * ((total + 1) - tie_term / (total * (total - 1)));
  if (var_u <= 0) return r;  // every value equal: no evidence of a difference
  const double z = std::max(0.0, std::fabs(r.u - mean_u) - 0.5) / std::sqrt(var_u);
  r.p_value = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return r;
}

std::optional<RatioEstimate> compare_samples(std::span<const double> a, std::span<const double> b,
                                             const CompareOptions& options) {
  if (a.empty() || b.empty()) return std::nullopt;
  RatioEstimate e;
  e.n_a = a.size();
  e.n_b = b.size();
  e.median_a = median_of(a);
  e.median_b = median_of(b);
  if (e.median_a == 0) return std::nullopt;
  e.ratio = e.median_b / e.median_a;
  e.confidence = options.confidence;
  // Percentile bootstrap: resample each side independently. mt19937_64 is specified
  // bit for bit by the standard, and the index is drawn with a plain modulo (bias below
  // 1e-15 for these sizes) rather than uniform_int_distribution, whose algorithm is left
  // to the library: the interval is then the same on every platform.
  std::mt19937_64 rng(options.seed);
  std::vector<double> ratios, ra(a.size()), rb(b.size());
  ratios.reserve(static_cast<size_t>(std::max(0, options.bootstrap_iterations)));
  for (int it = 0; it < options.bootstrap_iterations; ++it) {
    for (double& v : ra) v = a[rng() % a.size()];
    for (double& v : rb) v = b[rng() % b.size()];
    const double ma = median_of(ra);
    if (ma != 0) ratios.push_back(median_of(rb) / ma);
  }
  if (!ratios.empty() && a.size() > 1 && b.size() > 1) {
    std::sort(ratios.begin(), ratios.end());
    const double alpha = 1.0 - options.confidence;
    e.ci = Interval{stats::quantile_sorted(ratios, alpha / 2), stats::quantile_sorted(ratios, 1 - alpha / 2)};
  }
  const MannWhitney mw = mann_whitney(a, b);
  e.p_value = mw.p_value;
  e.p_exact = mw.exact;
  return e;
}

std::string Mismatch::message() const {
  auto [sa, sb] = shorten_pair(a, b);
  return fmt::format("{} differs ({} vs {})", label, sa, sb);
}

std::vector<Mismatch> comparability_mismatches(const std::vector<FieldCheck>& fields) {
  std::vector<Mismatch> out;
  for (const FieldCheck& f : fields) {
    if (!f.a && !f.b) continue;
    if (f.a && f.b && *f.a == *f.b) continue;
    out.push_back({f.label, f.a.value_or("(absent)"), f.b.value_or("(absent)")});
  }
  return out;
}

const std::vector<ProvenanceField>& default_comparability_fields() {
  // result/result.h (schema v2): provenance.models[] (one per model file) and the engine.
  // The device is not here: comparing two devices on the same model is the point.
  static const std::vector<ProvenanceField> fields{
      {"model sha256", {"/models/*/sha256", "/model/sha256"}, ""},
      {"quantisation", {"/models/*/quant", "/model/quant"}, ""},
      {"engine", {"/engine/name"}, ""},
      {"engine version", {"/engine/commit", "/llama_cpp/commit", "/engine/version", "/llama_cpp/version"}, ""},
      // How each repetition or turn ran: edgeprobe's own token loop, or one completion
      // request (--api completions|chat, in-process or at an endpoint), whose TTFT also
      // holds the template and the request. Results from before the field ran the loop.
      {"request path", {"/request_path"}, "token"},
  };
  return fields;
}

std::optional<std::string> read_field(const nlohmann::json& object, const std::vector<std::string>& pointers) {
  for (const std::string& pointer : pointers) {
    if (!object.is_object()) return std::nullopt;
    const size_t star = pointer.find("/*");
    if (star == std::string::npos) {
      const nlohmann::json::json_pointer p(pointer);
      if (object.contains(p) && !object.at(p).is_null()) return value_text(object.at(p));
      continue;
    }
    const nlohmann::json::json_pointer array_ptr(pointer.substr(0, star));
    if (!object.contains(array_ptr) || !object.at(array_ptr).is_array()) continue;
    const std::string rest = pointer.substr(star + 2);
    std::string joined;
    bool any = false;
    for (const nlohmann::json& element : object.at(array_ptr)) {
      std::optional<std::string> v;
      if (rest.empty()) {
        v = value_text(element);
      } else if (element.is_object()) {
        v = read_field(element, {rest});
      }
      joined += (any ? "," : "") + v.value_or("(absent)");
      any = true;
    }
    if (any) return joined;
  }
  return std::nullopt;
}

std::vector<FieldCheck> provenance_checks(const nlohmann::json& pa, const nlohmann::json& pb,
                                          const std::vector<ProvenanceField>& fields) {
  std::vector<FieldCheck> checks;
  for (const ProvenanceField& f : fields) {
    auto read = [&](const nlohmann::json& p) {
      auto v = read_field(p, f.pointers);
      return v || f.absent_means.empty() ? v : std::optional<std::string>(f.absent_means);
    };
    checks.push_back({f.label, read(pa), read(pb)});
  }
  return checks;
}

std::optional<std::string> workload_signature(const nlohmann::json& doc) {
  if (!doc.is_object()) return std::nullopt;
  const nlohmann::json provenance = extract_provenance(doc);
  if (provenance.is_object() && provenance.contains("workload")) return value_text(provenance["workload"]);
  nlohmann::json configs = nlohmann::json::array();
  if (doc.contains("results") && doc["results"].is_array()) {
    for (const nlohmann::json& r : doc["results"])
      if (r.is_object()) configs.push_back({{"test", r.value("test", "")}, {"config", r.value("config", nlohmann::json())}});
  } else if (doc.contains("configs") && doc["configs"].is_array()) {
    // A session: the configurations without the model path (the SHA-256 check covers it).
    for (const nlohmann::json& c : doc["configs"]) {
      nlohmann::json config = c.is_object() ? c.value("config", nlohmann::json::object()) : nlohmann::json::object();
      if (config.is_object()) config.erase("model_path");
      configs.push_back(config);
    }
  }
  if (configs.empty()) return std::nullopt;
  return configs.dump();
}

MetricSamples extract_metric_samples(const nlohmann::json& doc) {
  MetricSamples out;
  if (!doc.is_object()) return out;
  // `edgeprobe bench -o json`: {"results": [{"test", "repetitions": [...], "turns": [...]}]}
  if (doc.contains("results") && doc["results"].is_array()) {
    const std::vector<std::string> labels = result_labels(doc["results"]);
    for (size_t i = 0; i < labels.size(); ++i) {
      const nlohmann::json& r = doc["results"][i];
      const std::string& test = labels[i];
      for (const char* series : {"repetitions", "turns"})
        if (r.is_object() && r.contains(series) && r[series].is_array())
          for (const nlohmann::json& rep : r[series]) add_numeric_fields(rep, out[test]);
    }
  }
  // `edgeprobe session -o json` (and a stored session loaded back): {"configs": [{"ordinal",
  // "config", "turns": [...]}]}; each configuration is one "test", its turns the samples.
  if (doc.contains("configs") && doc["configs"].is_array()) {
    for (const nlohmann::json& c : doc["configs"]) {
      if (!c.is_object()) continue;
      const std::string test = config_label(c.value("config", nlohmann::json()), c.value("ordinal", nlohmann::json()));
      for (const nlohmann::json& t : c.value("turns", nlohmann::json::array()))
        if (t.is_object() && !(t.contains("error") && t["error"].is_object())) add_numeric_fields(t, out[test]);
    }
  }
  // Drop tests that ended up with no metrics (error rows).
  for (auto it = out.begin(); it != out.end();) it = it->second.empty() ? out.erase(it) : std::next(it);
  return out;
}

nlohmann::json extract_provenance(const nlohmann::json& doc) {
  if (!doc.is_object()) return nullptr;
  if (doc.contains("provenance")) return doc["provenance"];
  // A doctor result: the provenance of its primary bench run.
  if (doc.contains("doctor") && doc["doctor"].is_object() && doc["doctor"].contains("primary"))
    return extract_provenance(doc["doctor"]["primary"]);
  return nullptr;
}

namespace {
// +1: larger is better (throughput), -1: smaller is better (latency, memory), 0: unknown.
int better_direction(const std::string& metric) {
  if (metric.find("per_s") != std::string::npos) return 1;
  if (metric.ends_with("_ms") || metric.ends_with("_bytes") || metric.ends_with("_j")) return -1;
  return 0;
}
}  // namespace

double significance_level(double confidence) {
  // Rounded: 1 - 0.95 is 0.05000000000000004 in binary, which would let p = 0.05 pass.
  return std::round((1 - confidence) * 1e9) / 1e9;
}

double practical_threshold(const std::string& metric) {
  if (metric.find("per_s") != std::string::npos || metric.ends_with("_ms")) return 0.03;
  if (metric.ends_with("_bytes")) return 0.05;
  if (metric.ends_with("_j")) return 0.10;
  return 0.05;
}

const char* verdict_kind_name(VerdictKind kind) {
  switch (kind) {
    case VerdictKind::kTooFewSamples:
      return "too_few_samples";
    case VerdictKind::kNoDifferenceShown:
      return "no_difference_shown";
    case VerdictKind::kNoPracticalDifference:
      return "no_practical_difference";
    case VerdictKind::kBetter:
      return "better";
    case VerdictKind::kWorse:
      return "worse";
    case VerdictKind::kHigher:
      return "higher";
    case VerdictKind::kLower:
      return "lower";
  }
  return "";
}

Verdict judge(const std::string& metric, const RatioEstimate& e) {
  const std::string n = fmt::format("n={}/{}", e.n_a, e.n_b);
  if (e.n_a < kMinSamplesPerSide || e.n_b < kMinSamplesPerSide)
    return {VerdictKind::kTooFewSamples,
            fmt::format("no difference shown ({}; a verdict needs {} per side)", n, kMinSamplesPerSide),
            fmt::format("fewer than {} samples on a side: the exact test cannot reach p < {:g}",
                        kMinSamplesPerSide, significance_level(e.confidence))};
  const double alpha = significance_level(e.confidence);
  if (!(e.p_value < alpha))
    return {VerdictKind::kNoDifferenceShown, fmt::format("no difference shown ({})", n),
            fmt::format("p = {:.3g}, not below {:g}", e.p_value, alpha)};
  if (!e.ci || e.ci->contains(1.0))
    return {VerdictKind::kNoDifferenceShown, fmt::format("no difference shown ({})", n),
            fmt::format("the {:.0f}% interval of B/A holds 1", 100 * e.confidence)};
  const double threshold = practical_threshold(metric);
  // A hair of slack so that exactly ±threshold (1.03 from 103/100) counts as within it.
  if (std::fabs(e.ratio - 1) <= threshold + 1e-9)
    return {VerdictKind::kNoPracticalDifference,
            fmt::format("no practical difference (within ±{:g} %)", 100 * threshold),
            fmt::format("B/A = {:.3f} is within ±{:g} % of 1", e.ratio, 100 * threshold)};
  const int dir = better_direction(metric);
  if (dir == 0)
    return e.ratio > 1 ? Verdict{VerdictKind::kHigher, "B higher", ""}
                       : Verdict{VerdictKind::kLower, "B lower", ""};
  return (e.ratio > 1) == (dir > 0) ? Verdict{VerdictKind::kBetter, "B better", ""}
                                    : Verdict{VerdictKind::kWorse, "B worse", ""};
}

std::string SettingDifference::text() const {
  // Hashes are cut where they still differ; text with spaces (a CPU name, a feature list)
  // is kept whole up to a line's length.
  const bool identifiers = a.find(' ') == std::string::npos && b.find(' ') == std::string::npos;
  auto cut = [](const std::string& s) { return s.size() > 160 ? s.substr(0, 160) + "…" : s; };
  if (identifiers) {
    auto [sa, sb] = shorten_pair(a, b);
    return fmt::format("{}: {} → {}", label, sa, sb);
  }
  return fmt::format("{}: {} → {}", label, cut(a), cut(b));
}

namespace {

// Provenance fields a person wants to see when they differ; the comparability fields
// (model, quantisation, engine, request path) come first, from the same mapping.
const std::vector<ProvenanceField>& listed_provenance_fields() {
  static const std::vector<ProvenanceField> fields = [] {
    std::vector<ProvenanceField> f;
    for (const ProvenanceField& c : default_comparability_fields())
      if (c.label != "engine version") f.push_back(c);  // split into version and commit below
    const std::vector<ProvenanceField> more{
        {"engine version", {"/engine/version", "/llama_cpp/version"}, ""},
        {"engine commit", {"/engine/commit", "/llama_cpp/commit"}, ""},
        {"engine kind", {"/engine/kind"}, ""},
        {"ggml cpu variant", {"/engine/cpu_variant"}, ""},
        {"endpoint", {"/engine/details/endpoint"}, ""},
        {"server model", {"/engine/details/server_model"}, ""},
        {"edgeprobe version", {"/edgeprobe_version"}, ""},
        {"device id", {"/device/id"}, ""},
        {"device arch", {"/device/arch"}, ""},
        {"device cpu", {"/device/cpu_model"}, ""},
        {"device soc", {"/device/soc"}, ""},
        {"device board", {"/device/board"}, ""},
        {"device os", {"/device/os"}, ""},
        {"device kernel", {"/device/kernel"}, ""},
        {"hostname", {"/device/hostname"}, ""},
        {"emulated", {"/emulated"}, "false"},
    };
    f.insert(f.end(), more.begin(), more.end());
    return f;
  }();
  return fields;
}

// The names a person reads for the configuration fields of result/result.h; others keep
// their own.
std::string config_field_label(const std::string& key) {
  static const std::map<std::string, std::string> kLabels{
      {"n_threads", "threads"},      {"cpu_mask", "cpu mask"},      {"cpu_strict", "cpu strict"},
      {"n_batch", "batch"},          {"n_ubatch", "ubatch"},        {"flash_attn", "flash attn"},
      {"type_k", "KV type K"},       {"type_v", "KV type V"},       {"use_mmap", "mmap"},
      {"n_prompt", "prompt tokens"}, {"n_gen", "generated tokens"}, {"n_depth", "depth"},
      {"n_ctx", "context"}};
  const auto it = kLabels.find(key);
  return it == kLabels.end() ? key : it->second;
}

// An object as "K=V K=V", an empty string as "(empty)".
std::string setting_text(const nlohmann::json& v) {
  if (v.is_object()) {
    std::string out;
    for (const auto& [k, x] : v.items()) out += (out.empty() ? "" : " ") + k + "=" + value_text(x);
    return out.empty() ? "(none)" : out;
  }
  const std::string t = value_text(v);
  return t.empty() ? "(empty)" : t;
}

// Each configuration field's values over the document's tests, in order, without repeats.
std::map<std::string, std::string> config_values(const nlohmann::json& doc) {
  std::vector<nlohmann::json> configs;
  if (doc.is_object() && doc.contains("results") && doc["results"].is_array())
    for (const nlohmann::json& r : doc["results"])
      if (r.is_object() && r.contains("config") && r["config"].is_object()) configs.push_back(r["config"]);
  if (doc.is_object() && doc.contains("configs") && doc["configs"].is_array())
    for (const nlohmann::json& c : doc["configs"])
      if (c.is_object() && c.contains("config") && c["config"].is_object()) configs.push_back(c["config"]);
  std::map<std::string, std::vector<std::string>> seen;
  for (const nlohmann::json& config : configs)
    for (const auto& [key, value] : config.items()) {
      if (key == "model_path") continue;  // the model's SHA-256 is checked instead
      std::vector<std::string>& values = seen[key];
      const std::string t = setting_text(value);
      if (std::find(values.begin(), values.end(), t) == values.end()) values.push_back(t);
    }
  std::map<std::string, std::string> out;
  for (const auto& [key, values] : seen) {
    std::string joined;
    for (const std::string& v : values) joined += (joined.empty() ? "" : ",") + v;
    out[key] = joined;
  }
  return out;
}

}  // namespace

std::vector<SettingDifference> setting_differences(const nlohmann::json& a, const nlohmann::json& b) {
  std::vector<SettingDifference> out;
  const nlohmann::json pa = extract_provenance(a), pb = extract_provenance(b);
  for (const ProvenanceField& f : listed_provenance_fields()) {
    auto read = [&](const nlohmann::json& p) -> std::optional<std::string> {
      if (!p.is_object()) return f.absent_means.empty() ? std::nullopt : std::optional(f.absent_means);
      for (const std::string& pointer : f.pointers) {
        if (pointer.find("/*") != std::string::npos) {
          if (auto v = read_field(p, {pointer})) return v;
          continue;
        }
        const nlohmann::json::json_pointer ptr(pointer);
        if (p.contains(ptr) && !p.at(ptr).is_null()) return setting_text(p.at(ptr));
      }
      return f.absent_means.empty() ? std::nullopt : std::optional(f.absent_means);
    };
    const auto va = read(pa), vb = read(pb);
    if (va != vb) out.push_back({f.label, va.value_or("(absent)"), vb.value_or("(absent)"), false});
    if (f.label == "ggml cpu variant") {
      // The variants' features: only those one side has (zen4 against sse42 is AVX ... on
      // A and none on B), not two long lists that mostly agree.
      const nlohmann::json::json_pointer ptr("/engine/cpu_variant_features");
      auto features = [&](const nlohmann::json& p) {
        std::vector<std::string> on;
        if (p.is_object() && p.contains(ptr) && p.at(ptr).is_object())
          for (const auto& [k, v] : p.at(ptr).items())
            if (value_text(v) != "0" && v != false) on.push_back(k);
        return on;
      };
      const std::vector<std::string> fa = features(pa), fb = features(pb);
      auto only = [](const std::vector<std::string>& xs, const std::vector<std::string>& ys) {
        std::string out;
        for (const std::string& x : xs)
          if (std::find(ys.begin(), ys.end(), x) == ys.end()) out += (out.empty() ? "" : " ") + x;
        return out.empty() ? std::string("(none)") : out;
      };
      if (fa != fb) out.push_back({"ggml cpu features on one side only", only(fa, fb), only(fb, fa), false});
    }
  }
  const auto ca = config_values(a), cb = config_values(b);
  std::vector<std::string> keys;
  for (const auto& [k, _] : ca) keys.push_back(k);
  for (const auto& [k, _] : cb)
    if (!ca.contains(k)) keys.push_back(k);
  for (const std::string& k : keys) {
    const auto ia = ca.find(k), ib = cb.find(k);
    const std::string va = ia == ca.end() ? "(absent)" : ia->second,
                      vb = ib == cb.end() ? "(absent)" : ib->second;
    if (va != vb) out.push_back({config_field_label(k), va, vb, true});
  }
  return out;
}

CompareReport compare_documents(const nlohmann::json& a, const nlohmann::json& b, const CompareOptions& options) {
  CompareReport report;
  std::vector<FieldCheck> checks = provenance_checks(extract_provenance(a), extract_provenance(b));
  checks.push_back({"workload", workload_signature(a), workload_signature(b)});
  report.mismatches = comparability_mismatches(checks);
  report.differences = setting_differences(a, b);
  // The workload signature is a long JSON text; name the configuration fields instead.
  std::string fields_a, fields_b;
  for (const SettingDifference& d : report.differences)
    if (d.configuration) {
      fields_a += (fields_a.empty() ? "" : ", ") + d.label + " " + d.a;
      fields_b += (fields_b.empty() ? "" : ", ") + d.label + " " + d.b;
    }
  for (Mismatch& m : report.mismatches)
    if (m.label == "workload" && !fields_a.empty()) std::tie(m.a, m.b) = std::tie(fields_a, fields_b);
  report.confidence = options.confidence;
  for (const FieldCheck& f : checks)
    if (!f.a && !f.b) report.unverified.push_back(f.label);
  const MetricSamples sa = extract_metric_samples(a), sb = extract_metric_samples(b);
  for (const auto& [test, metrics] : sa) {
    const auto tb = sb.find(test);
    for (const auto& [metric, samples] : metrics) {
      if (tb == sb.end() || !tb->second.contains(metric)) {
        report.only_in_a.push_back(test + "/" + metric);
        continue;
      }
      const std::vector<double>& other = tb->second.at(metric);
      // A metric that is 0 in every sample of both runs was not measured by this test
      // (decode rate of a prefill-only test): leave it out rather than print "n/a".
      auto all_zero = [](const std::vector<double>& xs) {
        return std::all_of(xs.begin(), xs.end(), [](double x) { return x == 0; });
      };
      if (all_zero(samples) && all_zero(other)) continue;
      report.metrics.push_back({test, metric, compare_samples(samples, other, options)});
    }
  }
  // Within a test: throughput first, then time to first token, then the rest by name.
  auto rank = [](const std::string& metric) {
    if (metric.find("tokens_per_s") != std::string::npos) return metric.starts_with("decode") ? 0 : 1;
    return metric == "ttft_ms" ? 2 : 3;
  };
  std::stable_sort(report.metrics.begin(), report.metrics.end(), [&](const auto& x, const auto& y) {
    return std::tuple(x.test, rank(x.metric), x.metric) < std::tuple(y.test, rank(y.metric), y.metric);
  });
  for (const auto& [test, metrics] : sb) {
    const auto ta = sa.find(test);
    for (const auto& [metric, samples] : metrics)
      if (ta == sa.end() || !ta->second.contains(metric)) report.only_in_b.push_back(test + "/" + metric);
  }
  return report;
}

nlohmann::json to_json(const CompareReport& r) {
  using nlohmann::json;
  json j;
  j["comparable"] = r.comparable();
  j["mismatches"] = json::array();
  for (const Mismatch& m : r.mismatches)
    j["mismatches"].push_back({{"field", m.label}, {"a", m.a}, {"b", m.b}, {"message", m.message()}});
  j["differences"] = json::array();
  for (const SettingDifference& d : r.differences)
    j["differences"].push_back({{"setting", d.label},
                                {"a", d.a},
                                {"b", d.b},
                                {"kind", d.configuration ? "configuration" : "provenance"},
                                {"text", d.text()}});
  j["unverified"] = r.unverified;
  j["metrics"] = json::array();
  for (const MetricComparison& m : r.metrics) {
    json mj{{"test", m.test}, {"metric", m.metric}};
    if (m.estimate) {
      const RatioEstimate& e = *m.estimate;
      const Verdict v = judge(m.metric, e);
      mj.update({{"n_a", e.n_a},
                 {"n_b", e.n_b},
                 {"median_a", e.median_a},
                 {"median_b", e.median_b},
                 {"ratio", e.ratio},
                 {"ci", e.ci ? json{e.ci->low, e.ci->high} : json(nullptr)},
                 {"confidence", e.confidence},
                 {"mann_whitney_p", e.p_value},
                 {"p_exact", e.p_exact},
                 {"practical_threshold", practical_threshold(m.metric)},
                 {"verdict", v.text},
                 {"verdict_kind", verdict_kind_name(v.kind)}});
      if (!v.reason.empty()) mj["no_verdict_reason"] = v.reason;
    } else {
      mj["ratio"] = nullptr;
    }
    j["metrics"].push_back(std::move(mj));
  }
  j["only_in_a"] = r.only_in_a;
  j["only_in_b"] = r.only_in_b;
  j["rule"] = {{"min_samples_per_side", kMinSamplesPerSide},
               {"significance", significance_level(r.confidence)},
               {"practical_threshold",
                {{"tokens_per_s", practical_threshold("x_per_s")},
                 {"ms", practical_threshold("x_ms")},
                 {"bytes", practical_threshold("x_bytes")},
                 {"j", practical_threshold("x_j")},
                 {"other", practical_threshold("x")}}}};
  return j;
}

}  // namespace edgeprobe::analysis
