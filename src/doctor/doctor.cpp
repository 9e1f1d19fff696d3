#include "doctor/doctor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>

#include "core/error.h"
#include "core/text.h"
#include "result/document.h"
#include "result/migrate.h"
#include "result/result.h"

namespace edgeprobe::doctor {
namespace {

// 1, 2, 4, ... up to the usable CPUs, and the usable count itself: enough to see the
// scaling curve and the "more threads is slower" anomaly without a run per count.
std::vector<int> sweep_counts(int usable, int configured) {
  std::set<int> counts;
  for (int t = 1; t <= usable; t *= 2) counts.insert(t);
  if (usable >= 1) counts.insert(usable);
  counts.erase(configured);
  return {counts.begin(), counts.end()};
}

// A screened count worth confirming in pairs looked at least this much faster.
constexpr double kScreenGain = 1.05;

// llama-bench's default run (pp512 and tg128, 5 repetitions each after a warm-up run,
// one load per test) as estimated from the first child's rates; twice that is the budget.
double auto_budget_s(const BenchRun& primary, const DoctorOptions& o) {
  const Rates r = rates(primary.report, o.n_prompt, o.n_gen);
  if (!r.pp || !r.tg || *r.pp <= 0 || *r.tg <= 0) return kMinAutoBudget;
  double load_s = 0;
  if (const auto* res = report_view::find_result(primary.report, "pp" + std::to_string(o.n_prompt)); res && !res->load_ms.empty())
    load_s = res->load_ms.front() / 1000;
  const double llama_bench_s = 6 * (512 / *r.pp + 128 / *r.tg) + 2 * load_s;
  return std::max(kMinAutoBudget, 2 * llama_bench_s);
}

// Whether the first run used a GPU: offloaded layers, or ran on the CPU with a GPU
// device present (a pair then measures the other way).
enum class GpuUse { kNone, kOffloaded, kIdle };
GpuUse gpu_use(const std::optional<result::BenchReport>& report) {
  if (!report) return GpuUse::kNone;
  bool device = false;
  for (const auto& b : report->provenance.engine.gpu_backends) device = device || !b.devices.empty();
  if (!device) return GpuUse::kNone;
  for (const auto& r : report->results)
    if (r.placement.layers_offloaded > 0) return GpuUse::kOffloaded;
  return GpuUse::kIdle;
}

// A baseline read into its structs by `read`: a field of a type edgeprobe never writes, or
// a document of another shape, is bad input that names the file.
template <typename Read>
auto read_baseline(const std::string& name, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const nlohmann::json::exception& ex) {
    throw_bad_input("--baseline '{}': a field holds a type edgeprobe never writes there ({}); is it an edgeprobe result?", name,
                    one_line(ex.what(), 120));
  } catch (const Error& ex) {
    if (ex.kind() != ErrorKind::kBadInput) throw;
    throw_bad_input("--baseline '{}': {}", name, ex.what());
  }
}

result::BenchReport typed_baseline(const nlohmann::json& j, const std::string& name) {
  return read_baseline(name, [&] { return result::bench_report_from_json(j); });
}

}  // namespace

ChildTests default_tests(const DoctorOptions& o) { return {o.n_prompt, o.n_gen, o.repetitions, true, {}}; }

BenchRun run_bench_child(const DoctorOptions& options, const std::string& label, const RunConfig& config,
                         const ChildTests& tests, const SpeedProbe* probe) {
  if (!options.bench_child) throw Error(ErrorKind::kBug, "doctor: no bench child runner (app::doctor_options sets it)");
  BenchRun run;
  run.label = label;
  run.config = config;
  const ProcessWatch watch;
  const auto from = std::chrono::steady_clock::now();
  ChildOutput child = options.bench_child(options, config, tests);
  if (probe) run.reference_ms = probe->samples(from, std::chrono::steady_clock::now());
  run.window = watch.finish(child.wall_s, child.cpu_s, usable_cpus(collect_device_facts(FsRoot("/")), config));
  run.command = std::move(child.command);
  run.report = std::move(child.report);
  run.exit_code = child.exit_code;
  run.error = std::move(child.error);
  return run;
}

nlohmann::json load_baseline(const std::string& path) {
  return baseline_from_json(result::read_result_file(path, "--baseline result"), path);
}

nlohmann::json baseline_from_json(nlohmann::json j, const std::string& name) {
  // A doctor result's run of the model is its primary bench run.
  if (result::document_kind(j) == "doctor") {
    const auto doctor = read_baseline(name, [&] { return result::doctor_result_from_json(j); });
    const auto* report = std::get_if<result::DoctorReport>(&doctor);
    if (!report) throw_bad_input("--baseline '{}' is a doctor --tune result, which keeps no run of the model: give a bench or doctor result", name);
    j = report->primary ? result::to_json(*report->primary) : nlohmann::json(nullptr);
  }
  j = result::upgrade_report(j);  // a baseline from an older edgeprobe reads like a new one
  if (!j.is_object() || !j.contains("provenance") || !field(j, "provenance").contains("models") ||
      !field(field(j, "provenance"), "models").is_array() || field(field(j, "provenance"), "models").empty())
    throw_bad_input("--baseline '{}' has no provenance.models: is it an 'edgeprobe bench -o json' result?", name);
  return j;
}

