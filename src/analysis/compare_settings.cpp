// Which settings make two runs comparable, and which differ between them: provenance and
// configuration fields read from the result documents (analysis/compare.h).
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "analysis/compare.h"
#include "analysis/compare_internal.h"
#include "result/migrate.h"

namespace edgeprobe::analysis {
namespace {

using detail::value_text;

// Long identifiers (SHA-256, commits) are cut to 12 characters unless that would hide
// where they differ.
std::pair<std::string, std::string> shorten_pair(const std::string& a, const std::string& b) {
  constexpr size_t kShort = 12, kLong = 80;
  auto cut = [](const std::string& s, size_t len) { return s.size() > len ? s.substr(0, len) + "…" : s; };
  if (a.substr(0, kShort) != b.substr(0, kShort)) return {cut(a, kShort + 4), cut(b, kShort + 4)};
  return {cut(a, kLong), cut(b, kLong)};
}

}  // namespace

std::string Mismatch::message() const {
  auto [sa, sb] = shorten_pair(a, b);
  return fmt::format("{} differs ({} vs {})", label, sa, sb);
}

std::vector<Mismatch> comparability_mismatches(const std::vector<FieldCheck>& fields) {
  std::vector<Mismatch> out;
  for (const FieldCheck& f : fields) {
    if (!f.a && !f.b) continue;
    if (f.a && f.b && *f.a == *f.b) continue;
    out.push_back({f.label, f.a.value_or("(absent)"), f.b.value_or("(absent)")});
  }
  return out;
}

const std::vector<ProvenanceField>& default_comparability_fields() {
  // result/result.h (schema v2): provenance.models[] (one per model file) and the engine.
  // The device is not here: comparing two devices on the same model is the point.
  static const std::vector<ProvenanceField> fields{
      {"model sha256", {"/models/*/sha256", "/model/sha256"}, ""},
      {"quantisation", {"/models/*/quant", "/model/quant"}, ""},
      {"engine", {"/engine/name"}, ""},
      {"engine version", {"/engine/commit", "/llama_cpp/commit", "/engine/version", "/llama_cpp/version"}, ""},
      // How each repetition or turn ran: edgeprobe's own token loop, or one completion
      // request (--api completions|chat, in-process or at an endpoint), whose TTFT also
      // holds the template and the request. Results from before the field ran the loop.
      {"request path", {"/request_path"}, "token"},
  };
  return fields;
}

std::optional<std::string> read_field(const nlohmann::json& object, const std::vector<std::string>& pointers) {
  for (const std::string& pointer : pointers) {
    if (!object.is_object()) return std::nullopt;
    const size_t star = pointer.find("/*");
    if (star == std::string::npos) {
      const nlohmann::json::json_pointer p(pointer);
      if (object.contains(p) && !object.at(p).is_null()) return value_text(object.at(p));
      continue;
    }
    const nlohmann::json::json_pointer array_ptr(pointer.substr(0, star));
    if (!object.contains(array_ptr) || !object.at(array_ptr).is_array()) continue;
    const std::string rest = pointer.substr(star + 2);
    std::string joined;
    bool any = false;
    for (const nlohmann::json& element : object.at(array_ptr)) {
      std::optional<std::string> v;
      if (rest.empty()) {
        v = value_text(element);
      } else if (element.is_object()) {
        v = read_field(element, {rest});
      }
      joined += (any ? "," : "") + v.value_or("(absent)");
      any = true;
    }
    if (any) return joined;
  }
  return std::nullopt;
}

std::vector<FieldCheck> provenance_checks(const nlohmann::json& pa, const nlohmann::json& pb,
                                          const std::vector<ProvenanceField>& fields) {
  std::vector<FieldCheck> checks;
  for (const ProvenanceField& f : fields) {
    auto read = [&](const nlohmann::json& p) {
      auto v = read_field(p, f.pointers);
      return v || f.absent_means.empty() ? v : std::optional<std::string>(f.absent_means);
    };
    checks.push_back({f.label, read(pa), read(pb)});
  }
  return checks;
}

std::string SettingDifference::text() const {
  // Hashes are cut where they still differ; text with spaces (a CPU name, a feature list)
  // is kept whole up to a line's length.
  const bool identifiers = a.find(' ') == std::string::npos && b.find(' ') == std::string::npos;
  auto cut = [](const std::string& s) { return s.size() > 160 ? s.substr(0, 160) + "…" : s; };
  if (identifiers) {
    auto [sa, sb] = shorten_pair(a, b);
    return fmt::format("{}: {} → {}", label, sa, sb);
  }
  return fmt::format("{}: {} → {}", label, cut(a), cut(b));
}

namespace {

// Provenance fields a person wants to see when they differ; the comparability fields
// (model, quantisation, engine, request path) come first, from the same mapping.
const std::vector<ProvenanceField>& listed_provenance_fields() {
  static const std::vector<ProvenanceField> fields = [] {
    std::vector<ProvenanceField> f;
    for (const ProvenanceField& c : default_comparability_fields())
      if (c.label != "engine version") f.push_back(c);  // split into version and commit below
    const std::vector<ProvenanceField> more{
        {"engine version", {"/engine/version", "/llama_cpp/version"}, ""},
        {"engine commit", {"/engine/commit", "/llama_cpp/commit"}, ""},
        {"engine kind", {"/engine/kind"}, ""},
        {"ggml cpu variant", {"/engine/cpu_variant"}, ""},
        {"endpoint", {"/engine/details/endpoint"}, ""},
        {"server model", {"/engine/details/server_model"}, ""},
        {"edgeprobe version", {"/edgeprobe_version"}, ""},
        {"edgeprobe commit", {"/build/git_commit"}, ""},
        {"edgeprobe build type", {"/build/build_type"}, ""},
        {"compiler", {"/build/compiler"}, ""},
        {"device id", {"/device/id"}, ""},
        {"device arch", {"/device/arch"}, ""},
        {"device cpu", {"/device/cpu_model"}, ""},
        {"device soc", {"/device/soc"}, ""},
        {"device board", {"/device/board"}, ""},
        {"device os", {"/device/os"}, ""},
        {"device kernel", {"/device/kernel"}, ""},
        {"hostname", {"/device/hostname"}, ""},
        {"emulated", {"/emulated"}, "false"},
    };
    f.insert(f.end(), more.begin(), more.end());
    return f;
  }();
  return fields;
}

// The names a person reads for the configuration fields of result/result.h; others keep
// their own.
std::string config_field_label(const std::string& key) {
  static const std::map<std::string, std::string> kLabels{
      {"n_threads", "threads"},      {"cpu_mask", "cpu mask"},      {"cpu_strict", "cpu strict"},
      {"n_batch", "batch"},          {"n_ubatch", "ubatch"},        {"flash_attn", "flash attn"},
      {"type_k", "KV type K"},       {"type_v", "KV type V"},       {"use_mmap", "mmap"},
      {"n_prompt", "prompt tokens"}, {"n_gen", "generated tokens"}, {"n_depth", "depth"},
      {"n_ctx", "context"}};
  const auto it = kLabels.find(key);
  return it == kLabels.end() ? key : it->second;
}

// An object as "K=V K=V", an empty string as "(empty)".
std::string setting_text(const nlohmann::json& v) {
  if (v.is_object()) {
    std::string out;
    for (const auto& [k, x] : v.items()) out += (out.empty() ? "" : " ") + k + "=" + value_text(x);
    return out.empty() ? "(none)" : out;
  }
  const std::string t = value_text(v);
  return t.empty() ? "(empty)" : t;
}

// Each configuration field's values over the document's tests, in order, without repeats.
std::map<std::string, std::string> config_values(const nlohmann::json& doc) {
  std::vector<nlohmann::json> configs;
  const std::string kind = result::document_kind(doc);
  if (kind == "bench")
    for (const nlohmann::json& r : doc["results"])
      if (r.is_object() && r.contains("config") && r["config"].is_object()) configs.push_back(r["config"]);
  if (kind == "session")
    for (const nlohmann::json& c : doc["configs"])
      if (c.is_object() && c.contains("config") && c["config"].is_object()) configs.push_back(c["config"]);
  std::map<std::string, std::vector<std::string>> seen;
  for (const nlohmann::json& config : configs)
    for (const auto& [key, value] : config.items()) {
      if (key == "model_path") continue;  // the model's SHA-256 is checked instead
      std::vector<std::string>& values = seen[key];
      const std::string t = setting_text(value);
      if (std::find(values.begin(), values.end(), t) == values.end()) values.push_back(t);
    }
  std::map<std::string, std::string> out;
  for (const auto& [key, values] : seen) {
    std::string joined;
    for (const std::string& v : values) joined += (joined.empty() ? "" : ",") + v;
    out[key] = joined;
  }
  return out;
}

}  // namespace

std::vector<SettingDifference> setting_differences(const nlohmann::json& a, const nlohmann::json& b) {
  std::vector<SettingDifference> out;
  const nlohmann::json pa = extract_provenance(a), pb = extract_provenance(b);
  for (const ProvenanceField& f : listed_provenance_fields()) {
    auto read = [&](const nlohmann::json& p) -> std::optional<std::string> {
      if (!p.is_object()) return f.absent_means.empty() ? std::nullopt : std::optional(f.absent_means);
      for (const std::string& pointer : f.pointers) {
        if (pointer.find("/*") != std::string::npos) {
          if (auto v = read_field(p, {pointer})) return v;
          continue;
        }
        const nlohmann::json::json_pointer ptr(pointer);
        if (p.contains(ptr) && !p.at(ptr).is_null()) return setting_text(p.at(ptr));
      }
      return f.absent_means.empty() ? std::nullopt : std::optional(f.absent_means);
    };
    const auto va = read(pa), vb = read(pb);
    if (va != vb) out.push_back({f.label, va.value_or("(absent)"), vb.value_or("(absent)"), false});
    if (f.label == "ggml cpu variant") {
      // The variants' features: only those one side has (zen4 against sse42 is AVX ... on
      // A and none on B), not two long lists that mostly agree.
      const nlohmann::json::json_pointer ptr("/engine/cpu_variant_features");
      auto features = [&](const nlohmann::json& p) {
        std::vector<std::string> on;
        if (p.is_object() && p.contains(ptr) && p.at(ptr).is_object())
          for (const auto& [k, v] : p.at(ptr).items())
            if (value_text(v) != "0" && v != false) on.push_back(k);
        return on;
      };
      const std::vector<std::string> fa = features(pa), fb = features(pb);
      auto only = [](const std::vector<std::string>& xs, const std::vector<std::string>& ys) {
        std::string out;
        for (const std::string& x : xs)
          if (std::find(ys.begin(), ys.end(), x) == ys.end()) out += (out.empty() ? "" : " ") + x;
        return out.empty() ? std::string("(none)") : out;
      };
      if (fa != fb) out.push_back({"ggml cpu features on one side only", only(fa, fb), only(fb, fa), false});
    }
  }
  const auto ca = config_values(a), cb = config_values(b);
  std::vector<std::string> keys;
  for (const auto& [k, _] : ca) keys.push_back(k);
  for (const auto& [k, _] : cb)
    if (!ca.contains(k)) keys.push_back(k);
  for (const std::string& k : keys) {
    const auto ia = ca.find(k), ib = cb.find(k);
    const std::string va = ia == ca.end() ? "(absent)" : ia->second,
                      vb = ib == cb.end() ? "(absent)" : ib->second;
    if (va != vb) out.push_back({config_field_label(k), va, vb, true});
  }
  return out;
}

}  // namespace edgeprobe::analysis
