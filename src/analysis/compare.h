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
struct Interval {
  double low = 0, high = 0;
  bool contains(double x) const { return low <= x && x <= high; }
};
struct RatioEstimate {
  size_t n_a = 0, n_b = 0;
  double median_a = 0, median_b = 0;
  double ratio = 0;  // median_b / median_a
  // Absent when a side has one sample: resampling one value gives a zero-width interval
  // that claims a certainty the run does not have.
  std::optional<Interval> ci;
  double confidence = 0.95;
  double p_value = 1;  // Mann-Whitney U, two-sided
  bool p_exact = false;  // exact null distribution (no ties, small samples) or normal approximation
};

struct CompareOptions {
  int bootstrap_iterations = 4000;
  double confidence = 0.95;    // of the interval; the test's significance level is 1 - confidence
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
// Where the compute ran, test by test ("CPU", "GPU (Vulkan0)"): a comparability field.
std::optional<std::string> compute_signature(const nlohmann::json& document);

// Per-metric samples of one run, keyed by test ("tg64", "session", ...) then metric.
using MetricSamples = std::map<std::string, std::map<std::string, std::vector<double>>>;

// Pulls the raw per-repetition (or per-turn) samples out of a result document: either an
// `edgeprobe bench -o json` file ({"results": [{"test", "repetitions": [{...}]}]}) or a
// run loaded from the store (Store::load_run). Every numeric top-level field of a
// repetition or turn becomes a metric. Provisional: adapt here when the schema settles.
MetricSamples extract_metric_samples(const nlohmann::json& document);
// The provenance object of either kind of document (null when absent).
nlohmann::json extract_provenance(const nlohmann::json& document);

// One setting that differs between A and B: listed above the table whether or not the
// runs are comparable, so a ratio is read with what changed ("ggml cpu variant: haswell →
// sse42", "threads: 2 → 4").
struct SettingDifference {
  std::string label;
  std::string a, b;            // "(absent)" where a side lacks the setting
  bool configuration = false;  // a test setting (threads, batch, ...) rather than build, device or model
  std::string text() const;
};
// Provenance fields (edgeprobe, engine and ggml variant, device, model, request path) and
// the test configurations' fields (each field's values over the document's tests, in
// order, without repeats) whose values differ between the two documents.
std::vector<SettingDifference> setting_differences(const nlohmann::json& a, const nlohmann::json& b);

// The rule for a verdict. No verdict below kMinSamplesPerSide samples on either side:
// with the exact Mann-Whitney U test the smallest two-sided p-value for m and n samples is
// 2 / C(m+n, m) (the samples do not overlap at all), 0.1 for 3 against 3 and 0.057 for 3
// against 4, so a run of 3 repetitions can never show a difference at 0.05; 4 against 4
// can (2/70 = 0.029). Above that, a verdict needs p below 1 - confidence AND the interval
// of the ratio to exclude 1; and a ratio within the metric's practical threshold is "no
// practical difference" even when it is significant.
inline constexpr size_t kMinSamplesPerSide = 4;
double significance_level(double confidence);  // 1 - confidence, without binary residue
// The practical threshold of a metric, as a relative change (0.03 = ±3 %):
//   tokens/s and times (_ms) 3 %: separate runs of one build on one device drift by a few
//     percent (clock, thermal state, page cache, other processes) in ways the samples
//     within a run do not show, so a smaller change is not one to act on;
//   memory (_bytes) 5 %: peak RSS moves by a few MiB with allocator arenas, the resident
//     share of the mapped file and page granularity for the same code;
//   energy (_j) 10 %: sampled counters (RAPL, the battery) over a phase of a few seconds;
//   anything else 5 %.
double practical_threshold(const std::string& metric);

enum class VerdictKind {
  kTooFewSamples,          // below kMinSamplesPerSide on a side
  kNoDifferenceShown,      // p not below the level, or the interval holds 1
  kNoPracticalDifference,  // significant, but the ratio is within the practical threshold
  // A verdict: better or worse by the metric's direction, higher or lower when it has none.
  kBetter,
  kWorse,
  kHigher,
  kLower,
};
struct Verdict {
  VerdictKind kind = VerdictKind::kNoDifferenceShown;
  std::string text;    // "B better", "no difference shown (n=1/1)", ...
  std::string reason;  // why there is no verdict ("" for a verdict)
  bool shown() const { return kind >= VerdictKind::kBetter; }
};
const char* verdict_kind_name(VerdictKind kind);  // "better", "no_difference_shown", ...
// What a ratio B/A means for a person, by the rule above. The direction: tokens/s up is
// better; _ms, _bytes and _j down is better; otherwise "B higher"/"B lower".
Verdict judge(const std::string& metric, const RatioEstimate& estimate);

struct MetricComparison {
  std::string test, metric;
  std::optional<RatioEstimate> estimate;  // nullopt: a side has no samples or median_a is 0
};
struct CompareReport {
  std::vector<Mismatch> mismatches;  // empty: comparable
  std::vector<SettingDifference> differences;
  std::vector<MetricComparison> metrics;
  std::vector<std::string> only_in_a, only_in_b;  // "test/metric" present on one side only
  std::vector<std::string> unverified;  // comparability fields absent on both sides
  // Tests both runs continued the --verify prompt in: {test, tokens compared, first
  // position that differs or -1}. Another prompt (tokenizer) on one side: not listed.
  struct Continuation {
    std::string test;
    int compared = 0, first_divergence = -1;
  };
  std::vector<Continuation> continuations;
  double confidence = 0.95;             // of the intervals; the significance level is 1 - confidence
  // The runs differ only in the quantization of one model (architecture, name, parameter
  // count and shape equal; file and type not): a frontier comparison, comparable, with
  // {A's type, B's type}. What the quantization costs in fidelity is not in the runs.
  std::optional<std::pair<std::string, std::string>> quantizations;
  bool comparable() const { return mismatches.empty(); }
};
CompareReport compare_documents(const nlohmann::json& a, const nlohmann::json& b,
                                const CompareOptions& options = {});

// The tests both documents continued the --verify prompt in, token by token.
std::vector<CompareReport::Continuation> compare_continuations(const nlohmann::json& a,
                                                               const nlohmann::json& b);

// The report as `compare -o json` prints it and the HTML report embeds it: one shape.
nlohmann::json to_json(const CompareReport& report);

}  // namespace edgeprobe::analysis
