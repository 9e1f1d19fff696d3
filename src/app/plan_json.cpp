// Plans from JSON: the one reader of outside plan bytes (`run --plan`, a lab's device, a
// stored plan for --resume), apart from validation and the engines so that the fuzz
// target (tests/app/plan_fuzz.cpp) builds it from this file and core alone.
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <type_traits>
#include <utility>

#include "app/plan.h"
#include "core/bounded_input.h"
#include "core/error.h"
#include "core/json_number.h"
#include "core/text.h"

namespace edgeprobe::app {

using nlohmann::json;

namespace {

// Plans are outside bytes: every value is read as exactly the type its field has, and
// what that type cannot hold is refused rather than wrapped or truncated (a repetition
// count of 2^32 + 1 is not 1, 2.5 repetitions are not 2). Refusals name the key and echo
// at most a short escaped prefix of the value.
[[noreturn]] void refuse_value(std::string_view where, const std::string& key, const json& v,
                               std::string_view why) {
  throw_bad_input("{}: '{}' {}, got {}", where, key, why,
                  one_line(v.dump(-1, ' ', false, json::error_handler_t::replace), 80));
}

template <typename T>
struct is_vector : std::false_type {};
template <typename T>
struct is_vector<std::vector<T>> : std::true_type {};

template <typename T>
T value_as(const json& v, std::string_view where, const std::string& key) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) refuse_value(where, key, v, "must be true or false");
    return v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number()) refuse_value(where, key, v, "must be an integer");
    const std::optional<T> n = exact_integer<T>(v);
    if (!n && v.is_number_float() && std::isfinite(v.get<double>()) &&
        v.get<double>() != std::floor(v.get<double>()))
      refuse_value(where, key, v, "must be a whole number");
    if (!n)
      refuse_value(where, key, v,
                   fmt::format("is out of range {}..{}", std::numeric_limits<T>::min(),
                               std::numeric_limits<T>::max()));
    return *n;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) refuse_value(where, key, v, "must be a number");
    const double d = v.get<double>();
    if (!std::isfinite(d)) refuse_value(where, key, v, "must be a finite number");
    return static_cast<T>(d);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) refuse_value(where, key, v, "must be a string");
    const auto& s = v.get_ref<const std::string&>();
    // A NUL would cut a path short where the OS reads it; invalid UTF-8 cannot be stored.
    if (s.find('\0') != std::string::npos) refuse_value(where, key, v, "holds a NUL character");
    if (!valid_utf8(s)) refuse_value(where, key, v, "is not valid UTF-8");
    return s;
  } else if constexpr (is_vector<T>::value) {
    if (!v.is_array()) refuse_value(where, key, v, "must be a list");
    T out;
    for (size_t i = 0; i < v.size(); ++i)
      out.push_back(value_as<typename T::value_type>(v[i], where, fmt::format("{}[{}]", key, i)));
    return out;
  } else {
    static_assert(std::is_same_v<T, std::map<std::string, double>>);
    if (!v.is_object()) refuse_value(where, key, v, "must be an object of numbers");
    T out;
    for (const auto& [k, item] : v.items())
      out[value_as<std::string>(json(k), where, key)] = value_as<double>(item, where, key + "." + k);
    return out;
  }
}

// Reads `key` into `out` when present, with the type the field has.
template <typename T>
void read(const json& j, const char* key, T& out, std::string_view where = "plan") {
  if (!j.contains(key)) return;
  out = value_as<T>(j.at(key), where, key);
}

// An object-valued key: present means an object (a list or number in its place is refused,
// not ignored).
const json& object_at(const json& j, const char* key, std::string_view where) {
  const json& v = j.at(key);
  if (!v.is_object()) refuse_value(where, key, v, "must be an object");
  return v;
}

void reject_unknown_keys(const json& j, std::initializer_list<const char*> known, const char* where) {
  const std::set<std::string> names(known.begin(), known.end());
  for (const auto& [k, v] : j.items())
    if (!names.contains(k)) throw_bad_input("{}: unknown key '{}'", where, one_line(k, 80));
}

