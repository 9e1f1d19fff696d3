#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace edgeprobe::analysis {

// QES, the quality-of-experience score (0-100) of a session; formula and worked example
// in docs/qes.md. Every input is optional: what was not measured is reported as
// unavailable and the total rests only on what was.
struct QesInputs {
  std::optional<double> ttft_ms;             // median time to first token over the turns
  std::optional<double> missed_frame_share;  // 0..1, FrameProbe over the whole session
  std::optional<double> throughput_cv;       // of the per-turn decode tokens/s series
  std::optional<double> drift_ratio;         // last decile / first decile of that series
  std::optional<double> peak_temp_c;         // hottest reading of the sensor below
  std::string temp_sensor;                   // which zone, e.g. "skin" or "thermal_zone3 (cpu)"
  // Why an input is missing, shown next to "unavailable" (e.g. "no thermal zones readable").
  std::string ttft_missing_reason, frames_missing_reason, stability_missing_reason, temp_missing_reason;
};

// Where each sub-score is 100 and where it reaches 0 (linear in between, TTFT on a log
// scale). Defaults and their sources are in docs/qes.md.
struct QesTargets {
  double ttft_target_ms = 1000;     // Nielsen's 1 s limit for an uninterrupted flow of thought
  double ttft_limit_ms = 10000;     // Nielsen's 10 s limit for keeping attention
  double missed_share_zero = 0.5;   // half the frames missed: the UI is stalled, score 0
  double cv_zero = 0.20;            // 20 % turn-to-turn variation scores 0
  double drift_loss_zero = 0.30;    // a 30 % change from first to last decile scores 0
  double temp_comfort_c = 43;       // IEC 62368-1 TS1 long-contact limit, plastic surface
  double temp_limit_c = 48;         // IEC 62368-1 TS1 limit for contact of 1 min to 8 h
  double weight_responsiveness = 0.5;
  double weight_stability = 0.3;
  double weight_temperature = 0.2;
};

struct QesPart {
  std::string name;             // "ttft", "missed_frames", "cv", "drift", "peak_temperature"
  std::optional<double> input;  // the measured value, in the unit below
  std::string unit;
  std::optional<double> score;  // 0..100; nullopt when the input is unavailable
  std::string rule;             // the formula with its thresholds, for the report
  std::string missing_reason;
};

struct QesComponent {
  std::string name;  // "responsiveness", "stability", "temperature"
  double weight = 0;
  std::optional<double> score;  // mean of the available parts
  std::vector<QesPart> parts;
};

struct QesResult {
  std::optional<double> total;  // weighted mean over available components; nullopt if none
  std::vector<QesComponent> components;
  std::vector<std::string> rests_on;     // names of the components the total uses
  std::vector<std::string> unavailable;  // names of the components it does not
};

QesResult compute_qes(const QesInputs& inputs, const QesTargets& targets = {});

// Builds the inputs from a session's raw series (turns in the order they ran): median
// TTFT, and CV and drift of the decode throughput. Non-finite values (failed turns) are
// left out; a series too short to say anything gives an unavailable part with a reason.
QesInputs make_qes_inputs(std::span<const double> ttft_ms, std::span<const double> decode_tokens_per_s,
                          std::optional<double> missed_frame_share, std::optional<double> peak_temp_c,
                          std::string temp_sensor = "");
nlohmann::json to_json(const QesResult& result);

// The individual scoring rules, exposed so that tests and docs agree with the code.
double score_ttft(double ttft_ms, const QesTargets& t);
double score_missed_frames(double share, const QesTargets& t);
double score_cv(double cv, const QesTargets& t);
double score_drift(double ratio, const QesTargets& t);
double score_temperature(double peak_c, const QesTargets& t);

}  // namespace edgeprobe::analysis
