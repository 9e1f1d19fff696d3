#include "app/plan.h"

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "app/doctor_child.h"
#include "core/error.h"
#include "core/text.h"
#include "engine/llama_engine.h"
#include "http/http_engine.h"
#include "result/migrate.h"
#include "result/result.h"
#include "workload/sweep_size.h"

namespace edgeprobe::app {

using nlohmann::json;

namespace {

void check_range(const std::vector<int>& values, const char* flag, int lo, int hi) {
  for (int v : values)
    if (v < lo || v > hi) throw_bad_input("{} {} out of range {}..{}", flag, v, lo, hi);
}

void validate_environment(const Environment& env) {
  if (!(env.sample_hz >= 0 && env.sample_hz <= 1000))
    throw_bad_input("--sample-hz {} out of range 0..1000", env.sample_hz);
  if (env.sysfs_root.empty()) throw_bad_input("--sysfs-root is empty: give a directory (/ for this machine)");
  if (env.prefill_remote.empty() && env.prefill_compare_local)
    throw_bad_input("--prefill-compare-local needs --prefill-remote HOST:PORT");
  if (env.prefill_remote.empty() && env.prefill_remote_required)
    throw_bad_input("--prefill-remote-required needs --prefill-remote HOST:PORT");
  if (env.prefill_transfer != "tail" && env.prefill_transfer != "whole")
    throw_bad_input("--prefill-transfer '{}': use tail (a later turn's cells only) or whole", env.prefill_transfer);
  if (!env.prefill_remote.empty() && !env.endpoint.empty())
    throw_bad_input("--prefill-remote and --endpoint exclude each other: a remote prefill restores into this process's own engine");
  if (!env.api.empty() && env.api != "completions" && env.api != "chat")
    throw_bad_input("--api '{}': use chat or completions", env.api);
  if (env.endpoint.empty() && !env.api_model.empty()) throw_bad_input("--api-model needs --endpoint URL");
  if (env.server_pid != 0 && (env.endpoint.empty() || env.server_pid < 0))
    throw_bad_input("--server-pid {}: a local server's process id, with --endpoint", env.server_pid);
  if (env.server_pid > 0 && !std::filesystem::exists("/proc/" + std::to_string(env.server_pid)))
    throw_bad_input("--server-pid {}: no such process", env.server_pid);
#ifdef EDGEPROBE_WITH_HTTP
  if (!env.endpoint.empty())
    http::validate_endpoint({env.endpoint, env.api_model, env.api.empty() ? "completions" : env.api, "EDGEPROBE_API_KEY",
                             env.request_timeout_s});
#endif
}

json environment_json(const Environment& e) {
  json j = {{"cpu_variant", e.cpu_variant}, {"sample_hz", e.sample_hz}, {"sysfs_root", e.sysfs_root}};
  if (!e.prefill_remote.empty()) {
    j["prefill_remote"] = e.prefill_remote;
    j["prefill_token_file"] = e.prefill_token_file;
    j["prefill_compare_local"] = e.prefill_compare_local;
    j["prefill_transfer"] = e.prefill_transfer;
    if (e.prefill_remote_required) j["prefill_remote_required"] = true;
  }
  if (!e.endpoint.empty()) {  // the endpoint's URL without credentials; never the API key
    j["endpoint"] = e.endpoint;
    j["api_model"] = e.api_model;
    j["request_timeout_s"] = e.request_timeout_s;
    if (e.server_pid > 0) j["server_pid"] = e.server_pid;
  }
  if (!e.api.empty()) j["api"] = e.api;
  return j;
}

json sweep_json(const workload::SweepSpec& s) {
  json pg = json::array();
  for (auto [p, g] : s.prompt_gen) pg.push_back({p, g});
  json j = {{"models", s.models},       {"n_prompt", s.n_prompt},     {"n_gen", s.n_gen},
            {"prompt_gen", pg},         {"n_depth", s.n_depth},       {"threads", s.threads},
            {"cpu_masks", s.cpu_masks}, {"cpu_strict", s.cpu_strict}, {"poll", s.poll},
            {"n_batch", s.n_batch},     {"n_ubatch", s.n_ubatch},     {"flash_attn", s.flash_attn},
            {"type_k", s.type_k},       {"type_v", s.type_v},         {"use_mmap", s.use_mmap}};
  // GPU lists only where they differ from the defaults: a plan that leaves them alone
  // still runs on a device whose edgeprobe predates them (a lab mid-upgrade).
  const workload::SweepSpec d = BenchPlan::default_sweep();
  if (s.n_gpu_layers != d.n_gpu_layers) j["n_gpu_layers"] = s.n_gpu_layers;
  if (s.devices != d.devices) j["devices"] = s.devices;
  if (s.split_mode != d.split_mode) j["split_mode"] = s.split_mode;
  if (s.main_gpu != d.main_gpu) j["main_gpu"] = s.main_gpu;
  if (s.op_offload != d.op_offload) j["op_offload"] = s.op_offload;
  return j;
}

// -ngl -1 is llama.cpp's "all layers"; -dev names are checked against the devices when
// the model loads (they exist only once the GPU backends have loaded).
void check_gpu_settings(const std::vector<int>& layers, const std::vector<std::string>& devices,
                        const std::vector<std::string>& split_modes, const std::vector<int>& main_gpus) {
  check_range(layers, "-ngl", -1, 100000);
  check_range(main_gpus, "-mg", 0, 255);
  for (const auto& sm : split_modes)
    if (sm != "none" && sm != "layer" && sm != "row") throw_bad_input("-sm '{}': use none, layer or row", sm);
  for (const auto& d : devices) {
    if (d.empty() || d == "none") continue;
    for (const auto& name : workload::split_list(d, '/'))
      if (name.empty() || name.find_first_of(" \t\n") != std::string::npos)
        throw_bad_input("-dev '{}': give device names joined by '/' (e.g. Vulkan0/Vulkan1), or none", d);
  }
}

// --draft's numbers are checked even without a draft: a plan that sets them means one.
void validate(const runner::SpecOptions& s, const Environment& env) {
  if (s.draft_max < 1 || s.draft_max > 256)
    throw_bad_input("--draft-max {} out of range 1..256 tokens", s.draft_max);
  if (s.draft_min < 0 || s.draft_min > s.draft_max)
    throw_bad_input("--draft-min {} out of range 0..{} (--draft-max)", s.draft_min, s.draft_max);
  if (s.enabled() && (!env.endpoint.empty() || !env.api.empty()))
    throw_bad_input(
        "--draft needs the token level (speculative decoding in-process): not with --endpoint or --api");
}

void validate_case(const workload::TestCase& c) {
  check_range({c.n_prompt}, "-p", 0, 1 << 20);
  check_range({c.n_gen}, "-n", 0, 1 << 20);
  check_range({c.n_depth}, "-d", 0, 1 << 22);
  check_range({c.n_threads}, "-t", 1, 512);
  check_range({c.poll}, "--poll", 0, 100);
  check_range({c.n_batch}, "-b", 1, 1 << 20);
  check_range({c.n_ubatch}, "-ub", 1, 1 << 20);
  if (c.flash_attn < -1 || c.flash_attn > 1) throw_bad_input("--flash-attn {}: use on, off or auto", c.flash_attn);
  if (!c.cpu_mask.empty()) engine::parse_cpu_mask(c.cpu_mask);
  engine::parse_cache_type(c.type_k);
  engine::parse_cache_type(c.type_v);
  check_gpu_settings({c.n_gpu_layers}, {c.devices}, {c.split_mode}, {c.main_gpu});
  if (c.n_prompt == 0 && c.n_gen == 0) throw_bad_input("a test with neither prompt nor generation tokens measures nothing");
}

}  // namespace

void validate(BenchPlan& plan, int default_threads) {
  const auto& r = plan.run;
  if (r.repetitions < 1 || r.repetitions > 10000) throw_bad_input("-r {} out of range 1..10000", r.repetitions);
  if (!(r.delay_s >= 0 && r.delay_s <= 3600)) throw_bad_input("--delay {} out of range 0..3600 seconds", r.delay_s);
  if (r.verify_tokens < 0 || r.verify_tokens > 1024)
    throw_bad_input("--verify {} out of range 0..1024 tokens", r.verify_tokens);
  if (!plan.verify_against.empty() && r.verify_tokens == 0)
    throw_bad_input("--verify-against needs --verify (the continuation it compares)");
  if (r.verify_tokens > 0 && !plan.env.endpoint.empty())
    throw_bad_input("--verify needs the token level (greedy decoding in-process): not with --endpoint");
  validate(r.spec, plan.env);
  if (plan.ceilings != "auto" && plan.ceilings != "off" && plan.ceilings != "refresh" && plan.ceilings != "replace")
    throw_bad_input("--ceilings '{}': use auto, refresh, replace or off", plan.ceilings);
  validate_environment(plan.env);
  runner::validate(plan.run.load);
  if (plan.run.load.enabled() && plan.run.load.max_concurrency < 0) throw_bad_input("--max-concurrency must be >= 0");
  if (plan.cases.empty()) {
    auto& s = plan.sweep;
    if (s.models.empty()) s.models.push_back("");
    // Value lists are checked before expanding: a bad value in an unused combination is
    // still a typo the user wants to hear about.
    check_range(s.n_prompt, "-p", 0, 1 << 20);
    check_range(s.n_gen, "-n", 0, 1 << 20);
    for (auto [p, g] : s.prompt_gen) check_range({p, g}, "-pg", 0, 1 << 20);
    check_range(s.n_depth, "-d", 0, 1 << 22);
    check_range(s.threads, "-t", 1, 512);
    check_range(s.poll, "--poll", 0, 100);
    check_range(s.cpu_strict, "--cpu-strict", 0, 1);
    check_range(s.n_batch, "-b", 1, 1 << 20);
    check_range(s.n_ubatch, "-ub", 1, 1 << 20);
    check_range(s.use_mmap, "--mmap", 0, 1);
    check_range(s.flash_attn, "--flash-attn", -1, 1);
    check_range(s.op_offload, "-nopo", 0, 1);
    check_gpu_settings(s.n_gpu_layers, s.devices, s.split_mode, s.main_gpu);
    for (const auto& m : s.cpu_masks)
      if (!m.empty()) engine::parse_cpu_mask(m);
    for (const auto& t : s.type_k) engine::parse_cache_type(t);
    for (const auto& t : s.type_v) engine::parse_cache_type(t);
    plan.cases = workload::expand(s, default_threads);
    if (plan.cases.empty()) throw_bad_input("nothing to run: every -p, -n and -pg value is 0");
  }
  if (plan.cases.size() > workload::kMaxSweepTests)
    throw_bad_input("the plan lists {} cases, over the {} one run may hold", plan.cases.size(), workload::kMaxSweepTests);
  for (const auto& c : plan.cases) validate_case(c);
}

void validate(SessionPlan& plan, int default_threads) {
  const auto& o = plan.options;
  if (o.rounds < 1 || o.rounds > 1000) throw_bad_input("--rounds {} out of range 1..1000", o.rounds);
  if (o.conversations < 1 || o.conversations > 100000)
    throw_bad_input("--conversations {} out of range 1..100000", o.conversations);
  if (o.on_overflow != "stop" && o.on_overflow != "shift")
    throw_bad_input("--on-overflow '{}': use stop or shift", o.on_overflow);
  if (o.cooldown != "none" && o.cooldown != "temp") {
    char* end = nullptr;
    const double s = std::strtod(o.cooldown.c_str(), &end);
    if (end == o.cooldown.c_str() || *end != '\0' || !(s >= 0 && s <= 3600))
      throw_bad_input("--cooldown '{}': use none, temp or seconds (0..3600)", o.cooldown);
  }
  validate_environment(plan.env);
  if (plan.configs.empty()) {
    if (plan.models.empty()) plan.models.push_back("");
    check_range(plan.n_ctx, "-c", 64, 1 << 20);
    check_range(plan.max_tokens, "--max-tokens", 1, 1 << 16);
    check_range(plan.n_batch, "-b", 1, 1 << 20);
    check_range(plan.threads, "-t", 1, 512);
    const std::vector<int> threads = plan.threads.empty() ? std::vector<int>{default_threads} : plan.threads;
    const uint64_t n = workload::saturating_product(
        {plan.models.size(), plan.n_ctx.size(), plan.max_tokens.size(), plan.n_batch.size(), threads.size()});
    if (n > workload::kMaxSweepTests)
      throw_bad_input("the session's cross product is {} configurations, over the {} one run may hold", n,
                      workload::kMaxSweepTests);
    // Model outermost: each model loads once.
    for (const auto& m : plan.models)
      for (int c : plan.n_ctx)
        for (int g : plan.max_tokens)
          for (int b : plan.n_batch)
            for (int t : threads) plan.configs.push_back({m, c, g, b, t, plan.n_gpu_layers, plan.devices, plan.op_offload});
    if (plan.configs.empty()) throw_bad_input("nothing to run: a session needs at least one value of -c, --max-tokens and -b");
  }
  if (plan.configs.size() > workload::kMaxSweepTests)
    throw_bad_input("the plan lists {} configurations, over the {} one run may hold", plan.configs.size(),
                    workload::kMaxSweepTests);
  for (const auto& c : plan.configs) {
    check_range({c.n_ctx}, "-c", 64, 1 << 20);
    check_range({c.max_tokens}, "--max-tokens", 1, 1 << 16);
    check_range({c.n_batch}, "-b", 1, 1 << 20);
    check_range({c.n_threads}, "-t", 1, 512);
    check_gpu_settings({c.n_gpu_layers}, {c.devices}, {"layer"}, {0});
  }
}

json to_json(const BenchPlan& p) {
  json j = {{"kind", "bench"},
            {"plan_version", kPlanVersion},
            {"repetitions", p.run.repetitions},
            {"delay_s", p.run.delay_s},
            {"warmup", p.run.warmup},
            {"seed", p.run.seed},
            {"hash_models", p.hash_models},
            {"keep_engine_log", p.keep_engine_log},
            {"ceilings", p.ceilings},
            {"env", environment_json(p.env)}};
  if (p.run.verify_tokens > 0) j["verify_tokens"] = p.run.verify_tokens;
  if (!p.verify_against.empty()) j["verify_against"] = p.verify_against;
  if (p.run.spec.enabled())
    j["draft"] = {{"model", p.run.spec.draft}, {"max", p.run.spec.draft_max}, {"min", p.run.spec.draft_min}};
  if (p.run.load.enabled()) {
    const auto& l = p.run.load;
    j["load"] = {{"concurrency", l.concurrency}, {"request_rate", l.request_rate},
                 {"max_concurrency", l.max_concurrency}, {"num_requests", l.num_requests},
                 {"max_duration_s", l.max_duration_s}, {"slo", l.slo}};
  }
  if (!p.completed.empty()) j["completed"] = p.completed;
  if (p.cases.empty()) {
    j["sweep"] = sweep_json(p.sweep);
  } else {
    json cases = json::array();
    for (const auto& c : p.cases) cases.push_back({{"model_path", c.model_path}, {"config", result::to_json(c)}});
    j["cases"] = cases;
  }
  return j;
}

json to_json(const SessionPlan& p) {
  json configs = json::array();
  for (const auto& c : p.configs) configs.push_back(c.to_json());
  json j = {{"kind", "session"},
            {"plan_version", kPlanVersion},
            {"rounds", p.options.rounds},
            {"conversations", p.options.conversations},
            {"on_overflow", p.options.on_overflow},
            {"cooldown", p.options.cooldown},
            {"seed", p.options.seed},
            {"prompts", p.prompts},
            {"env", environment_json(p.env)}};
  if (!p.completed.empty()) j["completed"] = p.completed;
  if (p.configs.empty()) {
    j["models"] = p.models;
    j["n_ctx"] = p.n_ctx;
    j["max_tokens"] = p.max_tokens;
    j["n_batch"] = p.n_batch;
    j["threads"] = p.threads;
    if (p.n_gpu_layers != kDefaultGpuLayers) j["n_gpu_layers"] = p.n_gpu_layers;
    if (!p.devices.empty()) j["devices"] = p.devices;
    if (!p.op_offload) j["op_offload"] = false;
  } else {
    j["configs"] = configs;
  }
  return j;
}

void validate(DoctorPlan& p, int default_threads) {
  if (p.config.threads == 0) p.config.threads = default_threads;
  check_range({p.config.threads}, "-t", 1, 512);
  check_range({p.config.poll}, "--poll", 0, 100);
  check_range({p.config.cpu_strict}, "--cpu-strict", 0, 1);
  check_range({p.config.n_batch}, "-b", 1, 1 << 20);
  check_range({p.config.n_ubatch}, "-ub", 1, 1 << 20);
  check_range({p.n_prompt}, "-p", 1, 1 << 16);
  check_range({p.n_gen}, "-n", 1, 1 << 16);
  check_range({p.repetitions}, "-r", 1, 100);
  if (p.config.flash_attn == "on") p.config.flash_attn = "1";
  if (p.config.flash_attn == "off") p.config.flash_attn = "0";
  if (p.config.flash_attn != "0" && p.config.flash_attn != "1" && p.config.flash_attn != "auto")
    throw_bad_input("--flash-attn {}: use on, off or auto", p.config.flash_attn);
  engine::parse_cache_type(p.config.type_k);
  engine::parse_cache_type(p.config.type_v);
  if (!p.config.cpu_mask.empty()) engine::parse_cpu_mask(p.config.cpu_mask);
  check_gpu_settings({p.config.n_gpu_layers}, {p.config.devices}, {"layer"}, {0});
  if (!(p.sample_hz >= 1 && p.sample_hz <= 1000)) throw_bad_input("--sample-hz {} out of range 1..1000", p.sample_hz);
  if (!(p.budget_s == 0 || (p.budget_s >= 1 && p.budget_s <= 86400)))
    throw_bad_input("--budget {} out of range 1..86400 seconds", p.budget_s);
  if (p.sysfs_root.empty()) throw_bad_input("--sysfs-root is empty: give a directory (/ for this machine)");
  if (!p.baseline.is_null() && !p.baseline.is_object())
    throw_bad_input("plan: 'baseline' must be a result document (an object), got {}", p.baseline.type_name());
  result::check_schema_version(p.baseline, "plan: 'baseline'");
  if (!p.draft.empty()) {
    check_range({p.draft_max}, "--draft-max", 1, 256);
    if (p.tune)
      throw_bad_input("--draft applies to a diagnosis, not to --tune (which searches without a draft)");
  }
}

json to_json(const DoctorPlan& p) {
  const auto& c = p.config;
  json j = {{"kind", "doctor"},
          {"plan_version", kPlanVersion},
          {"model", p.model},
          {"config",
           {{"threads", c.threads},
            {"cpu_mask", c.cpu_mask},
            {"cpu_strict", c.cpu_strict},
            {"poll", c.poll},
            {"n_batch", c.n_batch},
            {"n_ubatch", c.n_ubatch},
            {"flash_attn", c.flash_attn},
            {"type_k", c.type_k},
            {"type_v", c.type_v},
            {"use_mmap", c.use_mmap},
            {"cpu_variant", c.cpu_variant}}},
          {"n_prompt", p.n_prompt},
          {"n_gen", p.n_gen},
          {"repetitions", p.repetitions},
          {"sysfs_root", p.sysfs_root},
          {"sample_hz", p.sample_hz},
          {"budget_s", p.budget_s},
          {"experiments", p.experiments},
          {"tune", p.tune},
          {"baseline_name", p.baseline_name},
          {"baseline", p.baseline}};
  if (!p.draft.empty()) j["draft"] = {{"model", p.draft}, {"max", p.draft_max}};
  // GPU settings only where they differ from the defaults, as in a bench plan's sweep.
  const doctor::RunConfig d;
  if (c.n_gpu_layers != d.n_gpu_layers) j["config"]["n_gpu_layers"] = c.n_gpu_layers;
  if (c.devices != d.devices) j["config"]["devices"] = c.devices;
  if (c.op_offload != d.op_offload) j["config"]["op_offload"] = c.op_offload;
  return j;
}

doctor::DoctorOptions doctor_options(const DoctorPlan& p, const std::string& model_path) {
  doctor::DoctorOptions o;
  static_cast<doctor::DoctorSettings&>(o) = p;
  o.model_path = model_path;
  o.bench_child = run_bench_child;
  return o;
}

DoctorPlan doctor_plan_of(const doctor::DoctorOptions& o, bool tune) {
  DoctorPlan p;
  static_cast<doctor::DoctorSettings&>(p) = o;
  p.model = o.model_path;
  p.tune = tune;
  return p;
}

json to_json(const Plan& plan) {
  return std::visit([](const auto& p) { return to_json(p); }, plan);
}

std::string kind_of(const Plan& plan) {
  static constexpr const char* kKinds[] = {"bench", "session", "doctor"};  // in the variant's order
  return kKinds[plan.index()];
}

void validate(Plan& plan, int default_threads) {
  std::visit([&](auto& p) { validate(p, default_threads); }, plan);
}

namespace {

// Calls f on every model spec field of the plan, in order: the built-in default made
// explicit where a plan lists no model, so it is mapped (resolved, deployed) too.
void each_model(Plan& plan, const std::function<void(std::string&)>& f) {
  if (auto* b = std::get_if<BenchPlan>(&plan)) {
    if (b->cases.empty() && b->sweep.models.empty()) b->sweep.models = {""};
    if (b->cases.empty())
      for (auto& m : b->sweep.models) f(m);
    for (auto& c : b->cases) f(c.model_path);
    if (b->run.spec.enabled()) f(b->run.spec.draft);  // a lab deploys the draft like the models
  } else if (auto* s = std::get_if<SessionPlan>(&plan)) {
    if (s->configs.empty() && s->models.empty()) s->models = {""};
    if (s->configs.empty())
      for (auto& m : s->models) f(m);
    for (auto& c : s->configs) f(c.model_path);
  } else {
    auto& d = std::get<DoctorPlan>(plan);
    f(d.model);
    if (!d.draft.empty()) f(d.draft);  // resolved and deployed like the model
  }
}

}  // namespace

std::vector<std::string> plan_models(const Plan& plan_in) {
  Plan plan = plan_in;
  std::vector<std::string> out;
  each_model(plan, [&](std::string& m) {
    if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
  });
  return out;
}

void map_plan_models(Plan& plan, const std::function<std::string(const std::string&)>& map) {
  each_model(plan, [&](std::string& m) { m = map(m); });
}

std::string plan_prompts(const Plan& plan) {
  const auto* s = std::get_if<SessionPlan>(&plan);
  return s ? s->prompts : "";
}

}  // namespace edgeprobe::app
