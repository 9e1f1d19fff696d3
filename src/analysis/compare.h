#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace edgeprobe::analysis {

// B against A for one metric: the ratio of medians with a percentile-bootstrap CI
// (Efron & Tibshirani 1993, ch. 13) and a two-sided Mann-Whitney U p-value.
struct RatioEstimate {
  size_t n_a = 0, n_b = 0;
  double median_a = 0, median_b = 0;
  double ratio = 0;  // median_b / median_a
  double ci_low = 0, ci_high = 0;
  double confidence = 0.95;
  double p_value = 1;  // Mann-Whitney U, two-sided
  bool p_exact = false;  // exact null distribution (no ties, small samples) or normal approximation
};

struct CompareOptions {
  int bootstrap_iterations = 4000;
  double confidence = 0.95;
  uint64_t seed = 0x65646765;  // fixed: the same inputs always give the same interval
};

// nullopt when either side is empty or median_a is 0.
std::optional<RatioEstimate> compare_samples(std::span<const double> a, std::span<const double> b,
                                             const CompareOptions& options = {});

// Two-sided p-value of the Mann-Whitney U test (Mann & Whitney 1947). Exact null
// distribution when there are no ties and both samples have at most 50 points (the
// coefficients of the Gaussian binomial [m+n choose m]_q count the rank arrangements);
// otherwise the normal approximation with tie correction and continuity correction.
struct MannWhitney {
  double u = 0;  // U of sample a: pairs (a_i, b_j) with a_i > b_j, ties counting one half
  double p_value = 1;
  bool exact = false;
};
MannWhitney mann_whitney(std::span<const double> a, std::span<const double> b);

// Comparability: one field of provenance on each side. Absent values are nullopt; two
// absent values match (nothing to disagree on), one absent value is a mismatch.
struct FieldCheck {
  std::string label;  // "model sha256"
  std::optional<std::string> a, b;
};
struct Mismatch {
  std::string label;
  std::string a, b;  // "(absent)" where a side lacks the field
  std::string message() const;  // "model sha256 differs (a1b2c3d4… vs c3d4e5f6…)"
};
std::vector<Mismatch> comparability_mismatches(const std::vector<FieldCheck>& fields);

// The fields that make two runs comparable, read from two provenance objects. Each field
// lists JSON pointers tried in order; a "*" step reads every element of an array and
// joins the values with ",". Provisional until the result schema settles: change the
// mapping here only.
struct ProvenanceField {
  std::string label;
  std::vector<std::string> pointers;
  std::string absent_means;  // the value a result without the field had ("" = unknown)
};
const std::vector<ProvenanceField>& default_comparability_fields();
std::optional<std::string> read_field(const nlohmann::json& object, const std::vector<std::string>& pointers);
std::vector<FieldCheck> provenance_checks(const nlohmann::json& provenance_a, const nlohmann::json& provenance_b,
                                          const std::vector<ProvenanceField>& fields = default_comparability_fields());

// What was run, as one canonical string: provenance.workload if present, else the list
// of test configurations of the document (result file or stored run). Two runs whose
// workload differs measure different things.
std::optional<std::string> workload_signature(const nlohmann::json& document);

// Per-metric samples of one run, keyed by test ("tg64", "session", ...) then metric.
using MetricSamples = std::map<std::string, std::map<std::string, std::vector<double>>>;

// Pulls the raw per-repetition (or per-turn) samples out of a result document: either an
// `edgeprobe bench -o json` file ({"results": [{"test", "repetitions": [{...}]}]}) or a
// run loaded from the store (Store::load_run). Every numeric top-level field of a
// repetition or turn becomes a metric. Provisional: adapt here when the schema settles.
MetricSamples extract_metric_samples(const nlohmann::json& document);
// The provenance object of either kind of document (null when absent).
nlohmann::json extract_provenance(const nlohmann::json& document);

struct MetricComparison {
  std::string test, metric;
  std::optional<RatioEstimate> estimate;  // nullopt: a side has no samples or median_a is 0
};
struct CompareReport {
  std::vector<Mismatch> mismatches;  // empty: comparable
  std::vector<MetricComparison> metrics;
  std::vector<std::string> only_in_a, only_in_b;  // "test/metric" present on one side only
  std::vector<std::string> unverified;  // comparability fields absent on both sides
  bool comparable() const { return mismatches.empty(); }
};
// What a ratio B/A means for a person: "no clear change" when its interval holds 1, else
// "B better"/"B worse" by the metric's direction (tokens/s up is better; _ms, _bytes and
// _j down is better), or "B higher"/"B lower" when the direction is unknown.
std::string verdict(const std::string& metric, const RatioEstimate& estimate);

CompareReport compare_documents(const nlohmann::json& a, const nlohmann::json& b,
                                const CompareOptions& options = {});

}  // namespace edgeprobe::analysis
