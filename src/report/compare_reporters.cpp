#include "report/compare_reporters.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/text.h"
#include "report/formats.h"

namespace edgeprobe::report {
namespace {

// Test names, settings and mismatch texts come from the result files: one escaped line
// each, so a newline or an escape sequence in a model name cannot reach the terminal.
constexpr size_t kCellBytes = 200;

std::string compare_markdown(const analysis::CompareReport& r, const std::string& label_a,
                             const std::string& label_b) {
  std::string notes;
  for (const analysis::Mismatch& m : r.mismatches)
    notes += fmt::format("**not comparable**: {}\n", one_line(m.message(), kCellBytes));
  if (r.quantizations)
    notes += fmt::format(
        "frontier comparison: the same model in {} (A) and {} (B): the ratios are what the quantization does "
        "to "
        "speed; what it does to the answers is measured by `edgeprobe frontier` or `fidelity` "
        "(docs/fidelity.md)\n",
        one_line(r.quantizations->first, kCellBytes), one_line(r.quantizations->second, kCellBytes));
  notes += compare_differences_text(r);
  if (!r.unverified.empty()) {
    std::string labels;
    for (const std::string& u : r.unverified) labels += (labels.empty() ? "" : ", ") + one_line(u, kCellBytes);
    notes += fmt::format("unverified (recorded on neither side): {}\n", labels);
  }
  for (const auto& c : r.continuations)
    notes += c.first_divergence < 0
                 ? fmt::format("{}: greedy continuations identical ({} tokens, --verify)\n",
                               one_line(c.test, kCellBytes), c.compared)
                 : fmt::format("{}: greedy continuations diverge at token {} of {} (--verify)\n",
                               one_line(c.test, kCellBytes), c.first_divergence + 1, c.compared);
  std::string out = fmt::format("A: {}\nB: {}\n\n{}{}", label_a, label_b, notes, notes.empty() ? "" : "\n");
  const int level = static_cast<int>(std::lround(100 * r.confidence));
  out += fmt::format(
      "| test | metric | A median | B median | B/A | {}% CI | p (Mann-Whitney) | n A/B | verdict |\n", level);
  out += "|---|---|---:|---:|---:|---|---:|---|---|\n";
  for (const analysis::MetricComparison& m : r.metrics) {
    if (!m.estimate) {
      out += fmt::format("| {} | {} | | | n/a | | | | no samples or zero baseline |\n", one_line(m.test, kCellBytes),
                         one_line(m.metric, kCellBytes));
      continue;
    }
    const analysis::RatioEstimate& e = *m.estimate;
    const std::string ci = e.ci ? fmt::format("[{:.3f}, {:.3f}]", e.ci->low, e.ci->high) : "n/a";
    out += fmt::format("| {} | {} | {:.4g} | {:.4g} | {:.3f} | {} | {:.3g}{} | {}/{} | {} |\n",
                       one_line(m.test, kCellBytes), one_line(m.metric, kCellBytes), e.median_a, e.median_b, e.ratio, ci, e.p_value,
                       e.p_exact ? "" : " (approx.)", e.n_a, e.n_b, analysis::judge(m.metric, e).text);
  }
  for (const std::string& s : r.only_in_a) out += fmt::format("\nonly in A: {}", one_line(s, kCellBytes));
  for (const std::string& s : r.only_in_b) out += fmt::format("\nonly in B: {}", one_line(s, kCellBytes));
  if (!r.only_in_a.empty() || !r.only_in_b.empty()) out += "\n";
  out +=
      "\nB/A is the ratio of medians; the interval is a percentile bootstrap (4000 resamples, fixed seed), "
      "none from a single sample.\n";
  out += fmt::format(
      "A verdict needs {} samples per side (with fewer the exact Mann-Whitney test cannot reach p < {:g}), "
      "p < {:g} and an interval that excludes 1; a ratio within ±{:g} % (tokens/s, ms), ±{:g} % (bytes) or "
      "±{:g} % (J) is no practical difference.\n",
      analysis::kMinSamplesPerSide, analysis::significance_level(r.confidence),
      analysis::significance_level(r.confidence), 100 * analysis::practical_threshold("_per_s"),
      100 * analysis::practical_threshold("_bytes"), 100 * analysis::practical_threshold("_j"));
  return out;
}

std::string compare_rows(const analysis::CompareReport& r, const std::string& format) {
  const nlohmann::json metrics = analysis::to_json(r)["metrics"];
  std::string out;
  if (format == "jsonl") {
    for (const auto& m : metrics) out += m.dump() + "\n";
    return out;
  }
  static const char* kColumns[] = {"test",          "metric",          "n_a",     "n_b",
                                   "median_a",      "median_b",        "ratio",   "ci_low",
                                   "ci_high",       "confidence",      "mann_whitney_p", "p_exact",
                                   "practical_threshold", "verdict",  "verdict_kind", "no_verdict_reason"};
  auto cell = [](const nlohmann::json& v) {
    if (v.is_null()) return std::string();
    return v.is_string() ? csv_field(v.get<std::string>()) : v.dump();
  };
  for (const char* c : kColumns) out += std::string(out.empty() ? "" : ",") + c;
  out += "\n";
  for (const auto& m : metrics) {
    std::string row;
    for (const char* c : kColumns) {
      const std::string key = c;
      nlohmann::json v = m.value(key, nlohmann::json());
      if ((key == "ci_low" || key == "ci_high") && m.contains("ci") && m["ci"].is_array())
        v = m["ci"][key == "ci_low" ? 0 : 1];
      row += (key == "test" ? "" : ",") + cell(v);
    }
    out += row + "\n";
  }
  return out;
}

}  // namespace

// The settings that differ, one line each, after the mismatches (which already name
// theirs in bold).
std::string compare_differences_text(const analysis::CompareReport& r) {
  std::string out;
  for (const analysis::SettingDifference& d : r.differences) {
    const bool in_mismatch = std::any_of(r.mismatches.begin(), r.mismatches.end(),
                                         [&](const analysis::Mismatch& m) { return m.label == d.label; });
    if (!in_mismatch) out += fmt::format("- {}\n", one_line(d.text(), kCellBytes));
  }
  return out.empty() ? "" : "settings that differ (A → B):\n" + out;
}

std::string compare_report(const analysis::CompareReport& r, const std::string& format, const std::string& label_a,
                           const std::string& label_b) {
  check_format(OutputKind::kCompare, format);
  if (format == "json") return analysis::to_json(r).dump(2) + "\n";
  if (format == "md") return compare_markdown(r, label_a, label_b);
  return compare_rows(r, format);
}

}  // namespace edgeprobe::report
