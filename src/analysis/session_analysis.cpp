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
json decode_telemetry(const result::Turn& turn) {
  return turn.telemetry.is_object() ? turn.telemetry.value("decode", json()) : json();
}
}  // namespace

json analyse_session_turns(const std::vector<result::Turn>& turns) {
  std::vector<double> tps, ttft;
  std::vector<const result::Turn*> measured;
  double missed_frames = 0, due_frames = 0;
  std::optional<double> peak_temp;
  std::string peak_zone;
  for (const auto& t : turns) {
    if (t.error) continue;
    if (t.stop_reason == "context_full" && t.generated_tokens == 0) continue;
    measured.push_back(&t);
    ttft.push_back(t.ttft_ms.value_or(0));
    if (t.generated_tokens > 1) tps.push_back(t.decode_tokens_per_s.value_or(0));
    for (const auto* f : {&t.frames_prefill, &t.frames_decode}) {
      if (*f) {
        missed_frames += static_cast<double>((*f)->missed);
        due_frames += static_cast<double>((*f)->due);
      }
    }
    // Telemetry stays JSON (its sources vary by device): each phase's thermal zones.
    if (t.telemetry.is_object()) {
      for (const auto& [phase, tel] : t.telemetry.items()) {
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
  std::vector<const result::Turn*> with_tps;
  for (const auto* t : measured)
    if (t->generated_tokens > 1) with_tps.push_back(t);
  for (const auto& cp : stability.change_points) {
    if (cp.index >= with_tps.size()) continue;
    const result::Turn& t = *with_tps[cp.index];
    // A key the stored turn lacked stays null here.
    auto known = [&](const char* key, json v) { return t.had(key) ? v : json(); };
    tied.push_back({{"index", cp.index},
                    {"relative_change", cp.relative_change()},
                    {"round", known("round", t.round)},
                    {"conversation_id", known("conversation_id", t.conversation_id)},
                    {"turn_index", known("turn_index", t.turn_index)},
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
