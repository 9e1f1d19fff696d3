#include "cli/cmd_compare.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <iostream>
#include <memory>

#include "app/stored_run.h"
#include "cli/cmd_runs.h"
#include "core/error.h"
#include "core/fs.h"
#include "store/store.h"

namespace edgeprobe::cli {

std::string render_compare_markdown(const analysis::CompareReport& r, const std::string& label_a,
                                    const std::string& label_b) {
  std::string out = fmt::format("A: {}\nB: {}\n\n", label_a, label_b);
  for (const analysis::Mismatch& m : r.mismatches) out += fmt::format("**not comparable**: {}\n", m.message());
  if (!r.unverified.empty()) {
    std::string labels;
    for (const std::string& u : r.unverified) labels += (labels.empty() ? "" : ", ") + u;
    out += fmt::format("unverified (recorded on neither side): {}\n", labels);
  }
  if (!r.mismatches.empty() || !r.unverified.empty()) out += "\n";
  out += "| test | metric | A median | B median | B/A | 95% CI | p (Mann-Whitney) | n A/B | verdict |\n";
  out += "|---|---|---:|---:|---:|---|---:|---|---|\n";
  for (const analysis::MetricComparison& m : r.metrics) {
    if (!m.estimate) {
      out += fmt::format("| {} | {} | | | n/a | | | | no samples or zero baseline |\n", m.test, m.metric);
      continue;
    }
    const analysis::RatioEstimate& e = *m.estimate;
    out += fmt::format("| {} | {} | {:.4g} | {:.4g} | {:.3f} | [{:.3f}, {:.3f}] | {:.3g}{} | {}/{} | {} |\n", m.test,
                       m.metric, e.median_a, e.median_b, e.ratio, e.ci_low, e.ci_high, e.p_value,
                       e.p_exact ? "" : " (approx.)", e.n_a, e.n_b, analysis::verdict(m.metric, e));
  }
  for (const std::string& s : r.only_in_a) out += fmt::format("\nonly in A: {}", s);
  for (const std::string& s : r.only_in_b) out += fmt::format("\nonly in B: {}", s);
  if (!r.only_in_a.empty() || !r.only_in_b.empty()) out += "\n";
  out += "\nB/A is the ratio of medians; the interval is a percentile bootstrap (4000 resamples, fixed seed).\n";
  return out;
}

nlohmann::json compare_report_json(const analysis::CompareReport& r) {
  nlohmann::json j;
  j["comparable"] = r.comparable();
  j["mismatches"] = nlohmann::json::array();
  for (const analysis::Mismatch& m : r.mismatches)
    j["mismatches"].push_back({{"field", m.label}, {"a", m.a}, {"b", m.b}, {"message", m.message()}});
  j["unverified"] = r.unverified;
  j["metrics"] = nlohmann::json::array();
  for (const analysis::MetricComparison& m : r.metrics) {
    nlohmann::json mj{{"test", m.test}, {"metric", m.metric}};
    if (m.estimate) {
      const analysis::RatioEstimate& e = *m.estimate;
      mj.update({{"n_a", e.n_a},
                 {"n_b", e.n_b},
                 {"median_a", e.median_a},
                 {"median_b", e.median_b},
                 {"ratio", e.ratio},
                 {"ci", {e.ci_low, e.ci_high}},
                 {"confidence", e.confidence},
                 {"mann_whitney_p", e.p_value},
                 {"p_exact", e.p_exact},
                 {"verdict", analysis::verdict(m.metric, e)}});
    } else {
      mj["ratio"] = nullptr;
    }
    j["metrics"].push_back(std::move(mj));
  }
  j["only_in_a"] = r.only_in_a;
  j["only_in_b"] = r.only_in_b;
  return j;
}

void register_compare(CLI::App& app) {
  struct Args {
    std::string a, b, db, format = "md";
    bool force = false;
  };
  auto args = std::make_shared<Args>();
  CLI::App* cmd = app.add_subcommand("compare", "Compare two runs metric by metric (B against A)");
  cmd->add_option("A", args->a, "Baseline: run id or result JSON file")->required();
  cmd->add_option("B", args->b, "Candidate: run id or result JSON file")->required();
  cmd->add_option("--db", args->db, "Results database for run ids (default: $XDG_DATA_HOME/edgeprobe/results.db)");
  cmd->add_option("-o,--output-format", args->format, "md or json")->capture_default_str()->check(
      CLI::IsMember({"md", "json"}));
  cmd->add_flag("--force", args->force, "Show the ratios even when the runs are not comparable");
  cmd->callback([args] {
    const nlohmann::json a = app::load_result_document(args->a, args->db);
    const nlohmann::json b = app::load_result_document(args->b, args->db);
    const analysis::CompareReport report = analysis::compare_documents(a, b);
    if (!report.comparable() && !args->force) {
      // Say why first, then refuse: a ratio between different models is not a speed-up.
      for (const analysis::Mismatch& m : report.mismatches) fmt::print("**not comparable**: {}\n", m.message());
      throw_bad_input("{} and {} are not comparable; pass --force to see the ratios anyway", args->a, args->b);
    }
    if (args->format == "json") {
      fmt::print("{}\n", compare_report_json(report).dump(2));
    } else {
      fmt::print("{}", render_compare_markdown(report, args->a, args->b));
    }
  });
}

}  // namespace edgeprobe::cli
