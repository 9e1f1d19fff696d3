#include "analysis/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <tuple>

#include "analysis/compare_internal.h"
#include "analysis/greedy_check.h"
#include "core/error.h"
#include "core/json_read.h"
#include "core/stats.h"
#include "result/migrate.h"
#include "result/result.h"

namespace edgeprobe::analysis {
namespace {

using detail::value_text;

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

std::optional<std::string> workload_signature(const nlohmann::json& doc) {
  if (!doc.is_object()) return std::nullopt;
  const nlohmann::json provenance = extract_provenance(doc);
  if (provenance.is_object() && provenance.contains("workload")) return value_text(provenance["workload"]);
  nlohmann::json configs = nlohmann::json::array();
  const std::string kind = result::document_kind(doc);
  if (kind == "bench") {
    // The workload is what a test asks of the model: its prompt, generation and depth. How
    // it ran (threads, CPUs, batch sizes, KV types, flash attention, mmap, GPU layers) is a
    // setting that differs, which compare lists and explain attributes: a real device B
    // almost always runs another thread count than A.
    for (const nlohmann::json& r : doc["results"]) {
      if (!r.is_object()) continue;
      const nlohmann::json& config = r.value("config", nlohmann::json());
      nlohmann::json workload = nlohmann::json::object();
      for (const char* key : {"n_prompt", "n_gen", "n_depth"})
        if (config.is_object() && config.contains(key)) workload[key] = config[key];
      configs.push_back({{"test", r.value("test", "")}, {"workload", workload}});
    }
  } else if (kind == "session") {
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

// Where each test's compute ran, from its placement: "CPU", or "GPU (Vulkan0)" when layers
// were offloaded or a graph ran nodes on another backend; the distinct values in order.
// A result without placement (older, or an endpoint) ran on the CPU as far as it says.
std::optional<std::string> compute_signature(const nlohmann::json& doc) {
  if (!doc.is_object() || result::document_kind(doc) != "bench") return std::nullopt;
  std::vector<std::string> seen;
  for (const nlohmann::json& r : doc["results"]) {
    if (!r.is_object()) continue;
    const engine::Placement p = result::placement_from_json(r.value("placement", nlohmann::json()));
    std::set<std::string> gpus;
    for (const auto* g : {&p.prefill, &p.decode})
      if (*g)
        for (const auto& b : (*g)->backends)
          if (b.backend != "CPU" && b.nodes > 0) gpus.insert(b.backend);
    std::string where = "CPU";
    if (!gpus.empty() || p.layers_offloaded > 0) {
      std::string names;
      for (const auto& g : gpus) names += (names.empty() ? "" : "/") + g;
      where = "GPU (" + (names.empty() ? std::string("offloaded") : names) + ")";
    }
    if (std::find(seen.begin(), seen.end(), where) == seen.end()) seen.push_back(where);
  }
  std::string out;
  for (const auto& s : seen) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? std::nullopt : std::optional<std::string>(out);
}

MetricSamples extract_metric_samples(const nlohmann::json& doc) {
  MetricSamples out;
  if (!doc.is_object()) return out;
  const std::string kind = result::document_kind(doc);
  // `edgeprobe bench -o json`: {"results": [{"test", "repetitions": [...], "turns": [...]}]}
  if (kind == "bench") {
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
  if (kind == "session") {
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
  if (result::document_kind(doc) == "doctor") return extract_provenance(json_read::at(doc, "/doctor/primary"));
  return nullptr;
}

namespace {

// A doctor result is compared by its primary run, the configuration it diagnosed: its
// findings are not samples. A --tune result keeps no run to compare.
const nlohmann::json& compared_run(const nlohmann::json& doc) {
  if (result::document_kind(doc) != "doctor") return doc;
  const nlohmann::json& primary = json_read::at(doc, "/doctor/primary");
  if (!primary.is_object())
    throw_bad_input("a doctor result without a primary run (a --tune search) has no measured run to compare; compare "
                    "the runs it names instead");
  return primary;
}

}  // namespace

namespace {

// Each test's --verify continuation, by test name.
std::map<std::string, result::GreedyCheck> continuations_of(const nlohmann::json& doc) {
  std::map<std::string, result::GreedyCheck> out;
  if (!doc.contains("results") || !doc["results"].is_array()) return out;
  for (const auto& r : doc["results"])
    if (r.is_object() && r.contains("verify") && r.contains("test") && r["test"].is_string())
      if (auto c = result::greedy_check_from_json(r["verify"]); c && !c->tokens.empty())
        out.emplace(r["test"], *c);
  return out;
}

}  // namespace

std::vector<CompareReport::Continuation> compare_continuations(const nlohmann::json& a,
                                                               const nlohmann::json& b) {
  std::vector<CompareReport::Continuation> out;
  const auto ca = continuations_of(a), cb = continuations_of(b);
  for (const auto& [test, check] : ca) {
    const auto other = cb.find(test);
    if (other == cb.end()) continue;
    auto compared = check;
    if (!compare_continuation(compared, {other->second}, "B").empty()) continue;  // another prompt
    out.push_back({test, compared.compared, compared.first_divergence});
  }
  return out;
}

namespace {

// {A's quantization, B's} when the only mismatches are the model's file and type and the
// models are the same one otherwise; nullopt else.
std::optional<std::pair<std::string, std::string>> frontier_pair(const nlohmann::json& prov_a,
                                                                 const nlohmann::json& prov_b,
                                                                 const std::vector<Mismatch>& mismatches) {
  bool quant = false;
  for (const Mismatch& m : mismatches) {
    if (m.label != "model sha256" && m.label != "quantisation") return std::nullopt;
    quant |= m.label == "quantisation";
  }
  const auto &ma = prov_a.value("models", nlohmann::json()), &mb = prov_b.value("models", nlohmann::json());
  if (!quant || !ma.is_array() || !mb.is_array() || ma.size() != mb.size()) return std::nullopt;
  std::string qa, qb;
  for (size_t i = 0; i < ma.size(); ++i) {
    if (!ma[i].is_object() || !mb[i].is_object()) return std::nullopt;
    for (const char* key : {"architecture", "name", "n_params", "shape"})
      if (!ma[i].contains(key) || ma[i][key] != mb[i].value(key, nlohmann::json())) return std::nullopt;
    const auto type = [](const nlohmann::json& m) { return m.value("quant", std::string("?")); };
    qa += (i ? "," : "") + type(ma[i]);
    qb += (i ? "," : "") + type(mb[i]);
  }
  return std::make_pair(qa, qb);
}

}  // namespace

CompareReport compare_documents(const nlohmann::json& doc_a, const nlohmann::json& doc_b, const CompareOptions& options) {
  const nlohmann::json& a = compared_run(doc_a);
  const nlohmann::json& b = compared_run(doc_b);
  CompareReport report;
  std::vector<FieldCheck> checks = provenance_checks(extract_provenance(a), extract_provenance(b));
  checks.push_back({"workload", workload_signature(a), workload_signature(b)});
  checks.push_back({"compute", compute_signature(a), compute_signature(b)});
  report.mismatches = comparability_mismatches(checks);
  report.quantizations = frontier_pair(extract_provenance(a), extract_provenance(b), report.mismatches);
  if (report.quantizations) report.mismatches.clear();
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
  report.continuations = compare_continuations(a, b);
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
  j["quantizations"] =
      r.quantizations ? json{{"a", r.quantizations->first}, {"b", r.quantizations->second}} : json();
  j["continuations"] = json::array();
  for (const auto& c : r.continuations)
    j["continuations"].push_back(
        {{"test", c.test},
         {"compared", c.compared},
         {"first_divergence", c.first_divergence < 0 ? json(nullptr) : json(c.first_divergence)}});
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
