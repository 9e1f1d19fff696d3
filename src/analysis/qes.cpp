#include "analysis/qes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "analysis/stability.h"
#include "core/stats.h"

namespace edgeprobe::analysis {
namespace {

// 100 at or below `good`, 0 at or above `bad`, linear in between.
double linear_down(double x, double good, double bad) {
  if (bad <= good) return x <= good ? 100.0 : 0.0;
  return 100.0 * std::clamp((bad - x) / (bad - good), 0.0, 1.0);
}

QesPart make_part(std::string name, std::optional<double> input, std::string unit, std::string rule,
                  double (*score)(double, const QesTargets&), const QesTargets& t,
                  const std::string& missing_reason) {
  QesPart p{std::move(name), input, std::move(unit), std::nullopt, std::move(rule), ""};
  if (input && std::isfinite(*input)) {
    p.score = score(*input, t);
  } else {
    p.input.reset();
    p.missing_reason = missing_reason.empty() ? "not measured" : missing_reason;
  }
  return p;
}

QesComponent make_component(std::string name, double weight, std::vector<QesPart> parts) {
  QesComponent c{std::move(name), weight, std::nullopt, std::move(parts)};
  double sum = 0;
  int n = 0;
  for (const QesPart& p : c.parts)
    if (p.score) {
      sum += *p.score;
      ++n;
    }
  if (n > 0) c.score = sum / n;
  return c;
}

nlohmann::json optional_json(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace

double score_ttft(double ttft_ms, const QesTargets& t) {
  // Log scale: going from 1 s to 2 s hurts as much as going from 5 s to 10 s.
  if (ttft_ms <= t.ttft_target_ms) return 100.0;
  if (ttft_ms >= t.ttft_limit_ms || t.ttft_limit_ms <= t.ttft_target_ms) return 0.0;
  return 100.0 * (1.0 - std::log(ttft_ms / t.ttft_target_ms) / std::log(t.ttft_limit_ms / t.ttft_target_ms));
}
double score_missed_frames(double share, const QesTargets& t) {
  return linear_down(share, 0.0, t.missed_share_zero);
}
double score_cv(double cv, const QesTargets& t) { return linear_down(cv, 0.0, t.cv_zero); }
double score_drift(double ratio, const QesTargets& t) {
  // Either direction counts: a session that speeds up is as unstable as one that slows.
  return linear_down(std::fabs(1.0 - ratio), 0.0, t.drift_loss_zero);
}
double score_temperature(double peak_c, const QesTargets& t) {
  return linear_down(peak_c, t.temp_comfort_c, t.temp_limit_c);
}

QesResult compute_qes(const QesInputs& in, const QesTargets& t) {
  QesResult r;
  const std::string stability_reason = in.stability_missing_reason;
  r.components.push_back(make_component(
      "responsiveness", t.weight_responsiveness,
      {make_part("ttft", in.ttft_ms, "ms",
                 fmt::format("100 at <= {:g} ms, 0 at >= {:g} ms, log-linear between", t.ttft_target_ms,
                             t.ttft_limit_ms),
                 score_ttft, t, in.ttft_missing_reason),
       make_part("missed_frames", in.missed_frame_share, "share",
                 fmt::format("100 * (1 - share / {:g}), floored at 0", t.missed_share_zero),
                 score_missed_frames, t, in.frames_missing_reason)}));
  r.components.push_back(make_component(
      "stability", t.weight_stability,
      {make_part("cv", in.throughput_cv, "ratio", fmt::format("100 * (1 - cv / {:g}), floored at 0", t.cv_zero),
                 score_cv, t, stability_reason),
       make_part("drift", in.drift_ratio, "last/first decile",
                 fmt::format("100 * (1 - |1 - ratio| / {:g}), floored at 0", t.drift_loss_zero), score_drift,
                 t, stability_reason)}));
  QesPart temp = make_part(
      "peak_temperature", in.peak_temp_c, "C",
      fmt::format("100 at <= {:g} C, 0 at >= {:g} C, linear between", t.temp_comfort_c, t.temp_limit_c),
      score_temperature, t, in.temp_missing_reason);
  if (!in.temp_sensor.empty()) temp.rule += fmt::format(" (sensor: {})", in.temp_sensor);
  r.components.push_back(make_component("temperature", t.weight_temperature, {temp}));

  double weighted = 0, weights = 0;
  for (const QesComponent& c : r.components) {
    if (c.score && c.weight > 0) {
      weighted += c.weight * *c.score;
      weights += c.weight;
      r.rests_on.push_back(c.name);
    } else {
      r.unavailable.push_back(c.name);
    }
  }
  if (weights > 0) r.total = weighted / weights;
  return r;
}

QesInputs make_qes_inputs(std::span<const double> ttft_ms, std::span<const double> decode_tokens_per_s,
                          std::optional<double> missed_frame_share, std::optional<double> peak_temp_c,
                          std::string temp_sensor) {
  auto finite = [](std::span<const double> xs) {
    std::vector<double> out;
    for (double x : xs)
      if (std::isfinite(x)) out.push_back(x);
    return out;
  };
  QesInputs in;
  const std::vector<double> ttft = finite(ttft_ms);
  if (!ttft.empty()) {
    in.ttft_ms = stats::quantile(ttft, 0.5);
  } else {
    in.ttft_missing_reason = "no turn produced a first token";
  }
  const std::vector<double> decode = finite(decode_tokens_per_s);
  in.throughput_cv = coefficient_of_variation(decode);
  if (const std::optional<Drift> d = drift(decode)) in.drift_ratio = d->ratio;
  if (!in.throughput_cv || !in.drift_ratio)
    in.stability_missing_reason = fmt::format("{} turns with a decode rate; need at least 2", decode.size());
  in.missed_frame_share = missed_frame_share;
  if (!missed_frame_share) in.frames_missing_reason = "frame probe not run";
  in.peak_temp_c = peak_temp_c;
  in.temp_sensor = std::move(temp_sensor);
  if (!peak_temp_c) in.temp_missing_reason = "no temperature sensor readable";
  return in;
}

nlohmann::json to_json(const QesResult& r) {
  nlohmann::json j;
  j["total"] = optional_json(r.total);
  j["rests_on"] = r.rests_on;
  j["unavailable"] = r.unavailable;
  j["components"] = nlohmann::json::array();
  for (const QesComponent& c : r.components) {
    nlohmann::json cj{{"name", c.name}, {"weight", c.weight}, {"score", optional_json(c.score)}};
    cj["parts"] = nlohmann::json::array();
    for (const QesPart& p : c.parts) {
      nlohmann::json pj{{"name", p.name},         {"input", optional_json(p.input)},
                        {"unit", p.unit},         {"score", optional_json(p.score)},
                        {"rule", p.rule}};
      if (!p.score) pj["unavailable"] = p.missing_reason;
      cj["parts"].push_back(std::move(pj));
    }
    j["components"].push_back(std::move(cj));
  }
  j["formula"] = "total = sum(w_i * s_i) / sum(w_i) over available components; see docs/qes.md";
  return j;
}

}  // namespace edgeprobe::analysis
