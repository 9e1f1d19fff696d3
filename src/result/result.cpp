#include "result/result.h"

#include <algorithm>
#include <iterator>
#include <type_traits>

#include "core/error.h"
#include "core/json_number.h"
#include "core/json_read.h"

namespace edgeprobe::result {

using nlohmann::json;

TestSummary summarize(const TestResult& r) {
  TestSummary s;
  std::vector<double> prefill, decode, ttft, steps;
  for (const auto& rep : r.repetitions) {
    if (r.config.n_prompt > 0) prefill.push_back(rep.prefill_tokens_per_s);
    if (rep.decode_tokens_per_s > 0) decode.push_back(rep.decode_tokens_per_s);
    ttft.push_back(rep.ttft_ms);
    steps.insert(steps.end(), rep.decode_step_ms.begin(), rep.decode_step_ms.end());
    s.peak_rss_bytes = std::max(s.peak_rss_bytes, rep.peak_rss_bytes);
  }
  s.prefill_tokens_per_s = stats::summarize(prefill);
  s.decode_tokens_per_s = stats::summarize(decode);
  s.ttft_ms = stats::summarize(ttft);
  s.token_latency_ms = stats::percentiles(steps);
  s.token_latency_mean_ms = stats::mean(steps);
  s.token_latency_steps = steps.size();
  if (!r.load_ms.empty()) {
    s.load_cold_ms = r.load_ms.front();
    s.load_warm_ms = stats::summarize(std::span<const double>(r.load_ms).subspan(1));
  }
  return s;
}

json to_json(const stats::Summary& s) {
  // Not measured is not zero: no samples have no median, one sample has no deviation.
  const auto measured = [&](double v) { return s.n > 0 ? json(v) : json(nullptr); };
  return {{"n", s.n},
          {"median", measured(s.median)},
          {"mean", measured(s.mean)},
          {"stddev", s.n > 1 ? json(s.stddev) : json(nullptr)},
          {"min", measured(s.min)},
          {"p25", measured(s.p25)},
          {"p75", measured(s.p75)},
          {"iqr", measured(s.iqr())},
          {"max", measured(s.max)}};
}

json to_json(const ModelIdentity& m) {
  json types = json::object();
  for (const auto& [type, st] : m.tensor_types)
    types[type] = {{"tensors", st.tensors}, {"bytes", st.bytes}, {"params", st.params}};
  return {{"path", m.path},
          {"sha256", m.sha256},
          {"size_bytes", m.size_bytes},
          {"n_params", m.n_params},
          {"architecture", m.architecture},
          {"name", m.name},
          {"quant", m.dominant_type},
          {"bits_per_weight", m.bits_per_weight},
          {"tensor_types", types},
          {"shape",
           {{"n_layer", m.n_layer}, {"n_embd", m.n_embd}, {"n_ff", m.n_ff}, {"n_head", m.n_head},
            {"n_head_kv", m.n_head_kv}, {"n_vocab", m.n_vocab}}}};
}

json to_json(const std::vector<engine::GpuBackendInfo>& backends) {
  json gpus = json::array();
  for (const auto& b : backends) {
    json devices = json::array();
    for (const auto& d : b.devices)
      devices.push_back({{"name", d.name}, {"description", d.description}, {"type", d.type},
                         {"memory_total_bytes", d.memory_total}, {"memory_free_bytes", d.memory_free}});
    gpus.push_back({{"name", b.name}, {"library", b.library_path}, {"error", b.error}, {"devices", devices}});
  }
  return gpus;
}

json to_json(const EngineIdentity& e) {
  json features = json::object();
  for (const auto& [k, v] : e.cpu_variant_features) features[k] = v;
  json j = {{"name", e.name},
            {"kind", e.kind},
            {"version", e.version},
            {"commit", e.commit},
            {"cpu_variant", e.cpu_variant},
            {"cpu_variant_library", e.cpu_variant_library},
            {"cpu_variant_features", features}};
  if (!e.backends.empty()) j["backends"] = e.backends;
  if (!e.gpu_backends.empty()) j["gpu_backends"] = to_json(e.gpu_backends);
  if (!e.details.empty()) j["details"] = e.details;
  return j;
}

json to_json(const DeviceIdentity& d) {
  return {{"id", d.id},         {"arch", d.arch}, {"cpu_model", d.cpu_model}, {"soc", d.soc},
          {"board", d.board},   {"os", d.os},     {"kernel", d.kernel},       {"hostname", d.hostname}};
}

json to_json(const Provenance& p) {
  json models = json::array();
  for (const auto& m : p.models) models.push_back(to_json(m));
  json j = {{"edgeprobe_version", p.edgeprobe_version},
            {"engine", to_json(p.engine)},
            {"device", to_json(p.device)},
            {"started_at_utc", p.started_at_utc},
            {"command_line", p.command_line},
            {"models", models}};
  if (!p.build.empty())
    j["build"] = {{"git_commit", p.build.git_commit},
                  {"git_dirty", p.build.git_dirty},
                  {"build_type", p.build.build_type},
                  {"compiler", p.build.compiler}};
  for (const auto& [k, v] : p.extra.items()) j[k] = v;
  return j;
}

using json_read::field;
using json_read::list;
using json_read::number;
using json_read::object;
using json_read::text;

ModelIdentity model_identity_from_json(const json& j) {
  ModelIdentity m;
  if (!j.is_object()) return m;  // what is not an object identifies nothing
  m.path = text(j, "path");
  m.sha256 = text(j, "sha256");
  m.size_bytes = number<uint64_t>(j, "size_bytes");
  m.n_params = number<uint64_t>(j, "n_params");
  m.architecture = text(j, "architecture");
  m.name = text(j, "name");
  m.dominant_type = text(j, "quant");
  m.bits_per_weight = number<double>(j, "bits_per_weight");
  if (j.contains("tensor_types") && j["tensor_types"].is_object())
    for (const auto& [type, st] : j["tensor_types"].items())
      m.tensor_types[type] = {number<int64_t>(st, "tensors"), number<uint64_t>(st, "bytes"), number<uint64_t>(st, "params")};
  const json& shape = j.contains("shape") ? j["shape"] : json::object();
  m.n_layer = number<int64_t>(shape, "n_layer");
  m.n_embd = number<int64_t>(shape, "n_embd");
  m.n_ff = number<int64_t>(shape, "n_ff");
  m.n_head = number<int64_t>(shape, "n_head");
  m.n_head_kv = number<int64_t>(shape, "n_head_kv");
  m.n_vocab = number<int64_t>(shape, "n_vocab");
  return m;
}

EngineIdentity engine_from_json(const json& j) {
  EngineIdentity e;
  e.name = text(j, "name");
  e.kind = text(j, "kind");
  e.version = text(j, "version");
  e.commit = text(j, "commit");
  e.cpu_variant = text(j, "cpu_variant");
  e.cpu_variant_library = text(j, "cpu_variant_library");
  if (j.contains("cpu_variant_features") && j["cpu_variant_features"].is_object())
    for (const auto& [k, v] : j["cpu_variant_features"].items())
      e.cpu_variant_features.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
  if (j.contains("backends") && j["backends"].is_array())
    for (const auto& b : j["backends"])
      if (b.is_string()) e.backends.push_back(b.get<std::string>());
  for (const auto& b : list(j, "gpu_backends")) {
    if (!b.is_object()) continue;
    engine::GpuBackendInfo g{text(b, "name"), text(b, "library"), text(b, "error"), {}};
    for (const auto& d : list(b, "devices"))
      g.devices.push_back({text(d, "name"), text(d, "description"), text(d, "type"),
                           number<uint64_t>(d, "memory_total_bytes"), number<uint64_t>(d, "memory_free_bytes")});
    e.gpu_backends.push_back(std::move(g));
  }
  if (j.contains("details") && j["details"].is_object()) e.details = j["details"];
  return e;
}

DeviceIdentity device_from_json(const json& j) {
  return {text(j, "id"), text(j, "arch"), text(j, "cpu_model"), text(j, "soc"),
          text(j, "board"), text(j, "os"), text(j, "kernel"), text(j, "hostname")};
}

Provenance provenance_from_json(const json& j) {
  Provenance p;
  if (!j.is_object()) return p;
  p.edgeprobe_version = text(j, "edgeprobe_version");
  if (const json build = j.value("build", json()); build.is_object()) {
    p.build.git_commit = text(build, "git_commit");
    p.build.git_dirty = build.value("git_dirty", json()).is_boolean() && build["git_dirty"].get<bool>();
    p.build.build_type = text(build, "build_type");
    p.build.compiler = text(build, "compiler");
  }
  p.engine = engine_from_json(j.value("engine", json::object()));
  p.device = device_from_json(j.value("device", json::object()));
  p.started_at_utc = text(j, "started_at_utc");
  p.command_line = text(j, "command_line");
  if (j.contains("models") && j["models"].is_array())
    for (const auto& m : j["models"]) p.models.push_back(model_identity_from_json(m));
  static const char* kOwn[] = {"edgeprobe_version", "build", "engine", "device", "started_at_utc", "command_line", "models"};
  for (const auto& [k, v] : j.items())
    if (std::find(std::begin(kOwn), std::end(kOwn), k) == std::end(kOwn)) p.extra[k] = v;
  return p;
}

json to_json(const workload::TestCase& c) {
  json j = {{"n_prompt", c.n_prompt},     {"n_gen", c.n_gen},       {"n_depth", c.n_depth},
            {"n_threads", c.n_threads},   {"cpu_mask", c.cpu_mask}, {"cpu_strict", c.cpu_strict},
            {"poll", c.poll},             {"n_batch", c.n_batch},   {"n_ubatch", c.n_ubatch},
            {"flash_attn", c.flash_attn}, {"type_k", c.type_k},     {"type_v", c.type_v},
            {"use_mmap", c.use_mmap}};
  // GPU settings only where they differ from what a config without them means (every
  // layer on the CPU, as results before GPU offload ran): those configs keep their bytes.
  if (c.n_gpu_layers != 0) j["n_gpu_layers"] = c.n_gpu_layers;
  if (!c.devices.empty()) j["devices"] = c.devices;
  if (c.split_mode != "layer") j["split_mode"] = c.split_mode;
  if (c.main_gpu != 0) j["main_gpu"] = c.main_gpu;
  if (!c.op_offload) j["op_offload"] = false;
  return j;
}

json to_json(const Repetition& rep) {
  // A phase this repetition did not run (no prompt, or at most one generated token) has no
  // time and no rate: absent, not 0.
  const auto ran = [](double v) { return v > 0 ? json(v) : json(nullptr); };
  json j = {{"index", rep.index},
            {"start_ns", rep.start_ns},
            {"end_ns", rep.end_ns},
            {"ttft_ms", rep.ttft_ms},
            {"prefill_ms", ran(rep.prefill_ms)},
            {"prefill_tokens_per_s", ran(rep.prefill_tokens_per_s)},
            {"decode_ms", ran(rep.decode_ms)},
            {"decode_tokens_per_s", ran(rep.decode_tokens_per_s)},
            {"decode_step_ms", rep.decode_step_ms},
            {"peak_rss_bytes", rep.peak_rss_bytes < 0 ? json(nullptr) : json(rep.peak_rss_bytes)},
            {"telemetry", rep.telemetry}};
  if (!rep.request.is_null()) j["request"] = rep.request;
  if (!rep.prefill_remote.is_null()) j["prefill_remote"] = rep.prefill_remote;
  return j;
}

Repetition repetition_from_json(const json& j) {
  Repetition rep;
  rep.index = j.at("index");
  rep.start_ns = j.value("start_ns", int64_t{0});
  rep.end_ns = j.value("end_ns", int64_t{0});
  // Absent or null (a phase that did not run) reads as 0, the structs' "not run".
  const auto number = [&](const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0; };
  rep.ttft_ms = number("ttft_ms");
  rep.prefill_ms = number("prefill_ms");
  rep.prefill_tokens_per_s = number("prefill_tokens_per_s");
  rep.decode_ms = number("decode_ms");
  rep.decode_tokens_per_s = number("decode_tokens_per_s");
  rep.decode_step_ms = j.value("decode_step_ms", std::vector<double>{});
  rep.peak_rss_bytes = j.contains("peak_rss_bytes") && j["peak_rss_bytes"].is_number() ? j["peak_rss_bytes"].get<int64_t>() : -1;
  rep.telemetry = j.value("telemetry", json(nullptr));
  rep.prefill_remote = j.value("prefill_remote", json(nullptr));
  rep.request = j.value("request", json(nullptr));
  return rep;
}

json config_field(const json& config, const std::string& key) {
  if (config.is_object() && config.contains(key)) return config[key];
  static const json kAbsent = {{"n_gpu_layers", 0}, {"devices", ""}, {"split_mode", "layer"}, {"main_gpu", 0},
                               {"op_offload", true}};
  return kAbsent.contains(key) ? kAbsent[key] : json(nullptr);
}

workload::TestCase test_case_from_json(const json& j, const std::string& model_path) {
  workload::TestCase c;
  c.model_path = model_path;
  c.n_prompt = j.at("n_prompt");
  c.n_gen = j.at("n_gen");
  c.kind = c.n_prompt > 0 && c.n_gen > 0 ? workload::TestKind::kPromptGenerate
           : c.n_prompt > 0              ? workload::TestKind::kPrompt
                                         : workload::TestKind::kGenerate;
  c.n_depth = j.at("n_depth");
  c.n_threads = j.at("n_threads");
  c.cpu_mask = j.at("cpu_mask");
  c.cpu_strict = j.at("cpu_strict");
  c.poll = j.at("poll");
  c.n_batch = j.at("n_batch");
  c.n_ubatch = j.at("n_ubatch");
  c.flash_attn = j.at("flash_attn");
  c.type_k = j.at("type_k");
  c.type_v = j.at("type_v");
  c.use_mmap = j.at("use_mmap");
  // Absent GPU settings: every layer on the CPU (results from before GPU offload, and
  // configs that asked for it).
  c.n_gpu_layers = j.value("n_gpu_layers", 0);
  c.devices = j.value("devices", "");
  c.split_mode = j.value("split_mode", "layer");
  c.main_gpu = j.value("main_gpu", 0);
  c.op_offload = j.value("op_offload", true);
  return c;
}

namespace {

json to_json(const engine::GraphPlacement& g) {
  json backends = json::array(), cpu_nodes = json::array();
  for (const auto& b : g.backends)
    backends.push_back({{"backend", b.backend}, {"nodes", b.nodes}, {"weight_bytes", b.weight_bytes}});
  for (const auto& n : g.cpu_nodes)
    cpu_nodes.push_back({{"op", n.op}, {"tensor", n.tensor}, {"count", n.count}, {"weight_bytes", n.weight_bytes}});
  return {{"n_tokens", g.n_tokens}, {"backends", backends}, {"cpu_nodes", cpu_nodes}};
}

std::optional<engine::GraphPlacement> graph_placement_from_json(const json& j) {
  if (!j.is_object()) return std::nullopt;
  engine::GraphPlacement g;
  g.n_tokens = number<int>(j, "n_tokens");
  for (const auto& b : list(j, "backends"))
    g.backends.push_back({text(b, "backend"), number<int>(b, "nodes"), number<uint64_t>(b, "weight_bytes")});
  for (const auto& n : list(j, "cpu_nodes"))
    g.cpu_nodes.push_back({text(n, "op"), text(n, "tensor"), number<int>(n, "count"), number<uint64_t>(n, "weight_bytes")});
  return g;
}

}  // namespace

json to_json(const engine::Placement& p) {
  const auto known = [](int v) { return v < 0 ? json(nullptr) : json(v); };
  return {{"devices", p.devices},
          {"layers_offloaded", known(p.layers_offloaded)},
          {"layers_total", known(p.layers_total)},
          {"buffers_mib", p.buffers_mib},
          {"weights_moved", p.weights_moved},
          {"graph_splits", {{"prefill", known(p.graph_splits_prefill)}, {"decode", known(p.graph_splits_decode)}}},
          {"prefill", p.prefill ? to_json(*p.prefill) : json(nullptr)},
          {"decode", p.decode ? to_json(*p.decode) : json(nullptr)}};
}

engine::Placement placement_from_json(const json& j) {
  engine::Placement p;
  if (!j.is_object()) return p;
  // -1 (not said) unless a whole number is there.
  const auto known = [](const json& o, const char* key) {
    return o.is_object() && o.contains(key) && o[key].is_number_integer() ? number<int>(o, key) : -1;
  };
  for (const auto& d : list(j, "devices"))
    if (d.is_string()) p.devices.push_back(d.get<std::string>());
  p.layers_offloaded = known(j, "layers_offloaded");
  p.layers_total = known(j, "layers_total");
  if (j.contains("buffers_mib") && j["buffers_mib"].is_object())
    for (const auto& [k, v] : j["buffers_mib"].items())
      if (v.is_number()) p.buffers_mib[k] = v.get<double>();
  for (const auto& line : list(j, "weights_moved"))
    if (line.is_string()) p.weights_moved.push_back(line.get<std::string>());
  const json& splits = j.contains("graph_splits") ? j["graph_splits"] : json();
  p.graph_splits_prefill = known(splits, "prefill");
  p.graph_splits_decode = known(splits, "decode");
  p.prefill = graph_placement_from_json(j.contains("prefill") ? j["prefill"] : json());
  p.decode = graph_placement_from_json(j.contains("decode") ? j["decode"] : json());
  return p;
}

json to_json(const TestResult& r) {
  json j;
  j["test"] = r.config.name();
  j["model_index"] = r.model_index;
  j["model_path"] = r.config.model_path;
  j["config"] = to_json(r.config);
  j["status"] = r.error ? "error" : "ok";
  j["error"] = r.error ? json{{"kind", r.error->kind}, {"message", r.error->message}} : json(nullptr);
  const TestSummary s = summarize(r);
  j["load"] = {{"cold_ms", r.load_ms.empty() ? json(nullptr) : json(s.load_cold_ms)},
               {"warm_ms", to_json(s.load_warm_ms)},
               {"samples_ms", r.load_ms},
               {"page_cache_resident_share_before",
                r.page_cache_resident_share < 0 ? json(nullptr) : json(r.page_cache_resident_share)}};
  j["prefill"] = r.config.n_prompt > 0 ? json{{"tokens", r.config.n_prompt},
                                              {"tokens_per_s", to_json(s.prefill_tokens_per_s)}}
                                       : json(nullptr);
  j["decode"] = r.config.n_gen > 0
                    ? json{{"tokens", r.config.n_gen},
                           {"tokens_per_s", to_json(s.decode_tokens_per_s)},
                           {"token_latency_ms",
                            s.token_latency_steps == 0 ? json(nullptr)
                                                       : json{{"mean", s.token_latency_mean_ms},
                                                              {"p50", s.token_latency_ms.p50},
                                                              {"p90", s.token_latency_ms.p90},
                                                              {"p99", s.token_latency_ms.p99},
                                                              {"max", s.token_latency_ms.max}}}}
                    : json(nullptr);
  j["ttft_ms"] = to_json(s.ttft_ms);
  j["peak_rss_bytes"] = s.peak_rss_bytes < 0 ? json(nullptr) : json(s.peak_rss_bytes);
  json reps = json::array();
  for (const auto& rep : r.repetitions) reps.push_back(to_json(rep));
  j["repetitions"] = reps;
  j["telemetry"] = r.telemetry;
  j["roofline"] = r.roofline ? to_json(*r.roofline) : json(nullptr);
  if (r.serving) {
    j["serving"] = json::array();
    for (const auto& level : *r.serving) j["serving"].push_back(to_json(level));
  }
  if (!r.placement.empty()) j["placement"] = to_json(r.placement);
  if (r.verify) j["verify"] = to_json(*r.verify);
  if (r.speculative) j["speculative"] = to_json(*r.speculative);
  return j;
}

json to_json(const GreedyCheck& c) {
  json j = {{"prompt_tokens", c.prompt}, {"tokens", c.tokens}, {"reference", nullptr}};
  if (!c.reference.empty())
    j["reference"] = {{"source", c.reference},
                      {"compared", c.compared},
                      {"first_divergence", c.first_divergence < 0 ? json(nullptr) : json(c.first_divergence)},
                      {"verified", c.verified()}};
  return j;
}

std::optional<GreedyCheck> greedy_check_from_json(const json& j) {
  if (!j.is_object()) return std::nullopt;
  GreedyCheck c;
  for (const auto& t : list(j, "prompt_tokens"))
    if (const auto id = exact_integer<int32_t>(t)) c.prompt.push_back(*id);
  for (const auto& t : list(j, "tokens"))
    if (const auto id = exact_integer<int32_t>(t)) c.tokens.push_back(*id);
  if (const json& ref = field(j, "reference"); ref.is_object()) {
    c.reference = text(ref, "source");
    c.compared = number<int>(ref, "compared");
    c.first_divergence =
        field(ref, "first_divergence").is_number() ? number<int>(ref, "first_divergence") : -1;
  }
  return c;
}

TestResult test_result_from_json(const json& j) {
  TestResult r;
  r.config = test_case_from_json(j.at("config"), text(j, "model_path"));
  r.model_index = number<int>(j, "model_index");
  if (const json& e = field(j, "error"); e.is_object()) r.error = ErrorInfo{text(e, "kind"), text(e, "message")};
  const json& load = object(j, "load");
  for (const auto& ms : list(load, "samples_ms"))
    if (ms.is_number()) r.load_ms.push_back(ms.get<double>());
  if (field(load, "page_cache_resident_share_before").is_number())
    r.page_cache_resident_share = load["page_cache_resident_share_before"].get<double>();
  for (const auto& rep : list(j, "repetitions")) r.repetitions.push_back(repetition_from_json(rep));
  r.telemetry = field(j, "telemetry");
  r.roofline = roofline_optional_from_json(field(j, "roofline"));
  r.serving = serving_from_json(field(j, "serving"));
  r.placement = placement_from_json(field(j, "placement"));
  r.verify = greedy_check_from_json(field(j, "verify"));
  r.speculative = speculative_from_json(field(j, "speculative"));
  return r;
}

namespace {

constexpr std::pair<const char*, LatencyDistribution ServingLevel::*> kLatencies[] = {
    {"ttft", &ServingLevel::ttft}, {"tpot", &ServingLevel::tpot}, {"itl", &ServingLevel::itl}, {"e2el", &ServingLevel::e2el}};
constexpr std::pair<const char*, std::optional<double> LatencyDistribution::*> kStatistics[] = {
    {"mean", &LatencyDistribution::mean}, {"median", &LatencyDistribution::median}, {"std", &LatencyDistribution::std},
    {"p90", &LatencyDistribution::p90},   {"p99", &LatencyDistribution::p99}};

}  // namespace

json to_json(const ServingLevel& s) {
  json j = {{"concurrency", s.concurrency ? json(*s.concurrency) : json(nullptr)},
            {"request_rate", json_read::number_or_null(s.request_rate)},
            {"max_concurrency", s.max_concurrency},
            {"num_requests", s.num_requests},
            {"not_sent", s.not_sent},
            {"completed", s.completed},
            {"failed", s.failed},
            {"duration_s", s.duration_s},
            {"total_input_tokens", s.total_input_tokens},
            {"total_output_tokens", s.total_output_tokens},
            {"request_throughput", json_read::number_or_null(s.request_throughput)},
            {"output_throughput", json_read::number_or_null(s.output_throughput)},
            {"total_token_throughput", json_read::number_or_null(s.total_token_throughput)},
            {"goodput", json_read::number_or_null(s.goodput)},
            {"slo", s.slo},
            {"errors", s.errors}};
  // vLLM's flat names: mean_ttft_ms, p99_itl_ms, ...
  for (const auto& [latency, member] : kLatencies)
    for (const auto& [statistic, value] : kStatistics)
      j[std::string(statistic) + "_" + latency + "_ms"] = json_read::number_or_null((s.*member).*value);
  return j;
}

ServingLevel serving_level_from_json(const json& j) {
  ServingLevel s;
  if (field(j, "concurrency").is_number()) s.concurrency = number<int>(j, "concurrency");
  s.request_rate = json_read::optional_num(j, "request_rate");
  s.max_concurrency = number<int>(j, "max_concurrency");
  s.num_requests = number<int>(j, "num_requests");
  s.not_sent = number<int>(j, "not_sent");
  s.completed = number<int>(j, "completed");
  s.failed = number<int>(j, "failed");
  s.duration_s = number<double>(j, "duration_s");
  s.total_input_tokens = number<int64_t>(j, "total_input_tokens");
  s.total_output_tokens = number<int64_t>(j, "total_output_tokens");
  s.request_throughput = json_read::optional_num(j, "request_throughput");
  s.output_throughput = json_read::optional_num(j, "output_throughput");
  s.total_token_throughput = json_read::optional_num(j, "total_token_throughput");
  s.goodput = json_read::optional_num(j, "goodput");
  for (const auto& [bound, value] : object(j, "slo").items())
    if (value.is_number()) s.slo[bound] = value.get<double>();
  s.errors = json_read::strings(j, "errors");
  for (const auto& [latency, member] : kLatencies)
    for (const auto& [statistic, value] : kStatistics)
      (s.*member).*value = json_read::optional_num(j, (std::string(statistic) + "_" + latency + "_ms").c_str());
  return s;
}

std::optional<std::vector<ServingLevel>> serving_from_json(const json& j) {
  if (!j.is_array()) return std::nullopt;
  std::vector<ServingLevel> levels;
  for (const auto& level : j) levels.push_back(serving_level_from_json(level));
  return levels;
}

BenchReport bench_report_from_json(const json& j) {
  if (!j.is_object() || !j.contains("results") || !j["results"].is_array())
    throw_bad_input("a bench result has a \"results\" array and this one has none: is it an 'edgeprobe bench -o json' result?");
  BenchReport report;
  report.schema_version = number<int>(j, "schema_version");
  report.provenance = provenance_from_json(field(j, "provenance"));
  for (const auto& r : j["results"]) report.results.push_back(test_result_from_json(r));
  return report;
}

json to_json(const BenchReport& report) {
  json results = json::array();
  for (const auto& r : report.results) results.push_back(to_json(r));
  return {{"schema_version", report.schema_version},
          {"kind", "bench"},
          {"provenance", to_json(report.provenance)},
          {"results", results}};
}

}  // namespace edgeprobe::result