void read_environment(const json& j, Environment& e) {
  reject_unknown_keys(j,
                      {"cpu_variant", "sample_hz", "sysfs_root", "prefill_remote", "prefill_token_file",
                       "prefill_compare_local", "prefill_transfer", "prefill_remote_required", "endpoint",
                       "api_model", "api", "request_timeout_s", "server_pid"},
                      "plan env");
  read(j, "cpu_variant", e.cpu_variant, "plan env");
  read(j, "sample_hz", e.sample_hz, "plan env");
  read(j, "sysfs_root", e.sysfs_root, "plan env");
  read(j, "prefill_remote", e.prefill_remote, "plan env");
  read(j, "prefill_token_file", e.prefill_token_file, "plan env");
  read(j, "prefill_compare_local", e.prefill_compare_local, "plan env");
  read(j, "prefill_transfer", e.prefill_transfer, "plan env");
  read(j, "prefill_remote_required", e.prefill_remote_required, "plan env");
  read(j, "endpoint", e.endpoint, "plan env");
  read(j, "api_model", e.api_model, "plan env");
  read(j, "api", e.api, "plan env");
  read(j, "request_timeout_s", e.request_timeout_s, "plan env");
  read(j, "server_pid", e.server_pid, "plan env");
}

workload::SweepSpec sweep_from_json(const json& j) {
  if (!j.is_object()) throw_bad_input("plan: 'sweep' must be an object");
  reject_unknown_keys(
      j,
      {"models", "n_prompt", "n_gen", "prompt_gen", "n_depth", "threads", "cpu_masks", "cpu_strict", "poll",
       "n_batch", "n_ubatch", "flash_attn", "type_k", "type_v", "use_mmap", "n_gpu_layers", "devices", "split_mode",
       "main_gpu", "op_offload"},
      "plan sweep");
  workload::SweepSpec s = BenchPlan::default_sweep();
  read(j, "models", s.models, "plan sweep");
  read(j, "n_prompt", s.n_prompt, "plan sweep");
  read(j, "n_gen", s.n_gen, "plan sweep");
  if (j.contains("prompt_gen")) {
    s.prompt_gen.clear();
    for (const auto& pair :
         value_as<std::vector<std::vector<int>>>(j["prompt_gen"], "plan sweep", "prompt_gen")) {
      if (pair.size() != 2)
        throw_bad_input("plan sweep: prompt_gen entries are [prompt, generate] pairs, got a list of {}",
                        pair.size());
      s.prompt_gen.emplace_back(pair[0], pair[1]);
    }
  }
  read(j, "n_depth", s.n_depth, "plan sweep");
  read(j, "threads", s.threads, "plan sweep");
  read(j, "cpu_masks", s.cpu_masks, "plan sweep");
  read(j, "cpu_strict", s.cpu_strict, "plan sweep");
  read(j, "poll", s.poll, "plan sweep");
  read(j, "n_batch", s.n_batch, "plan sweep");
  read(j, "n_ubatch", s.n_ubatch, "plan sweep");
  read(j, "flash_attn", s.flash_attn, "plan sweep");
  read(j, "type_k", s.type_k, "plan sweep");
  read(j, "type_v", s.type_v, "plan sweep");
  read(j, "use_mmap", s.use_mmap, "plan sweep");
  read(j, "n_gpu_layers", s.n_gpu_layers, "plan sweep");
  read(j, "devices", s.devices, "plan sweep");
  read(j, "split_mode", s.split_mode, "plan sweep");
  read(j, "main_gpu", s.main_gpu, "plan sweep");
  read(j, "op_offload", s.op_offload, "plan sweep");
  return s;
}

// A key every entry of a list must have.
const json& required(const json& j, const char* key, std::string_view where, const std::string& entry) {
  if (!j.is_object() || !j.contains(key))
    throw_bad_input("{}: {} needs \"{}\", got {}", where, entry, key,
                    one_line(j.dump(-1, ' ', false, json::error_handler_t::replace), 80));
  return j.at(key);
}

template <typename T>
T required_as(const json& j, const char* key, std::string_view where, const std::string& entry) {
  return value_as<T>(required(j, key, where, entry), where, entry + "." + key);
}

const json& list_at(const json& j, const char* key, std::string_view where) {
  const json& v = j.at(key);
  if (!v.is_array()) refuse_value(where, key, v, "must be a list");
  return v;
}

