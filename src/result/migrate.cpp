#include "result/migrate.h"

#include <fmt/format.h>

#include <array>
#include <memory>
#include <string_view>

#include "core/bounded_input.h"
#include "core/digest.h"
#include "core/error.h"
#include "core/json_read.h"
#include "core/text.h"
#include "result/result.h"

namespace edgeprobe::result {
namespace {

using nlohmann::json;
using json_read::text;

// v1 recorded uname as "Linux 6.1.0 x86_64": the machine field is the last word.
std::string arch_from_kernel(const std::string& kernel) {
  static constexpr std::array<std::string_view, 7> kKnown{"x86_64", "aarch64", "arm64", "armv7l",
                                                          "armv8l", "riscv64", "i686"};
  const size_t space = kernel.find_last_of(' ');
  const std::string_view last = space == std::string::npos ? std::string_view(kernel)
                                                           : std::string_view(kernel).substr(space + 1);
  for (std::string_view arch : kKnown)
    if (last == arch) return std::string(arch);
  return "";
}

}  // namespace

json upgrade_provenance(const json& provenance) {
  if (!provenance.is_object() || provenance.contains("engine") || provenance.contains("device")) return provenance;
  const json& llama = json_read::object(provenance, "llama_cpp");
  const json& cpu = json_read::object(provenance, "cpu");
  const json& host = json_read::object(provenance, "host");
  const std::string hostname = text(host, "hostname");
  const std::string cpu_model = text(cpu, "model");
  const std::string kernel = text(host, "kernel");
  const json& features = json_read::object(cpu, "ggml_variant_features");

  json out = provenance;
  // Only the objects read above are dropped: a key of another shape is data we do not
  // understand, so it stays.
  for (const char* key : {"llama_cpp", "cpu", "host"})
    if (out.contains(key) && out[key].is_object()) out.erase(key);
  out["engine"] = {{"name", "llama.cpp"},
                   {"kind", "in-process"},
                   {"version", text(llama, "version")},
                   {"commit", text(llama, "commit")},
                   {"cpu_variant", text(cpu, "ggml_variant")},
                   {"cpu_variant_library", text(cpu, "ggml_variant_library")},
                   {"cpu_variant_features", features}};
  out["device"] = {{"id", hostname.empty() && cpu_model.empty() ? "" : device_id_from(hostname, cpu_model)},
                   {"arch", arch_from_kernel(kernel)},
                   {"cpu_model", cpu_model},
                   {"soc", ""},
                   {"board", ""},
                   {"os", ""},
                   {"kernel", kernel},
                   {"hostname", hostname}};
  return out;
}

json upgrade_report(const json& report) {
  if (!report.is_object()) return report;
  const auto version = report.find("schema_version");
  if (version == report.end() || !version->is_number_integer() || version->get<int64_t>() != 1) return report;
  json out = report;
  out["schema_version"] = 2;
  if (out.contains("provenance")) out["provenance"] = upgrade_provenance(out["provenance"]);
  if (out.contains("run") && out["run"].is_object() && out["run"].contains("provenance"))
    out["run"]["provenance"] = upgrade_provenance(out["run"]["provenance"]);
  return out;
}

std::string document_kind(const nlohmann::json& d) {
  if (!d.is_object()) return "";
  if (d.contains("kind") && d["kind"].is_string()) {
    const std::string kind = d["kind"];
    return kind == "bench" || kind == "session" || kind == "doctor" ? kind : "";
  }
  // Before the kind was written: a doctor report wraps its findings in "doctor" (a search
  // in "tune"), a session
  // lists "configs", a bench lists "results".
  if (d.contains("doctor") && d["doctor"].is_object()) return "doctor";
  if (d.contains("tune") && d["tune"].is_object()) return "doctor";  // a --tune search
  if (d.contains("configs") && d["configs"].is_array()) return "session";
  if (d.contains("results") && d["results"].is_array()) return "bench";
  return "";
}

void check_schema_version(const json& document, std::string_view name) {
  if (!document.is_object() || !document.contains("schema_version")) return;  // the oldest files carry none
  const json& v = document["schema_version"];
  if (!v.is_number_integer())
    throw_bad_input("{}: schema_version must be an integer, got {}", name,
                    one_line(v.dump(-1, ' ', false, json::error_handler_t::replace), 80));
  const bool newer = v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(kSchemaVersion)
                                            : v.get<int64_t>() > kSchemaVersion;
  if (newer)
    throw_bad_input("{}: result schema_version {} is newer than this edgeprobe reads (1 to {}): read it with the "
                    "edgeprobe that wrote it, or a newer one",
                    name, v.dump(), kSchemaVersion);
  if (v.get<int64_t>() < 1)
    throw_bad_input("{}: result schema_version {} is not one edgeprobe ever wrote (1 to {})", name, v.dump(),
                    kSchemaVersion);
}

namespace {

// The fields the readers (compare, report, doctor) take as numbers, strings or lists:
// each, where present, must be of that type (null stands for "not measured").
struct FieldTypes {
  std::string_view name;
  const json& doc;
  const std::string& where;

