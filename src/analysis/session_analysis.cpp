#include "analysis/session_analysis.h"

#include <cmath>
#include <optional>
#include <string>

#include "analysis/qes.h"
#include "analysis/stability.h"
#include "core/stats.h"
#include "result/result.h"

namespace edgeprobe::analysis {

using nlohmann::json;

// Stability and QES of one configuration's turns, in the order they ran.
namespace {
json decode_telemetry(const json& turn) {
  const json telemetry = turn.value("telemetry", json());
  return telemetry.is_object() ? telemetry.value("decode", json()) : json();
}
}  // namespace

json analyse_session_turns(const std::vector<json>& turns) {
  std::vector<double> tps, ttft;
  std::vector<const json*> measured;
  double missed_frames = 0, due_frames = 0;
  std::optional<double> peak_temp;
  std::string peak_zone;
  for (const auto& t : turns) {
    if (t.contains("error") && t["error"].is_object()) continue;
    if (t.value("stop_reason", "") == "context_full" && t.value("generated_tokens", 0) == 0) continue;
    measured.push_back(&t);
    ttft.push_back(t.value("ttft_ms", 0.0));
    if (t.value("generated_tokens", 0) > 1) tps.push_back(t.value("decode_tokens_per_s", 0.0));
    for (const char* k : {"frames_prefill", "frames_decode"}) {
      if (t.contains(k)) {
        missed_frames += t[k].value("missed", 0.0);
        due_frames += t[k].value("due", 0.0);
      }
    }
    const json telemetry = t.value("telemetry", json());
    if (telemetry.is_object()) {
      for (const auto& [phase, tel] : telemetry.items()) {
        if (!tel.is_object() || !tel.contains("thermal")) continue;
        for (const auto& [zone, z] : tel["thermal"].items()) {
          const double c = z.value("max_temp_c", NAN);
          if (!std::isnan(c) && (!peak_temp || c > *peak_temp)) peak_temp = c, peak_zone = zone;
        }
      }
    }
  }
  const auto stability = analyse_stability(tps);
  json s = to_json(stability);
  // Tie every change point to the turn where it happened and the telemetry of that turn.
  json tied = json::array();
  std::vector<const json*> with_tps;
  for (const auto* t : measured)
    if ((*t).value("generated_tokens", 0) > 1) with_tps.push_back(t);
  for (const auto& cp : stability.change_points) {
    if (cp.index >= with_tps.size()) continue;
    const json& t = *with_tps[cp.index];
    tied.push_back({{"index", cp.index},
                    {"relative_change", cp.relative_change()},
                    {"round", t.value("round", json())},
                    {"conversation_id", t.value("conversation_id", json())},
                    {"turn_index", t.value("turn_index", json())},
                    {"telemetry", decode_telemetry(t)}});
  }
  s["change_points_at"] = tied;
  const std::optional<double> missed_share = due_frames > 0 ? std::optional<double>(missed_frames / due_frames) : std::nullopt;
  auto inputs = make_qes_inputs(ttft, tps, missed_share, peak_temp, peak_zone);
  if (!missed_share) inputs.frames_missing_reason = "frame probe off or no frame due";
  if (!peak_temp) inputs.temp_missing_reason = "no readable thermal zone on this device";
  const auto ttft_summary = stats::summarize(ttft);
  const auto tps_summary = stats::summarize(tps);
  return {{"turns_measured", measured.size()},
          {"ttft_ms", result::to_json(ttft_summary)},
          {"decode_tokens_per_s", result::to_json(tps_summary)},
          {"missed_frame_share", missed_share ? json(*missed_share) : json(nullptr)},
          {"stability", s},
          {"qes", to_json(compute_qes(inputs))}};
}

}  // namespace edgeprobe::analysis