// A case as to_json(BenchPlan) writes it: {"model_path", "config": result::to_json(case)}.
workload::TestCase case_from_json(const json& c, const std::string& entry) {
  constexpr std::string_view kWhere = "bench plan";
  const json& config = required(c, "config", kWhere, entry);
  const std::string e = entry + ".config";
  workload::TestCase t;
  t.model_path = required_as<std::string>(c, "model_path", kWhere, entry);
  t.n_prompt = required_as<int>(config, "n_prompt", kWhere, e);
  t.n_gen = required_as<int>(config, "n_gen", kWhere, e);
  t.kind = t.n_prompt > 0 && t.n_gen > 0 ? workload::TestKind::kPromptGenerate
           : t.n_prompt > 0              ? workload::TestKind::kPrompt
                                         : workload::TestKind::kGenerate;
  t.n_depth = required_as<int>(config, "n_depth", kWhere, e);
  t.n_threads = required_as<int>(config, "n_threads", kWhere, e);
  t.cpu_mask = required_as<std::string>(config, "cpu_mask", kWhere, e);
  t.cpu_strict = required_as<bool>(config, "cpu_strict", kWhere, e);
  t.poll = required_as<int>(config, "poll", kWhere, e);
  t.n_batch = required_as<int>(config, "n_batch", kWhere, e);
  t.n_ubatch = required_as<int>(config, "n_ubatch", kWhere, e);
  t.flash_attn = required_as<int>(config, "flash_attn", kWhere, e);
  t.type_k = required_as<std::string>(config, "type_k", kWhere, e);
  t.type_v = required_as<std::string>(config, "type_v", kWhere, e);
  t.use_mmap = required_as<bool>(config, "use_mmap", kWhere, e);
  // GPU settings as result::to_json(TestCase) writes them: absent means every layer on
  // the CPU (a plan written before them ran so too).
  t.n_gpu_layers = 0;
  read(config, "n_gpu_layers", t.n_gpu_layers, kWhere);
  read(config, "devices", t.devices, kWhere);
  read(config, "split_mode", t.split_mode, kWhere);
  read(config, "main_gpu", t.main_gpu, kWhere);
  read(config, "op_offload", t.op_offload, kWhere);
  return t;
}

// A plan's "completed" list: objects with an index and a unit object, as streamed. Each
// field the jobs read back is checked here, so a mistyped unit is bad input, not a crash
// in the middle of a resumed job.
json completed_units(const json& j, const char* index_key, const char* unit_key) {
  constexpr std::string_view kWhere = "plan completed";
  if (!j.is_array()) refuse_value("plan", "completed", j, "must be a list");
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string entry = fmt::format("completed[{}]", i);
    const json& u = j[i];
    required_as<uint32_t>(u, index_key, kWhere, entry);
    const json& unit = required(u, unit_key, kWhere, entry);
    const std::string e = entry + "." + unit_key;
    if (!unit.is_object()) refuse_value(kWhere, e, unit, "must be an object");
    if (std::string_view(unit_key) == "repetition") {
      required_as<int>(unit, "index", kWhere, e);
      for (const char* key : {"start_ns", "end_ns", "peak_rss_bytes"})
        if (unit.contains(key) && !unit[key].is_null()) required_as<int64_t>(unit, key, kWhere, e);
      for (const char* key :
           {"ttft_ms", "prefill_ms", "prefill_tokens_per_s", "decode_ms", "decode_tokens_per_s"})
        if (unit.contains(key) && !unit[key].is_null()) required_as<double>(unit, key, kWhere, e);
      if (unit.contains("decode_step_ms"))
        required_as<std::vector<double>>(unit, "decode_step_ms", kWhere, e);
    } else {
      required_as<int>(unit, "round", kWhere, e);
      required_as<std::string>(unit, "conversation_id", kWhere, e);
      required_as<int>(unit, "turn_index", kWhere, e);
      for (const char* key : {"reply", "stop_reason"})
        if (unit.contains(key)) required_as<std::string>(unit, key, kWhere, e);
      if (unit.contains("reply_tokens")) required_as<std::vector<int32_t>>(unit, "reply_tokens", kWhere, e);
      if (unit.contains("error") && !unit["error"].is_null()) {
        const json& err = unit["error"];
        if (!err.is_object()) refuse_value(kWhere, e + ".error", err, "must be an object");
        for (const char* key : {"kind", "message"})
          if (err.contains(key)) required_as<std::string>(err, key, kWhere, e + ".error");
      }
    }
  }
  return j;
}

}  // namespace

std::string plan_kind(const json& j) {
  if (!j.is_object()) throw_bad_input("a plan is a JSON object with a \"kind\", got {}", j.type_name());
  const std::string kind = j.contains("kind") && j["kind"].is_string() ? j["kind"].get<std::string>() : "";
  if (kind != "bench" && kind != "session" && kind != "doctor")
    throw_bad_input("plan kind '{}': use \"bench\", \"session\" or \"doctor\"", one_line(kind, 80));
  int64_t version = kPlanVersion;
  read(j, "plan_version", version);
  if (version != kPlanVersion)
    throw_bad_input("plan_version {} is not supported by this edgeprobe (it reads version {})", version,
                    kPlanVersion);
  return kind;
}

