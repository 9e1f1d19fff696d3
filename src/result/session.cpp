#include "result/session.h"

#include <fmt/format.h>

#include <array>
#include <string_view>

#include "core/error.h"
#include "core/json_number.h"
#include "core/json_read.h"
#include "core/text.h"

namespace edgeprobe::result {

using nlohmann::json;

namespace {

// The keys every turn has had since failed turns were recorded, in to_json's order; a
// turn's absent_keys has bit i set when a document it was read from lacked kTurnKeys[i].
constexpr std::array<const char*, 22> kTurnKeys{
    "round",           "conversation_id",  "turn_index",     "prompt_tokens",
    "context_tokens",  "generated_tokens", "stop_reason",    "ttft_ms",
    "prefill_ms",      "prefill_tokens_per_s", "decode_tokens_per_s", "e2e_ms",
    "decode_step_ms",  "start_ns",         "prefill_end_ns", "end_ns",
    "reply",           "reply_tokens",     "telemetry",      "missed_frame_share_prefill",
    "missed_frame_share_decode", "error"};
static_assert(kTurnKeys.size() <= 32, "Turn::absent_keys has a bit per key");

// A model's pieces can split a multi-byte character (byte-fallback tokens), so a reply
// may not be valid UTF-8; JSON must be. Invalid bytes become U+FFFD.
std::string replace_invalid_utf8(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

// One error for a mistyped field of a document this module reads strictly.
[[noreturn]] void refuse_field(std::string_view what, std::string_view key, const json& v, std::string_view expected) {
  throw_bad_input("{} field '{}' must be {}, got {}", what, key, expected,
                  one_line(v.dump(-1, ' ', false, json::error_handler_t::replace), 80));
}


json to_json(const FrameCounts& f) { return {{"due", f.due}, {"missed", f.missed}, {"late", f.late}}; }

json to_json(const std::optional<ErrorInfo>& e) {
  return e ? json{{"kind", e->kind}, {"message", e->message}} : json(nullptr);
}

// Reads one turn document field by field: a missing key is recorded in absent_keys and
// leaves the default; a key of the wrong type is refused by name, so a corrupt stored row
// reads as one clear error, not as nlohmann's type_error from somewhere in a reporter.
class TurnReader {
 public:
  TurnReader(const json& j, Turn& t) : j_(j), t_(t) {}

  // The value of kTurnKeys[bit], or nullptr when the document lacks it.
  const json* known(size_t bit) {
    const auto it = j_.find(kTurnKeys[bit]);
    if (it != j_.end()) return &*it;
    t_.absent_keys |= 1u << bit;
    return nullptr;
  }
  const json* optional_key(const char* key) const {
    const auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }

  template <typename Int>
  void integer(size_t bit, Int& out) {
    if (const json* v = known(bit)) out = integer_value<Int>(kTurnKeys[bit], *v);
  }
  void string(size_t bit, std::string& out) {
    if (const json* v = known(bit)) {
      if (!v->is_string()) refuse(kTurnKeys[bit], *v, "a string");
      out = v->get<std::string>();
    }
  }
  void number(size_t bit, std::optional<double>& out) {
    if (const json* v = known(bit)) {
      if (!v->is_null() && !v->is_number()) refuse(kTurnKeys[bit], *v, "a number or null");
      out = v->is_null() ? std::nullopt : std::optional<double>(v->get<double>());
    }
  }
  void numbers(size_t bit, std::vector<double>& out) {
    if (const json* v = known(bit)) {
      if (!v->is_array()) refuse(kTurnKeys[bit], *v, "a list of numbers");
      for (const auto& x : *v) {
        if (!x.is_number()) refuse(kTurnKeys[bit], *v, "a list of numbers");
        out.push_back(x.get<double>());
      }
    }
  }
  void tokens(size_t bit, std::vector<int32_t>& out) {
    if (const json* v = known(bit)) {
      if (!v->is_array()) refuse(kTurnKeys[bit], *v, "a list of token ids");
      for (const auto& x : *v) out.push_back(integer_value<int32_t>(kTurnKeys[bit], x, "a list of token ids", v));
    }
  }
  void error(size_t bit, std::optional<ErrorInfo>& out) {
    const json* v = known(bit);
    if (!v || v->is_null()) return;
    if (!v->is_object()) refuse("error", *v, "an object or null");
    ErrorInfo e{"environment", ""};
    for (auto [key, field] : {std::pair{"kind", &e.kind}, std::pair{"message", &e.message}}) {
      const auto it = v->find(key);
      if (it == v->end()) continue;
      if (!it->is_string()) refuse(fmt::format("error.{}", key), *it, "a string");
      *field = it->get<std::string>();
    }
    out = std::move(e);
  }
  void frames(const char* key, std::optional<FrameCounts>& out) const {
    const json* v = optional_key(key);
    if (!v) return;
    if (!v->is_object()) refuse(key, *v, "an object of frame counts");
    FrameCounts f;
    for (auto [name, field] : {std::pair{"due", &f.due}, std::pair{"missed", &f.missed}, std::pair{"late", &f.late}})
      if (const auto it = v->find(name); it != v->end()) *field = integer_value<int64_t>(fmt::format("{}.{}", key, name), *it);
    out = f;
  }

  [[noreturn]] static void refuse(std::string_view key, const json& v, std::string_view expected) {
    refuse_field("turn", key, v, expected);
  }

 private:
  // An integer that fits Int (core/json_number.h: 5.0 is 5, 2.5 and 2^40 for an int are
  // refused); `whole` is the value to show when `v` is an element of it.
  template <typename Int>
  static Int integer_value(std::string_view key, const json& v, std::string_view expected = "an integer",
                           const json* whole = nullptr) {
    const auto n = exact_integer<Int>(v);
    if (!n) refuse(key, whole ? *whole : v, expected);
    return *n;
  }

  const json& j_;
  Turn& t_;
};

}  // namespace

bool Turn::had(std::string_view key) const {
  for (size_t bit = 0; bit < kTurnKeys.size(); ++bit)
    if (key == kTurnKeys[bit]) return (absent_keys & (1u << bit)) == 0;
  return true;
}

json to_json(const Turn& t) {
  json j = {{"round", t.round},
            {"conversation_id", t.conversation_id},
            {"turn_index", t.turn_index},
            {"prompt_tokens", t.prompt_tokens},
            {"context_tokens", t.context_tokens},
            {"generated_tokens", t.generated_tokens},
            {"stop_reason", t.stop_reason},
            {"ttft_ms", json_read::number_or_null(t.ttft_ms)},
            {"prefill_ms", json_read::number_or_null(t.prefill_ms)},
            {"prefill_tokens_per_s", json_read::number_or_null(t.prefill_tokens_per_s)},
            {"decode_tokens_per_s", json_read::number_or_null(t.decode_tokens_per_s)},
            {"e2e_ms", json_read::number_or_null(t.e2e_ms)},
            {"decode_step_ms", t.decode_step_ms},
            {"start_ns", t.start_ns},
            {"prefill_end_ns", t.prefill_end_ns},
            {"end_ns", t.end_ns},
            {"reply", replace_invalid_utf8(t.reply)},
            {"reply_tokens", t.reply_tokens},
            {"telemetry", t.telemetry},
            {"missed_frame_share_prefill", json_read::number_or_null(t.missed_frame_share_prefill)},
            {"missed_frame_share_decode", json_read::number_or_null(t.missed_frame_share_decode)},
            {"error", to_json(t.error)}};
  for (size_t bit = 0; bit < kTurnKeys.size(); ++bit)
    if (t.absent_keys & (1u << bit)) j.erase(kTurnKeys[bit]);
  if (t.frames_prefill) j["frames_prefill"] = to_json(*t.frames_prefill);
  if (t.frames_decode) j["frames_decode"] = to_json(*t.frames_decode);
  if (t.request) j["request"] = *t.request;
  if (t.prefill_remote) j["prefill_remote"] = *t.prefill_remote;
  return j;
}

Turn turn_from_json(const json& j) {
  if (!j.is_object()) TurnReader::refuse("(the turn itself)", j, "an object");
  Turn t;
  TurnReader r(j, t);
  r.integer(0, t.round);
  r.string(1, t.conversation_id);
  r.integer(2, t.turn_index);
  r.integer(3, t.prompt_tokens);
  r.integer(4, t.context_tokens);
  r.integer(5, t.generated_tokens);
  r.string(6, t.stop_reason);
  r.number(7, t.ttft_ms);
  r.number(8, t.prefill_ms);
  r.number(9, t.prefill_tokens_per_s);
  r.number(10, t.decode_tokens_per_s);
  r.number(11, t.e2e_ms);
  r.numbers(12, t.decode_step_ms);
  r.integer(13, t.start_ns);
  r.integer(14, t.prefill_end_ns);
  r.integer(15, t.end_ns);
  r.string(16, t.reply);
  r.tokens(17, t.reply_tokens);
  if (const json* v = r.known(18)) t.telemetry = *v;
  r.number(19, t.missed_frame_share_prefill);
  r.number(20, t.missed_frame_share_decode);
  r.error(21, t.error);
  r.frames("frames_prefill", t.frames_prefill);
  r.frames("frames_decode", t.frames_decode);
  if (const json* v = r.optional_key("request")) t.request = *v;
  if (const json* v = r.optional_key("prefill_remote")) t.prefill_remote = *v;
  return t;
}

json SessionConfig::to_json() const {
  json j = {{"model_path", model_path}, {"n_ctx", n_ctx}, {"max_tokens", max_tokens}, {"n_batch", n_batch},
            {"n_threads", n_threads}};
  if (n_gpu_layers != kDefaultGpuLayers) j["n_gpu_layers"] = n_gpu_layers;
  if (!devices.empty()) j["devices"] = devices;
  if (!op_offload) j["op_offload"] = false;
  return j;
}

SessionConfig session_config_from_json(const json& j) {
  constexpr std::string_view kWhat = "session config";
  if (!j.is_object()) refuse_field(kWhat, "(the config itself)", j, "an object");
  SessionConfig c;
  auto integer = [&](const char* key, int& out) {
    if (const auto it = j.find(key); it != j.end()) {
      const auto n = exact_integer<int>(*it);
      if (!n) refuse_field(kWhat, key, *it, "an integer");
      out = *n;
    }
  };
  auto string = [&](const char* key, std::string& out) {
    if (const auto it = j.find(key); it != j.end()) {
      if (!it->is_string()) refuse_field(kWhat, key, *it, "a string");
      out = it->get<std::string>();
    }
  };
  string("model_path", c.model_path);
  integer("n_ctx", c.n_ctx);
  integer("max_tokens", c.max_tokens);
  integer("n_batch", c.n_batch);
  integer("n_threads", c.n_threads);
  integer("n_gpu_layers", c.n_gpu_layers);
  string("devices", c.devices);
  if (const auto it = j.find("op_offload"); it != j.end()) {
    if (!it->is_boolean()) refuse_field(kWhat, "op_offload", *it, "true or false");
    c.op_offload = it->get<bool>();
  }
  return c;
}

json to_json(const SessionReport& r) {
  json configs = json::array();
  for (const auto& c : r.configs) {
    json turns = json::array();
    for (const auto& t : c.turns) turns.push_back(to_json(t));
    configs.push_back({{"ordinal", c.ordinal},
                       {"config", c.config.to_json()},
                       {"error", to_json(c.error)},
                       {"analysis", c.analysis},
                       {"turns", std::move(turns)}});
  }
  return {{"schema_version", r.schema_version},
          {"kind", "session"},
          {"run_id", r.run_id},
          {"provenance", to_json(r.provenance)},
          {"telemetry_unavailable", r.telemetry_unavailable},
          {"configs", configs}};
}

SessionReport session_report_from_json(const json& j) {
  SessionReport r;
  r.schema_version = j.value("schema_version", kSchemaVersion);
  // A run id out of int64's range (a float like 4.4e21) is no id: 0, not undefined behaviour.
  if (const auto it = j.find("run_id"); it != j.end()) r.run_id = exact_integer<int64_t>(*it).value_or(0);
  r.provenance = provenance_from_json(j.value("provenance", json::object()));
  if (j.contains("telemetry_unavailable") && j["telemetry_unavailable"].is_array())
    for (const auto& u : j["telemetry_unavailable"])
      if (u.is_string()) r.telemetry_unavailable.push_back(u.get<std::string>());
  for (const auto& c : j.value("configs", json::array())) {
    SessionConfigResult cr;
    cr.ordinal = c.value("ordinal", 0);
    cr.config = session_config_from_json(c.value("config", json::object()));
    cr.analysis = c.value("analysis", json(nullptr));
    for (const auto& t : c.value("turns", json::array())) cr.turns.push_back(turn_from_json(t));
    if (c.contains("error") && c["error"].is_object())
      cr.error = ErrorInfo{c["error"].value("kind", "environment"), c["error"].value("message", "")};
    r.configs.push_back(std::move(cr));
  }
  return r;
}

std::vector<std::string> session_errors(const SessionReport& report, int* exit_code) {
  std::vector<std::string> errors;
  int code = 0;
  for (const auto& c : report.configs) {
    if (c.error) {
      errors.push_back(fmt::format("config {}: {}", c.ordinal, c.error->message));
      if (code == 0) code = static_cast<int>(error_kind_from_name(c.error->kind));
    }
    for (const auto& t : c.turns) {
      if (!t.error) continue;
      errors.push_back(fmt::format("config {} round {} {} turn {}: {}", c.ordinal, t.round,
                                   t.had("conversation_id") ? t.conversation_id : "?", t.turn_index,
                                   t.error->message));
      if (code == 0) code = static_cast<int>(error_kind_from_name(t.error->kind));
    }
  }
  if (exit_code) *exit_code = code;
  return errors;
}

}  // namespace edgeprobe::result
