#include "doctor/tune.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <filesystem>
#include <set>

#include "core/stats.h"
#include "core/context_defaults.h"

namespace edgeprobe::doctor {
namespace {

constexpr double kKeepUnlessFaster = 1.03;  // search noise: keep the current value unless beaten by 3 %
constexpr int kConfirmRounds = 2;

std::string join(const std::vector<std::string>& v, const char* sep = ",") {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// A setting the search varies: how to read it from and write it to a RunConfig, the
// bench flag and the result's config key that tells the swept values apart.
struct Setting {
  std::string name, flag, result_key;
  std::function<std::string(const RunConfig&)> get;
  std::function<void(RunConfig&, const std::string&)> set;
  std::function<nlohmann::json(const std::string&)> result_value;
};

// Runs one child sweeping `values` of `s` on top of `current` and picks the fastest.
TuneStep sweep(const DoctorOptions& o, const Setting& s, RunConfig& current, const std::vector<std::string>& values,
               const ProgressFn& progress, std::optional<result::BenchReport>* report = nullptr) {
  TuneStep step{s.name, {}, s.get(current), ""};
  if (values.size() < 2) return step;
  progress(fmt::format("tuning {}: {} {}", s.name, s.flag, join(values)));
  RunConfig base = current;
  s.set(base, "");  // cleared: the swept list below takes its place
  ChildTests tests{o.n_prompt, o.n_gen, std::max(1, o.repetitions - 1), true, {}};
  for (const auto& v : values) {
    tests.sweep.push_back(current);
    s.set(tests.sweep.back(), v);
  }
  const BenchRun run = run_bench_child(o, "tune " + s.name, base, tests);
  if (report) *report = run.report;
  if (!run.ok()) {
    step.error = run.error;
    return step;
  }
  std::optional<double> current_s;
  for (const auto& v : values) {
    TuneCandidate c{v, rates(run.report, o.n_prompt, o.n_gen, s.result_key, s.result_value(v)), std::nullopt};
    c.turn_s = turn_s(c.rates, o.n_prompt, o.n_gen);
    if (v == step.chosen) current_s = c.turn_s;
    step.candidates.push_back(c);
  }
  const TuneCandidate* best = nullptr;
  for (const auto& c : step.candidates)
    if (c.turn_s && (!best || *c.turn_s < *best->turn_s)) best = &c;
  if (best && best->value != step.chosen && (!current_s || *current_s > *best->turn_s * kKeepUnlessFaster)) {
    step.chosen = best->value;
    s.set(current, best->value);
  }
  return step;
}

// The GPU devices the children's llama.cpp offers ("Vulkan0"), from a result's provenance.
std::vector<std::string> gpu_devices(const std::optional<result::BenchReport>& report) {
  std::vector<std::string> names;
  if (report)
    for (const auto& b : report->provenance.engine.gpu_backends)
      for (const auto& d : b.devices)
        if (!d.name.empty()) names.push_back(d.name);
  return names;
}

Rates measure(const DoctorOptions& o, const RunConfig& config, const std::string& label) {
  const BenchRun run = run_bench_child(o, label, config, default_tests(o));
  return run.ok() ? rates(run.report, o.n_prompt, o.n_gen) : Rates{};
}

}  // namespace

TuneResult tune(const DoctorOptions& options, const ProgressFn& progress_fn, const ChildrenFn& children) {
  const auto t0 = std::chrono::steady_clock::now();
  // Every progress step below starts one bench child, so steps count children.
  size_t started = 0, most = 0;
  auto progress = [&](const std::string& s) {
    if (progress_fn) progress_fn(s);
    if (children) children(started, std::max(most, started + 1));
    ++started;
  };
  TuneResult result;
  result.options = options;
  result.start = options.config;
  RunConfig current = options.config;
  const DeviceFacts device = collect_device_facts(FsRoot(options.sysfs_root));
  const auto int_value = [](const std::string& v) { return nlohmann::json(std::stoi(v)); };

  // CPU masks, fastest cluster first, then adding the next: big, big+mid, everything.
  auto clusters = device.cpus.clusters;
  std::stable_sort(clusters.begin(), clusters.end(),
                   [](const auto& a, const auto& b) { return a.max_khz.value_or(0) > b.max_khz.value_or(0); });
  most = (clusters.size() > 1 ? clusters.size() : 0) + 5 + 2 * kConfirmRounds;  // masks, the 5 settings, confirmation
  if (clusters.size() > 1) {
    TuneStep step{"cpu mask", {}, current.cpu_mask, ""};
    std::vector<int> cpus;
    std::vector<std::pair<std::string, int>> masks;
    for (const auto& c : clusters) {
      cpus.insert(cpus.end(), c.cpus.begin(), c.cpus.end());
      std::sort(cpus.begin(), cpus.end());
      masks.push_back({cpu_mask_of(cpus), static_cast<int>(cpus.size())});
    }
    for (const auto& [mask, n] : masks) {
      RunConfig c = current;
      c.cpu_mask = mask;
      c.threads = std::min(n, std::max(current.threads, 1));
      progress(fmt::format("tuning cpu mask: -C {} -t {}", mask, c.threads));
      const Rates r = measure(options, c, "tune cpu mask");
      step.candidates.push_back({fmt::format("-C {} -t {}", mask, c.threads), r, turn_s(r, options.n_prompt, options.n_gen)});
    }
    const TuneCandidate* best = nullptr;
    for (size_t i = 0; i < step.candidates.size(); ++i)
      if (step.candidates[i].turn_s && (!best || *step.candidates[i].turn_s < *best->turn_s)) best = &step.candidates[i];
    if (best) {
      const size_t i = static_cast<size_t>(best - step.candidates.data());
      current.cpu_mask = masks[i].first;
      current.threads = std::min(masks[i].second, std::max(current.threads, 1));
      step.chosen = best->value;
    }
    result.steps.push_back(step);
  }

  const int usable = std::max<int>(1, static_cast<int>(usable_cpus(device, current).size()));
  std::vector<std::string> thread_values;
  for (int t = 1; t <= usable; ++t)
    if (t <= 8 || (t & (t - 1)) == 0 || t == usable) thread_values.push_back(std::to_string(t));
  if (std::find(thread_values.begin(), thread_values.end(), std::to_string(current.threads)) == thread_values.end())
    thread_values.push_back(std::to_string(current.threads));
  const std::vector<std::pair<Setting, std::vector<std::string>>> plan = {
      {{"threads", "-t", "n_threads", [](const RunConfig& c) { return std::to_string(c.threads); },
        [](RunConfig& c, const std::string& v) { c.threads = v.empty() ? 0 : std::stoi(v); }, int_value},
       thread_values},
      {{"strict placement", "--cpu-strict", "cpu_strict", [](const RunConfig& c) { return std::to_string(c.cpu_strict); },
        [](RunConfig& c, const std::string& v) { c.cpu_strict = v.empty() ? 0 : std::stoi(v); },
        [](const std::string& v) { return nlohmann::json(v == "1"); }},
       {"0", "1"}},
      {{"poll", "--poll", "poll", [](const RunConfig& c) { return std::to_string(c.poll); },
        [](RunConfig& c, const std::string& v) { c.poll = v.empty() ? kDefaultPoll : std::stoi(v); }, int_value},
       {"0", "50", "100"}},
      {{"ubatch", "-ub", "n_ubatch", [](const RunConfig& c) { return std::to_string(c.n_ubatch); },
        [](RunConfig& c, const std::string& v) { c.n_ubatch = v.empty() ? kDefaultUbatch : std::stoi(v); }, int_value},
       {"128", "256", "512"}},
      {{"flash attention", "-fa", "flash_attn", [](const RunConfig& c) { return c.flash_attn; },
        [](RunConfig& c, const std::string& v) { c.flash_attn = v.empty() ? "auto" : v; },
        [](const std::string& v) { return nlohmann::json(v == "auto" ? -1 : std::stoi(v)); }},
       {"0", "1"}},
  };
  std::optional<result::BenchReport> first_report;
  for (const auto& [setting, values] : plan) {
    std::vector<std::string> vs = values;
    const std::string now = setting.get(current);
    if (std::find(vs.begin(), vs.end(), now) == vs.end()) vs.push_back(now);
    result.steps.push_back(sweep(options, setting, current, vs, progress, !first_report ? &first_report : nullptr));
  }
  // With a GPU device there (the first child's llama.cpp saw one): the CPU alone against
  // every layer on the GPU, then each device alone when there are several.
  if (const auto devices = gpu_devices(first_report); !devices.empty()) {
    most += devices.size() > 1 ? 2 : 1;
    const Setting layers{"gpu layers", "-ngl", "n_gpu_layers", [](const RunConfig& c) { return std::to_string(c.n_gpu_layers); },
                         [](RunConfig& c, const std::string& v) { c.n_gpu_layers = v.empty() ? kDefaultGpuLayers : std::stoi(v); },
                         int_value};
    std::vector<std::string> vs{"0", std::to_string(kDefaultGpuLayers)};
    if (const std::string now = layers.get(current); std::find(vs.begin(), vs.end(), now) == vs.end()) vs.push_back(now);
    result.steps.push_back(sweep(options, layers, current, vs, progress));
    if (devices.size() > 1 && current.n_gpu_layers != 0) {
      const Setting device{"gpu device", "-dev", "devices", [](const RunConfig& c) { return c.devices; },
                           [](RunConfig& c, const std::string& v) { c.devices = v; },
                           [](const std::string& v) { return nlohmann::json(v); }};
      std::vector<std::string> ds = devices;
      if (!current.devices.empty() && std::find(ds.begin(), ds.end(), current.devices) == ds.end())
        ds.push_back(current.devices);
      result.steps.push_back(sweep(options, device, current, ds, progress));
    }
  }
  result.best = current;

  // Confirm: alternate the configuration given and the best, so drift hits both alike.
  if (!(result.best == result.start)) {
    std::vector<double> ratios;
    for (int round = 0; round < kConfirmRounds; ++round) {
      progress(fmt::format("confirming: round {}/{}, the configuration as given", round + 1, kConfirmRounds));
      result.start_rounds.push_back(measure(options, result.start, "confirm: as given"));
      progress(fmt::format("confirming: round {}/{}, the best one", round + 1, kConfirmRounds));
      result.best_rounds.push_back(measure(options, result.best, "confirm: best"));
      const auto a = turn_s(result.start_rounds.back(), options.n_prompt, options.n_gen);
      const auto b = turn_s(result.best_rounds.back(), options.n_prompt, options.n_gen);
      if (a && b) ratios.push_back(*a / *b);
    }
    if (!ratios.empty()) result.gain = stats::quantile(ratios, 0.5);
  }
  if (children) children(started, started);
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

result::TuneReport to_report(const TuneResult& r) {
  result::TuneReport out;
  out.model = r.options.model_path;
  out.n_prompt = r.options.n_prompt;
  out.n_gen = r.options.n_gen;
  out.repetitions = r.options.repetitions;
  out.start = r.start.bench_args();
  out.best = r.best.bench_args();
  out.steps = r.steps;
  out.start_rounds = r.start_rounds;
  out.best_rounds = r.best_rounds;
  out.gain = r.gain;
  out.edgeprobe_command = shell_join({"edgeprobe", "bench", "-m", out.model}) + " " + r.best.flags_text();
  out.llama_bench_command = shell_join({"llama-bench", "-m", out.model}) + " " + r.best.llama_cpp_flags_text();
  out.wall_s = r.wall_s;
  return out;
}

}  // namespace edgeprobe::doctor