namespace {

// A plan of `kind` (plan_kind's checks) with none but the `known` keys at its top.
void check_kind_and_keys(const json& j, const char* kind, std::initializer_list<const char*> known) {
  if (const std::string k = plan_kind(j); k != kind)
    throw_bad_input("expected a {} plan, got a {} plan", kind, k);
  reject_unknown_keys(j, known, fmt::format("{} plan", kind).c_str());
}

}  // namespace

BenchPlan bench_plan_from_json(const json& j) {
  check_kind_and_keys(j, "bench",
                      {"kind", "plan_version", "sweep", "cases", "repetitions", "delay_s", "warmup", "seed",
                       "hash_models", "keep_engine_log", "ceilings", "env", "load", "completed",
                       "verify_tokens", "verify_against", "draft"});
  BenchPlan p;
  if (j.contains("sweep")) p.sweep = sweep_from_json(j["sweep"]);
  if (j.contains("cases")) {
    const json& cases = list_at(j, "cases", "bench plan");
    for (size_t i = 0; i < cases.size(); ++i)
      p.cases.push_back(case_from_json(cases[i], fmt::format("cases[{}]", i)));
  }
  read(j, "repetitions", p.run.repetitions);
  read(j, "delay_s", p.run.delay_s);
  read(j, "warmup", p.run.warmup);
  read(j, "seed", p.run.seed);
  read(j, "hash_models", p.hash_models);
  read(j, "keep_engine_log", p.keep_engine_log);
  read(j, "ceilings", p.ceilings);
  read(j, "verify_tokens", p.run.verify_tokens);
  read(j, "verify_against", p.verify_against);
  if (j.contains("draft")) {
    const json& d = object_at(j, "draft", "bench plan");
    reject_unknown_keys(d, {"model", "max", "min"}, "plan draft");
    read(d, "model", p.run.spec.draft, "plan draft");
    read(d, "max", p.run.spec.draft_max, "plan draft");
    read(d, "min", p.run.spec.draft_min, "plan draft");
    if (p.run.spec.draft.empty())
      throw_bad_input("plan draft: 'model' names the draft model (a file or trained:draft)");
  }
  if (j.contains("env")) read_environment(object_at(j, "env", "plan"), p.env);
  if (j.contains("load")) {
    const json& l = object_at(j, "load", "bench plan");
    reject_unknown_keys(
        l, {"concurrency", "request_rate", "max_concurrency", "num_requests", "max_duration_s", "slo"},
        "plan load");
    read(l, "concurrency", p.run.load.concurrency, "plan load");
    read(l, "request_rate", p.run.load.request_rate, "plan load");
    read(l, "max_concurrency", p.run.load.max_concurrency, "plan load");
    read(l, "num_requests", p.run.load.num_requests, "plan load");
    read(l, "max_duration_s", p.run.load.max_duration_s, "plan load");
    read(l, "slo", p.run.load.slo, "plan load");
  }
  if (j.contains("completed")) p.completed = completed_units(j["completed"], "case_index", "repetition");
  return p;
}

SessionPlan session_plan_from_json(const json& j) {
  check_kind_and_keys(
      j, "session",
      {"kind", "plan_version", "models", "n_ctx", "max_tokens", "n_batch", "threads", "n_gpu_layers", "devices",
       "op_offload", "configs", "rounds", "conversations", "on_overflow", "cooldown", "seed", "prompts", "env",
       "completed"});
  SessionPlan p;
  read(j, "models", p.models);
  read(j, "n_ctx", p.n_ctx);
  read(j, "max_tokens", p.max_tokens);
  read(j, "n_batch", p.n_batch);
  read(j, "threads", p.threads);
  read(j, "n_gpu_layers", p.n_gpu_layers);
  read(j, "devices", p.devices);
  read(j, "op_offload", p.op_offload);
  if (j.contains("configs")) {
    const json& configs = list_at(j, "configs", "session plan");
    for (size_t i = 0; i < configs.size(); ++i) {
      constexpr std::string_view kWhere = "session plan";
      const json& c = configs[i];
      const std::string entry = fmt::format("configs[{}]", i);
      runner::SessionConfig& config = p.configs.emplace_back();
      config.model_path = required_as<std::string>(c, "model_path", kWhere, entry);
      config.n_ctx = required_as<int>(c, "n_ctx", kWhere, entry);
      config.max_tokens = required_as<int>(c, "max_tokens", kWhere, entry);
      config.n_batch = required_as<int>(c, "n_batch", kWhere, entry);
      config.n_threads = required_as<int>(c, "n_threads", kWhere, entry);
      reject_unknown_keys(c, {"model_path", "n_ctx", "max_tokens", "n_batch", "n_threads", "n_gpu_layers", "devices",
                              "op_offload"},
                          ("session plan " + entry).c_str());
      read(c, "n_gpu_layers", config.n_gpu_layers, "session plan");
      read(c, "devices", config.devices, "session plan");
      read(c, "op_offload", config.op_offload, "session plan");
    }
  }
  read(j, "rounds", p.options.rounds);
  read(j, "conversations", p.options.conversations);
  read(j, "on_overflow", p.options.on_overflow);
  read(j, "cooldown", p.options.cooldown);
  read(j, "seed", p.options.seed);
  read(j, "prompts", p.prompts);
  if (j.contains("env")) read_environment(object_at(j, "env", "plan"), p.env);
  if (j.contains("completed")) p.completed = completed_units(j["completed"], "config_index", "turn");
  return p;
}

