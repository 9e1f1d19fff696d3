#include "app/predict_evidence.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "analysis/contamination.h"
#include "app/predict_job.h"
#include "app/stored_run.h"
#include "core/error.h"
#include "core/stats.h"
#include "probe/compute.h"
#include "probe/roofline.h"
#include "result/migrate.h"

namespace edgeprobe::app {

using nlohmann::json;

namespace {

// How far measurements fell from predictions on this device: the 10th and 90th percentile
// of measured (best repetition) / predicted over the newest stored bench runs that carry a
// prediction; an interval only from at least 3.
constexpr size_t kMinChecks = 3;
constexpr size_t kChecksFromRuns = 50;

// Each test's roofline object of the newest stored bench runs matching `filter`, with the
// run's device; a run that does not load back is no evidence either way and is skipped.
template <typename Visit>
void for_each_stored_roofline(const store::Store& store, store::RunFilter filter, Visit visit) {
  filter.kind = "bench";
  filter.last = kChecksFromRuns;
  for (const auto& summary : store.list_runs(filter)) {
    json doc;
    try {
      doc = load_stored_run(store, summary.id).document();
    } catch (const Error&) {
      continue;
    }
    if (!doc.contains("results") || !doc["results"].is_array()) continue;
    const json provenance = doc.value("provenance", json::object());
    for (const auto& r : doc["results"]) {
      if (!r.contains("roofline") || !r["roofline"].is_object()) continue;
      // A test measured while the machine did other work says nothing of the model: its
      // measured / predicted would widen every interval built on it (a 0.11 seen).
      if (!analysis::contamination(r, provenance).empty()) continue;
      visit(r["roofline"], summary.device_id);
    }
  }
}

}  // namespace

Checks stored_checks(const store::Store* store, const std::string& device_id, const std::string& gpu) {
  Checks c;
  if (!store || device_id.empty()) return c;
  store::RunFilter filter;
  filter.device = device_id;
  filter.device_exact = true;
  for_each_stored_roofline(*store, filter, [&](const json& roof, const std::string&) {
    const auto on = roof.find("ceiling_device");
    if ((on != roof.end() && on->is_string() ? on->get<std::string>() : std::string()) != gpu) return;
    const auto p = roof.find("prediction");
    if (p == roof.end() || !p->is_object()) return;
    for (const auto& [phase, out] : {std::pair{"decode", &c.decode}, std::pair{"prefill", &c.prefill}}) {
      const auto it = p->find(phase);
      if (it == p->end() || !it->is_object()) continue;
      const auto ratio = it->find("best_over_predicted");
      if (ratio != it->end() && ratio->is_number() && ratio->get<double>() > 0)
        out->push_back(ratio->get<double>());
    }
  });
  return c;
}

predict::Spread probe_spread(const probe::DeviceCeilings& c, const model::GgufInfo& info, int threads,
                             bool decode) {
  predict::Spread s;
  double worst = 1;
  int points = 0;
  const std::string signature = probe::matrices_signature(probe::decode_matrices(info));
  for (const auto& k : c.kernels) {
    if (!k.usable() || k.threads != threads || k.phase != (decode ? "decode" : "prefill")) continue;
    if (decode && k.model != signature) continue;
    const double best = decode ? k.best_gb_per_s : k.best_gflop_per_s;
    const double median = decode ? k.median_gb_per_s : k.median_gflop_per_s;
    if (best <= 0 || median <= 0) continue;
    worst = std::min(worst, median / best);
    ++points;
  }
  s.low = worst;
  s.high = 1;
  s.basis = points > 0 ? fmt::format(
                             "the kernel probe's run-to-run spread (median / best run over {} point(s)); no "
                             "checked runs on this device yet",
                             points)
                       : "none: no kernel probe points and no checked runs";
  return s;
}

predict::Spread check_spread(const std::vector<double>& ratios, const predict::Spread& fallback) {
  if (ratios.size() < kMinChecks) return fallback;
  predict::Spread s;
  s.low = std::min(1.0, stats::quantile(ratios, 0.1));
  s.high = std::max(1.0, stats::quantile(ratios, 0.9));
  s.basis = fmt::format("measured / predicted over {} checked test(s) on this device (10th-90th percentile)",
                        ratios.size());
  return s;
}

std::pair<predict::Efficiency, predict::Efficiency> stored_efficiencies(const store::Store* store) {
  std::vector<double> de, pe;
  std::set<std::string> ddev, pdev;
  if (store)
    for_each_stored_roofline(*store, {}, [&](const json& roof, const std::string& device) {
      auto take = [&](const char* key, std::vector<double>& out, std::set<std::string>& devices) {
        const auto it = roof.find(key);
        if (it != roof.end() && it->is_number() && it->get<double>() > 0) {
          out.push_back(it->get<double>());
          devices.insert(device);
        }
      };
      take("decode_bandwidth_efficiency", de, ddev);
      take("prefill_efficiency", pe, pdev);
    });
  auto summarize = [](const std::vector<double>& v, const std::set<std::string>& devices) {
    predict::Efficiency e;
    e.runs = static_cast<int>(v.size());
    e.devices = static_cast<int>(devices.size());
    if (v.empty()) return e;
    e.median = stats::quantile(v, 0.5);
    e.low = stats::quantile(v, 0.1);
    e.high = stats::quantile(v, 0.9);
    return e;
  };
  return {summarize(de, ddev), summarize(pe, pdev)};
}

// ---- predictions checked against measurements ------------------------------------------

json bench_prediction(const result::TestResult& r, const model::GgufInfo& info,
                      const probe::DeviceCeilings& c) {
  if (r.error) return nullptr;
  predict::Config cfg;
  cfg.threads = c.device.empty() ? r.config.n_threads : 0;  // a GPU's figures have no thread count
  cfg.n_prompt = r.config.n_prompt;
  cfg.n_gen = r.config.n_gen;
  cfg.depth = r.config.n_depth;
  cfg.n_batch = r.config.n_batch;
  cfg.n_ubatch = r.config.n_ubatch;
  cfg.type_k = r.config.type_k;
  cfg.type_v = r.config.type_v;
  const auto p = predict::predict(info, c, cfg, probe_spread(c, info, cfg.threads, true),
                                  probe_spread(c, info, cfg.threads, false), 0);
  const result::TestSummary s = result::summarize(r);
  return predict::check_json(p, {s.prefill_tokens_per_s.max, s.prefill_tokens_per_s.median},
                             {s.decode_tokens_per_s.max, s.decode_tokens_per_s.median});
}

json check_stored_run(const std::string& run_or_file, const std::string& db) {
  const json doc = load_result_document(run_or_file, db);
  const std::string kind = result::document_kind(doc);
  if (kind != "bench")
    throw_bad_input("predict --check takes a bench result; {} is a {} result", run_or_file, kind);
  json rows = json::array();
  size_t with_prediction = 0;
  const json provenance = doc.value("provenance", json::object());
  for (const auto& r : doc.value("results", json::array())) {
    const std::string test = r.value("test", "");
    // A test measured while the machine did other work: its error is the machine's, said so.
    const auto contaminated = analysis::contamination(r, provenance);
    const json roof = r.value("roofline", json());
    const json pred = roof.is_object() ? roof.value("prediction", json()) : json();
    for (const char* phase : {"prefill", "decode"}) {
      json row = {{"test", test}, {"phase", phase}};
      const json ph = pred.is_object() ? pred.value(phase, json()) : json();
      if (!ph.is_object()) {
        if (!pred.is_object())
          row["note"] = "no prediction stored (a run from before predict, or without ceilings)";
        else
          continue;  // the test has no such phase
      } else {
        row.update(ph);
        ++with_prediction;
      }
      if (!contaminated.empty()) row["contaminated"] = fmt::format("{}", fmt::join(contaminated, "; "));
      rows.push_back(std::move(row));
    }
  }
  return {{"kind", "predict-check"}, {"source", run_or_file}, {"checked", with_prediction}, {"rows", rows}};
}

}  // namespace edgeprobe::app
