#include "result/roofline.h"

#include <cmath>

#include "core/json_read.h"

namespace edgeprobe::result {

using nlohmann::json;

namespace {

// Every field as the document names it, written and read by one table. A figure that is
// not measured (0, or no text) is written as null where `unmeasured_is_null`; reading null
// gives 0 or "" back.
struct Number {
  const char* key;
  double Roofline::*member;
  bool unmeasured_is_null = true;
};
constexpr Number kNumbers[] = {
    {"decode_bytes_per_token", &Roofline::decode_bytes_per_token},
    {"decode_mean_depth", &Roofline::decode_mean_depth, false},
    {"bandwidth_gb_per_s", &Roofline::bandwidth_gb_per_s},
    {"decode_bandwidth_ceiling_tokens_per_s", &Roofline::decode_bandwidth_ceiling_tokens_per_s},
    {"decode_bandwidth_efficiency", &Roofline::decode_bandwidth_efficiency},
    {"decode_kernel_gb_per_s", &Roofline::decode_kernel_gb_per_s},
    {"decode_kernel_ceiling_tokens_per_s", &Roofline::decode_kernel_ceiling_tokens_per_s},
    {"decode_ceiling_tokens_per_s", &Roofline::decode_ceiling_tokens_per_s},
    {"decode_efficiency", &Roofline::decode_efficiency},
    {"bandwidth_at_threads_gb_per_s", &Roofline::bandwidth_at_threads_gb_per_s},
    {"decode_kernel_at_threads_gb_per_s", &Roofline::decode_kernel_at_threads_gb_per_s},
    {"decode_ceiling_at_threads_tokens_per_s", &Roofline::decode_ceiling_at_threads_tokens_per_s},
    {"decode_efficiency_at_threads", &Roofline::decode_efficiency_at_threads},
    {"decode_achieved_gb_per_s", &Roofline::decode_achieved_gb_per_s},
    {"prefill_flop_per_token", &Roofline::prefill_flop_per_token},
    {"prefill_mean_context", &Roofline::prefill_mean_context, false},
    {"prefill_compute_gflop_per_s", &Roofline::prefill_compute_gflop_per_s},
    {"prefill_ceiling_tokens_per_s", &Roofline::prefill_ceiling_tokens_per_s},
    {"prefill_efficiency", &Roofline::prefill_efficiency},
    {"prefill_achieved_gflop_per_s", &Roofline::prefill_achieved_gflop_per_s},
    {"load_ceiling_ms", &Roofline::load_ceiling_ms},
    {"load_efficiency", &Roofline::load_efficiency},
    {"decode_over_ceiling", &Roofline::decode_over_ceiling},
    {"prefill_over_ceiling", &Roofline::prefill_over_ceiling},
};
struct Text {
  const char* key;
  std::string Roofline::*member;
  bool unmeasured_is_null = true;
};
constexpr Text kTexts[] = {
    {"decode_bound", &Roofline::decode_bound},
    {"decode_bound_at_threads", &Roofline::decode_bound_at_threads},
    {"prefill_compute_basis", &Roofline::prefill_compute_basis},
    {"load_ceiling_basis", &Roofline::load_ceiling_basis, false},
    {"remeasure_command", &Roofline::remeasure_command},
};
constexpr std::pair<const char*, bool Roofline::*> kFlags[] = {
    {"decode_cache_resident", &Roofline::decode_cache_resident},
    {"decode_ceiling_suspect", &Roofline::decode_ceiling_suspect},
    {"prefill_ceiling_suspect", &Roofline::prefill_ceiling_suspect},
};

json written(const Roofline& r) {
  json j = json::object();
  for (const auto& n : kNumbers) {
    const double v = r.*n.member;
    j[n.key] = !n.unmeasured_is_null || (v > 0 && std::isfinite(v)) ? json(v) : json(nullptr);
  }
  for (const auto& t : kTexts) {
    const std::string& v = r.*t.member;
    j[t.key] = !t.unmeasured_is_null || !v.empty() ? json(v) : json(nullptr);
  }
  for (const auto& [key, member] : kFlags) j[key] = r.*member;
  j["model_file_bytes"] = r.model_file_bytes;
  j["notes"] = r.notes;
  j["ceiling_statistic"] = kCeilingStatistic;
  return j;
}

// The keys every roofline has (not ceiling_device, prediction), in a fixed order: the bits
// of Roofline::absent_keys.
const std::vector<std::string>& always_written_keys() {
  static const std::vector<std::string> keys = [] {
    const json computed = written(Roofline{});  // items() of a temporary would dangle
    std::vector<std::string> out;
    for (const auto& [key, _] : computed.items()) out.push_back(key);
    return out;
  }();
  return keys;
}

}  // namespace

json to_json(const Roofline& r) {
  json j = written(r);
  // Absent for the CPU, so CPU results read as before; a GPU run names the device whose
  // ceilings it was judged against.
  if (!r.device.empty()) j["ceiling_device"] = r.device;
  if (!r.prediction.is_null()) j["prediction"] = r.prediction;
  if (!r.best_variant.is_null()) j["best_variant"] = r.best_variant;
  const auto& keys = always_written_keys();
  for (size_t i = 0; i < keys.size(); ++i)
    if (r.absent_keys & (uint64_t{1} << i)) j.erase(keys[i]);
  return j;
}

Roofline roofline_from_json(const json& j) {
  Roofline r;
  for (const auto& n : kNumbers) r.*n.member = json_read::number<double>(j, n.key);
  for (const auto& t : kTexts) r.*t.member = json_read::text(j, t.key);
  for (const auto& [key, member] : kFlags) r.*member = json_read::field(j, key) == true;
  r.model_file_bytes = json_read::number<uint64_t>(j, "model_file_bytes");
  r.notes = json_read::strings(j, "notes");
  r.device = json_read::text(j, "ceiling_device");
  r.prediction = json_read::field(j, "prediction");
  r.best_variant = json_read::field(j, "best_variant");
  // Which of the keys every roofline has this one lacks; nothing is absent from a document
  // that is not an object.
  const auto& keys = always_written_keys();
  for (size_t i = 0; i < keys.size() && j.is_object(); ++i)
    if (!j.contains(keys[i])) r.absent_keys |= uint64_t{1} << i;
  return r;
}

std::optional<Roofline> roofline_optional_from_json(const json& j) {
  if (!j.is_object()) return std::nullopt;
  return roofline_from_json(j);
}

}  // namespace edgeprobe::result