DoctorPlan doctor_plan_from_json(const json& j) {
  check_kind_and_keys(
      j, "doctor",
      {"kind", "plan_version", "model", "config", "n_prompt", "n_gen", "repetitions", "sysfs_root",
       "sample_hz", "budget_s", "experiments", "tune", "baseline_name", "baseline", "draft"});
  DoctorPlan p;
  read(j, "model", p.model);
  if (j.contains("config")) {
    const json& c = object_at(j, "config", "doctor plan");
    reject_unknown_keys(c,
                        {"threads", "cpu_mask", "cpu_strict", "poll", "n_batch", "n_ubatch", "flash_attn",
                         "type_k", "type_v", "use_mmap", "cpu_variant", "n_gpu_layers", "devices", "op_offload"},
                        "doctor plan config");
    read(c, "threads", p.config.threads, "doctor plan config");
    read(c, "cpu_mask", p.config.cpu_mask, "doctor plan config");
    read(c, "cpu_strict", p.config.cpu_strict, "doctor plan config");
    read(c, "poll", p.config.poll, "doctor plan config");
    read(c, "n_batch", p.config.n_batch, "doctor plan config");
    read(c, "n_ubatch", p.config.n_ubatch, "doctor plan config");
    read(c, "flash_attn", p.config.flash_attn, "doctor plan config");
    read(c, "type_k", p.config.type_k, "doctor plan config");
    read(c, "type_v", p.config.type_v, "doctor plan config");
    read(c, "use_mmap", p.config.use_mmap, "doctor plan config");
    read(c, "cpu_variant", p.config.cpu_variant, "doctor plan config");
    read(c, "n_gpu_layers", p.config.n_gpu_layers, "doctor plan config");
    read(c, "devices", p.config.devices, "doctor plan config");
    read(c, "op_offload", p.config.op_offload, "doctor plan config");
  }
  read(j, "n_prompt", p.n_prompt);
  read(j, "n_gen", p.n_gen);
  read(j, "repetitions", p.repetitions);
  read(j, "sysfs_root", p.sysfs_root);
  read(j, "sample_hz", p.sample_hz);
  read(j, "budget_s", p.budget_s);
  read(j, "experiments", p.experiments);
  read(j, "tune", p.tune);
  read(j, "baseline_name", p.baseline_name);
  if (j.contains("baseline")) p.baseline = j["baseline"];
  if (j.contains("draft")) {
    const json& d = object_at(j, "draft", "doctor plan");
    reject_unknown_keys(d, {"model", "max"}, "doctor plan draft");
    read(d, "model", p.draft, "doctor plan draft");
    read(d, "max", p.draft_max, "doctor plan draft");
  }
  return p;
}

Plan plan_from_json(const json& j) {
  const std::string kind = plan_kind(j);
  if (kind == "bench") return bench_plan_from_json(j);
  if (kind == "session") return session_plan_from_json(j);
  return doctor_plan_from_json(j);
}

Plan read_plan(const std::string& source) {
  const json j = read_json_bounded(source, "plan", kMaxPlanBytes, kMaxPlanDepth);
  try {
    return plan_from_json(j);
  } catch (const Error& e) {
    throw_bad_input("{}: {}", source_name(source), e.what());
  }
}

}  // namespace edgeprobe::app