Diagnosis run_doctor(const DoctorOptions& options, const ProgressFn& progress_fn) {
  const auto t0 = std::chrono::steady_clock::now();
  auto progress = [&](const std::string& s) {
    if (progress_fn) progress_fn(s);
  };
  Diagnosis d;
  Evidence& e = d.evidence;
  e.options = options;
  e.model = model::read_gguf_info(options.model_path);
  if (!options.baseline.is_null()) e.baseline = typed_baseline(options.baseline, options.baseline_name);
  else if (!options.baseline_name.empty()) e.baseline = typed_baseline(load_baseline(options.baseline_name), options.baseline_name);
  e.device = collect_device_facts(FsRoot(options.sysfs_root));
  const SpeedProbe probe;

  progress(fmt::format("measuring the configuration as given ({})", options.config.flags_text()));
  ChildTests as_given = default_tests(options);
  as_given.draft = true;
  e.primary = run_bench_child(options, "as configured", options.config, as_given, &probe);
  if (!e.primary.ok()) {
    if (e.primary.exit_code == static_cast<int>(ErrorKind::kBadInput)) throw Error(ErrorKind::kBadInput, e.primary.error);
    throw Error(ErrorKind::kEnvironment,
                fmt::format("the configuration does not run: {}{}", e.primary.error,
                            e.primary.config.flags_text().empty() ? "" : " (" + e.primary.config.flags_text() + ")"));
  }
  e.budget_s = options.budget_s > 0 ? options.budget_s : auto_budget_s(e.primary, options);
  const auto deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(e.budget_s));

  if (options.experiments) {
    const ChildTests pair_tests{options.n_prompt, options.n_gen, 1, false, {}};
    const auto turn = [&options](const BenchRun& run) { return turn_s(rates(run.report, options.n_prompt, options.n_gen), options.n_prompt, options.n_gen); };
    const int usable = static_cast<int>(usable_cpus(e.device, options.config).size());
    const bool oversubscribed = options.config.threads > std::max(usable, 1);
    int planned = (oversubscribed ? 1 : 0) + (options.config.use_mmap ? 0 : 1);
    const GpuUse gpu = gpu_use(e.primary.report);
    planned += gpu == GpuUse::kNone ? 0 : 1;
    const auto& gap = field(e.primary.report->provenance.extra, "isa_gap");
    const bool variant_forced_low = field(gap, "fallback").is_boolean() && gap["fallback"].get<bool>() && !options.config.cpu_variant.empty();
    planned += variant_forced_low ? 1 : 0;
    // Each comparison gets an equal share of what is left of the budget.
    auto share = [&](int left) {
      const auto now = std::chrono::steady_clock::now();
      return deadline <= now ? now : now + (deadline - now) / std::max(left, 1);
    };
    if (variant_forced_low) {
      RunConfig best = options.config;
      best.cpu_variant = "";
      progress(fmt::format("measuring the best CPU variant ({}) instead of {}", gap.value("best_variant", "?"), options.config.cpu_variant));
      e.variant_pairs = compare_pairs(options, probe,
                                      {"cpu variant", "--cpu-variant " + options.config.cpu_variant, gap.value("best_variant", "best"),
                                       options.config, best, pair_tests, "seconds per reference turn", turn, {}},
                                      share(planned--), options.stop_rule, progress);
    }
    // The fixes are measured in pairs in order, each with the ones before it applied, as the
    // seed's table applies them (0.5 -> 7 with the right kernels -> 22 with the threads
    // fixed): what a thread count costs depends on how fast the kernels are, so its pairs
    // run the variant the first fix loads.
    RunConfig base = options.config;
    std::string base_note;
    std::vector<std::string> base_fixes;
    if (e.variant_pairs && e.variant_pairs->verdict == PairVerdict::kFaster) {
      base.cpu_variant = "";
      base_note = fmt::format(", {}", gap.value("best_variant", "best variant"));
      base_fixes.push_back(e.variant_pairs->what);
    }
    const auto counts = sweep_counts(std::max(usable, 1), options.config.threads);
    if (!counts.empty()) {
      std::string list;
      for (int t : counts) list += (list.empty() ? "" : ",") + std::to_string(t);
      ChildTests sweep = default_tests(options);
      for (int t : counts) {
        sweep.sweep.push_back(options.config);
        sweep.sweep.back().threads = t;
      }
      sweep.repetitions = 1;  // a screen: the count worth confirming is then measured in pairs
      RunConfig config = options.config;  // the screen compares with the primary run: as configured
      config.threads = 0;
      progress(fmt::format("screening other thread counts (-t {})", list));
      e.thread_sweep = run_bench_child(options, "thread sweep -t " + list, config, sweep, &probe);
    }
    // The count to confirm: the usable CPUs when there are more threads than CPUs (the
    // first-principles fix), else the screen's fastest count when it looked clearly faster.
    int candidate = oversubscribed ? std::max(usable, 1) : 0;
    if (!oversubscribed && e.thread_sweep && e.thread_sweep->ok()) {
      const auto mine = turn(e.primary);
      double best_s = mine.value_or(0);
      for (int t : counts)
        if (auto s = turn_s(rates(e.thread_sweep->report, options.n_prompt, options.n_gen, "n_threads", t), options.n_prompt, options.n_gen);
            s && mine && *s * kScreenGain < best_s) {
          best_s = *s * kScreenGain;
          candidate = t;
        }
      if (candidate) ++planned;
    }
    if (candidate) {
      RunConfig fix = base;
      fix.threads = candidate;
      const ComparisonSpec spec{"threads", fmt::format("-t {}{}", options.config.threads, base_note),
                                fmt::format("-t {}{}", candidate, base_note), base, fix, pair_tests, "seconds per reference turn", turn,
                                base_fixes};
      e.thread_pairs = compare_pairs(options, probe, spec, share(planned--), options.stop_rule, progress);
      // The reason and the measurement disagree: measure once more, for as long again.
      if (oversubscribed && e.thread_pairs->verdict != PairVerdict::kFaster && e.thread_pairs->error.empty()) {
        progress("threads: the measurement disagrees with the oversubscription; measuring again");
        const auto again_until = std::max(std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                                                 std::chrono::duration<double>(e.thread_pairs->wall_s)),
                                          deadline);
        Comparison again = compare_pairs(options, probe, spec, again_until, options.stop_rule, progress);
        again.first_estimate = e.thread_pairs->estimate;
        again.first_verdict = e.thread_pairs->verdict;
        e.thread_pairs = std::move(again);
      }
    }
    if (!options.config.use_mmap) {
      RunConfig mmap = base;
      mmap.use_mmap = true;
      progress("measuring a load with mmap");
      e.with_mmap = run_bench_child(options, "with mmap", mmap, {8, 0, 1, false, {}}, &probe);
      const auto load_ms = [](const BenchRun& run) -> std::optional<double> {
        if (!run.report || run.report->results.empty() || run.report->results[0].load_ms.empty()) return std::nullopt;
        return run.report->results[0].load_ms.front();
      };
      e.mmap_pairs = compare_pairs(options, probe, {"mmap", "--mmap 0", "--mmap 1", base, mmap, {8, 0, 1, false, {}}, "load ms", load_ms, base_fixes},
                                   share(planned--), options.stop_rule, progress);
    }
    if (gpu != GpuUse::kNone) {
      // The GPU against the CPU, both ways: a run that offloaded against the CPU alone (the
      // GPU slower, as on many phones and boards), a run on the CPU against the GPU.
      RunConfig other = base;
      const bool offloaded = gpu == GpuUse::kOffloaded;
      other.n_gpu_layers = offloaded ? 0 : kDefaultGpuLayers;
      other.devices = offloaded ? "none" : "";
      other.op_offload = true;
      const std::string a_label = offloaded ? fmt::format("-ngl {}{}", options.config.n_gpu_layers, base_note)
                                            : fmt::format("CPU only{}", base_note);
      const std::string b_label = offloaded ? fmt::format("-dev none (CPU only){}", base_note)
                                            : fmt::format("-ngl {} (all layers on the GPU){}", kDefaultGpuLayers, base_note);
      progress(offloaded ? "measuring the model on the CPU alone against the GPU" : "measuring the model on the GPU");
      e.gpu_pairs = compare_pairs(options, probe, {"gpu", a_label, b_label, base, other, pair_tests, "seconds per reference turn", turn, base_fixes},
                                  share(planned--), options.stop_rule, progress);
    }
  }
  // The machine's speed over every child of the diagnosis.
  e.reference_best_ms = probe.best_ms();
  std::vector<double> speeds;
  auto add_speed = [&](const std::vector<double>& ms) {
    if (auto s = speed_factor(ms, e.reference_best_ms)) speeds.push_back(*s);
  };
  add_speed(e.primary.reference_ms);
  if (e.thread_sweep) add_speed(e.thread_sweep->reference_ms);
  for (const auto* c : {&e.variant_pairs, &e.thread_pairs, &e.mmap_pairs, &e.gpu_pairs})
    if (*c)
      for (const auto& child : (*c)->children) add_speed(child.reference_ms);
  e.speed_variation = speed_variation(speeds);
  progress("diagnosing");
  d.findings = diagnose(e);
  sort_by_impact(d.findings);
  d.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return d;
}

}  // namespace edgeprobe::doctor