  [[noreturn]] void refuse(const std::string& key, const json& v, std::string_view expected) const {
    throw_bad_input("{}: {}{} must be {}, got {}", name, where, key, expected,
                    one_line(v.dump(-1, ' ', false, json::error_handler_t::replace), 80));
  }
  const json* get(const char* key) const {
    const auto it = doc.find(key);
    return it == doc.end() || it->is_null() ? nullptr : &*it;
  }
  void numbers(std::initializer_list<const char*> keys) const {
    for (const char* k : keys)
      if (const json* v = get(k); v && !v->is_number()) refuse(k, *v, "a number");
  }
  void strings(std::initializer_list<const char*> keys) const {
    for (const char* k : keys)
      if (const json* v = get(k); v && !v->is_string()) refuse(k, *v, "a string");
  }
  void objects(std::initializer_list<const char*> keys) const {
    for (const char* k : keys)
      if (const json* v = get(k); v && !v->is_object()) refuse(k, *v, "an object");
  }
  // A list of objects (or of numbers), each checked by `each`.
  template <typename F>
  void list(const char* key, F&& each) const {
    const json* v = get(key);
    if (!v) return;
    if (!v->is_array()) refuse(key, *v, "a list");
    for (size_t i = 0; i < v->size(); ++i) each((*v)[i], fmt::format("{}{}[{}]", where, key, i));
  }
};

void check_field_types(const json& d, std::string_view name) {
  const std::string top;
  const FieldTypes doc{name, d, top};
  doc.objects({"provenance"});
  if (const json* p = doc.get("provenance")) {
    const std::string where = "provenance.";
    FieldTypes{name, *p, where}.list("models", [&](const json& m, const std::string& at) {
      if (!m.is_object()) FieldTypes{name, d, top}.refuse(at, m, "an object");
      const std::string w = at + ".";
      FieldTypes{name, m, w}.strings({"path", "sha256", "name", "quant", "architecture"});
      FieldTypes{name, m, w}.numbers({"size_bytes", "n_params", "bits_per_weight"});
    });
    FieldTypes{name, *p, where}.objects({"engine", "device"});
  }
  doc.list("results", [&](const json& r, const std::string& at) {
    if (!r.is_object()) doc.refuse(at, r, "an object");
    const std::string w = at + ".";
    const FieldTypes result{name, r, w};
    result.strings({"test", "model_path", "status"});
    result.numbers({"model_index", "peak_rss_bytes"});
    result.objects({"config", "error", "load", "prefill", "decode", "ttft_ms"});
    if (const json* c = result.get("config")) {
      const std::string cw = w + "config.";
      FieldTypes{name, *c, cw}.numbers({"n_prompt", "n_gen", "n_depth", "n_threads", "poll", "n_batch", "n_ubatch",
                                        "flash_attn"});
      FieldTypes{name, *c, cw}.strings({"cpu_mask", "type_k", "type_v"});
    }
    result.objects({"verify"});
    if (const json* v = result.get("verify")) {
      const std::string vw = w + "verify.";
      const FieldTypes verify{name, *v, vw};
      for (const char* key : {"prompt_tokens", "tokens"})
        verify.list(key, [&](const json& t, const std::string& tat) {
          if (!t.is_number_integer()) doc.refuse(tat, t, "a token id (an integer)");
        });
      verify.objects({"reference"});
      if (const json* ref = verify.get("reference")) {
        const std::string rw = vw + "reference.";
        FieldTypes{name, *ref, rw}.strings({"source"});
        FieldTypes{name, *ref, rw}.numbers({"compared", "first_divergence"});
      }
    }
    result.objects({"speculative"});
    if (const json* sp = result.get("speculative")) {
      const std::string sw = w + "speculative.";
      const FieldTypes spec{name, *sp, sw};
      spec.objects({"draft", "check"});
      spec.numbers({"draft_max", "draft_min", "verify_steps", "plain_steps", "drafted", "accepted"});
      for (const char* key : {"positions", "pairs"})
        spec.list(key, [&](const json& e, const std::string& eat) {
          if (!e.is_object()) doc.refuse(eat, e, "an object");
          const std::string ew = eat + ".";
          FieldTypes{name, e, ew}.numbers({"drafted", "accepted", "tokens", "plain_ms", "spec_ms", "draft_ms",
                                           "verify_ms", "overhead_ms", "target_prefill_ms",
                                           "draft_prefill_ms"});
        });
    }
    result.list("repetitions", [&](const json& rep, const std::string& rat) {
      if (!rep.is_object()) doc.refuse(rat, rep, "an object");
      const std::string rw = rat + ".";
      const FieldTypes repetition{name, rep, rw};
      repetition.numbers({"index", "start_ns", "end_ns", "ttft_ms", "prefill_ms", "prefill_tokens_per_s", "decode_ms",
                          "decode_tokens_per_s", "peak_rss_bytes"});
      repetition.list("decode_step_ms", [&](const json& step, const std::string& sat) {
        if (!step.is_number()) doc.refuse(sat, step, "a number");
      });
    });
  });
  doc.list("configs", [&](const json& c, const std::string& at) {
    if (!c.is_object()) doc.refuse(at, c, "an object");
    const std::string w = at + ".";
    FieldTypes{name, c, w}.objects({"config", "error"});
    FieldTypes{name, c, w}.list("turns", [&](const json& t, const std::string& tat) {
      if (!t.is_object()) doc.refuse(tat, t, "an object");
      const std::string tw = tat + ".";
      FieldTypes{name, t, tw}.numbers({"round", "turn_index", "prompt_tokens", "context_tokens", "generated_tokens",
                                       "ttft_ms", "prefill_ms", "prefill_tokens_per_s", "decode_tokens_per_s", "e2e_ms"});
      FieldTypes{name, t, tw}.strings({"conversation_id", "stop_reason"});
    });
  });
}

}  // namespace

json read_upgraded_result_file(const std::string& path, std::string_view what) {
  return upgraded_result(read_json_bounded(path, what, kMaxResultBytes, kMaxResultDepth), source_name(path));
}

json read_upgraded_result_text(std::string_view text, std::string_view name) {
  return upgraded_result(parse_json_bounded(text, name, "result document", kMaxResultDepth), name);
}

json upgraded_result(const json& document, std::string_view name) {
  check_schema_version(document, name);
  json upgraded = upgrade_report(document);
  // A doctor report's results are its primary run's, one level down.
  const json& checked = upgraded.is_object() && upgraded.contains("doctor") && upgraded["doctor"].is_object() &&
                                upgraded["doctor"].contains("primary") && upgraded["doctor"]["primary"].is_object()
                            ? upgraded["doctor"]["primary"]
                            : upgraded;
  if (checked.is_object()) check_field_types(checked, name);
  return upgraded;
}

}  // namespace edgeprobe::result
