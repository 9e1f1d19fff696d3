#include "app/bench_job.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/sysinfo.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "analysis/contamination.h"
#include "analysis/greedy_check.h"
#include "app/engine_factory.h"
#include "app/models.h"
#include "app/predict_job.h"
#include "app/stored_run.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/json_read.h"
#include "core/stop_token.h"
#include "core/subprocess.h"
#include "engine/cpu_mask.h"
#include "platform/cpu_features.h"
#include "platform/isa_gap.h"
#include "platform/vulkan_devices.h"
#include "probe/ceilings.h"
#include "probe/gpu_ceilings.h"
#include "probe/roofline.h"
#include "runner/bench_runner.h"
#include "runner/provenance.h"
#include "runner/telemetry_recorder.h"
#include "store/store.h"
#include "telemetry/layout.h"
#include "workload/sweep.h"

namespace edgeprobe::app {

using nlohmann::json;

namespace {

void progress(const JobContext& c, const std::string& step) {
  if (c.sink) c.sink->progress(step);
}

// The GPU devices a plan's tests may offload to: those a test names (-dev), else every GPU
// ggml offers; none when every test keeps its layers on the CPU (-ngl 0, -dev none).
std::vector<std::string> offload_devices(const BenchPlan& plan, const std::vector<engine::GpuBackendInfo>& backends) {
  std::vector<std::string> all, wanted;
  for (const auto& b : backends)
    for (const auto& d : b.devices)
      if (d.type == "gpu" || d.type == "igpu") all.push_back(d.name);
  auto add = [&](const std::string& d) {
    if (std::find(all.begin(), all.end(), d) != all.end() && std::find(wanted.begin(), wanted.end(), d) == wanted.end())
      wanted.push_back(d);
  };
  for (const auto& c : plan.cases) {
    if (c.n_gpu_layers == 0 || c.devices == "none") continue;
    if (c.devices.empty()) {
      for (const auto& d : all) add(d);
      continue;
    }
    for (const auto& d : workload::split_list(c.devices, '/')) add(d);
  }
  return wanted;
}

// The device's own ceilings per model, measured once per device and build (then cached),
// before the sampler starts so the probe does not disturb the timeline. A device whose
// ceilings cannot be measured still benchmarks: efficiency is then unknown.
std::vector<std::optional<probe::DeviceCeilings>> device_ceilings(const BenchPlan& plan, const ModelSet& models,
                                                                  const std::string& variant,
                                                                  const std::vector<std::string>& gpus,
                                                                  const JobContext& ctx) {
  std::vector<std::optional<probe::DeviceCeilings>> ceilings(models.infos().size());
  if (plan.ceilings == "off") return ceilings;
  for (size_t i = 0; i < models.infos().size(); ++i) {
    const auto& info = models.info(i);
    progress(ctx, "measuring the device's ceilings (cached after the first run)");
    probe::ProbeOptions po;
    po.sysfs_root = plan.env.sysfs_root;
    po.model_path = info.path;
    po.variant = variant;
    po.progress = [&ctx](const std::string& step, size_t, size_t) {
      if (step != "done") progress(ctx, "measuring the device's ceilings: " + step);
    };
    // refresh measures again but keeps a stored figure that is higher; replace stores what it
    // measures. Once per run: the models share the device's ceilings.
    const bool refresh = (plan.ceilings == "refresh" || plan.ceilings == "replace") && i == 0;
    po.replace = plan.ceilings == "replace";
    po.remeasure_kernels = refresh;
    try {
      ceilings[i] = probe::load_or_measure(po, refresh);
      // The model's own matmuls at this sweep's ubatches and thread counts (cached too).
      probe::KernelNeeds needs;
      for (const auto& c : plan.cases) {
        if (c.model_path != info.path) continue;
        if (c.n_prompt > 0) {
          needs.prefill_tokens.insert(probe::prefill_kernel_tokens(c.n_prompt, c.n_ubatch));
          needs.prefill_threads.insert(c.n_threads);  // the prediction's rate at the test's count
        }
        if (c.n_gen > 0) needs.decode_threads.insert(c.n_threads);
      }
      progress(ctx, "measuring the model's kernels (cached after the first run)");
      probe::ensure_model_kernels(*ceilings[i], info, needs, po);
      // A test that offloads is judged against the GPU's own ceilings (cached likewise).
      // A GPU whose probe fails leaves its tests without a roofline, not the CPU's tests.
      if (!gpus.empty()) {
        try {
          progress(ctx, "measuring the GPU's ceilings (cached after the first run)");
          probe::ensure_gpu_ceilings(*ceilings[i], gpus, po, refresh);
          for (const auto& gpu : gpus) probe::ensure_gpu_model_kernels(*ceilings[i], gpu, info, needs, po);
        } catch (const Error& e) {
          if (e.kind() == ErrorKind::kBadInput) throw;
          if (ctx.sink) ctx.sink->warning(fmt::format("GPU ceilings unavailable: {}", e.what()));
        }
      }
      // The per-step costs a prediction adds are `predict`'s to measure (a bench, and
      // doctor's children, stay as fast as before); a result's prediction uses them when
      // cached and says so when not.
    } catch (const Error& e) {
      if (e.kind() == ErrorKind::kBadInput) throw;
      if (ctx.sink) ctx.sink->warning(fmt::format("ceilings unavailable: {}", e.what()));
      ceilings[i].reset();
    }
  }
  return ceilings;
}

// A run that fell back to a lower CPU variant keeps, next to its own ceilings, the device's
// with the best variant this CPU runs, so that explain estimates what the fallback costs
// from the run alone. One process loads one ggml variant: a probe child measures them (the
// bandwidth and storage from this device's cache, the matmuls and the model's kernels with
// that variant, cached like every ceiling) and this process reads that cache. nullopt,
// with a warning, when they cannot be had.
std::optional<probe::DeviceCeilings> best_variant_ceilings(const BenchPlan& plan, const ModelSet& models,
                                                           const platform::IsaGap& gap, bool emulated,
                                                           const JobContext& ctx) {
  if (plan.ceilings == "off" || !gap.fallback || emulated || models.infos().empty()) return std::nullopt;
  const auto& info = models.info(0);
  progress(ctx, "measuring the device's ceilings with the best CPU variant that runs here (cached after the first run)");
  int ubatch = 512;
  for (const auto& c : plan.cases)
    if (c.model_path == info.path && c.n_prompt > 0) {
      ubatch = static_cast<int>(probe::prefill_kernel_tokens(c.n_prompt, c.n_ubatch));
      break;
    }
  // No --cpu-variant: the child loads what ggml loads by default, the best variant that
  // scores for this CPU and runs here (one whose matmul faults is passed over).
  std::vector<std::string> argv = self_command();
  for (const std::string& a : {std::string("probe"), std::string("-m"), info.path, std::string("--ubatch-size"),
                               std::to_string(ubatch), std::string("-q"), std::string("-o"), std::string("json"),
                               std::string("--sysfs-root"), plan.env.sysfs_root})
    argv.push_back(a);
  SubprocessOptions options = within(1800);
  options.own_group = false;  // a Ctrl-C at the terminal reaches it too
  const auto r = run_subprocess(argv, options);
  std::string best;
  if (r.exit_code == 0) {
    try {
      best = json_read::text(json_read::field(json::parse(r.out), "isa_gap"), "loaded_variant");
    } catch (const json::exception&) {
    }
  }
  if (best == gap.loaded_variant) return std::nullopt;  // the best that runs here is the one that loaded
  probe::ProbeOptions po;
  po.sysfs_root = plan.env.sysfs_root;
  po.variant = best;
  po.measure_compute = false;  // the cache file of that variant, without loading it here
  auto c = best.empty() ? std::nullopt : probe::load_cached(po);
  if (!c && ctx.sink)
    ctx.sink->warning(fmt::format("the ceilings with the best CPU variant are unavailable ({}): explain will name the fallback "
                                  "without a factor",
                                  r.exit_code != 0 ? output_line(r.err) : best.empty() ? "the probe named no variant" : "no cache written"));
  return c;
}

// This test's ceilings with the best variant (Roofline::best_variant).
nlohmann::json best_variant_json(const result::TestResult& r, const model::GgufInfo& info, const probe::DeviceCeilings& best,
                                 const std::string& variant) {
  const auto roof = runner::roofline_of(r, info, best);
  if (!roof) return nullptr;
  return {{"variant", variant},
          {"prefill_ceiling_tokens_per_s", roof->prefill_ceiling_tokens_per_s > 0 ? json(roof->prefill_ceiling_tokens_per_s) : json(nullptr)},
          {"decode_ceiling_tokens_per_s", roof->decode_ceiling_tokens_per_s > 0 ? json(roof->decode_ceiling_tokens_per_s) : json(nullptr)},
          {"decode_bound", roof->decode_bound}};
}

// The ceilings a finished test is judged against: the host's when no layer was offloaded,
// else those of the GPU that held the model (the first device llama.cpp named); nullopt
// when that GPU's ceilings were not measured.
std::optional<probe::DeviceCeilings> ceilings_for(const result::TestResult& r, const probe::DeviceCeilings& host) {
  const auto& p = r.placement;
  if (p.layers_offloaded <= 0 || p.devices.empty()) return host;
  const std::string device = p.devices.front().substr(0, p.devices.front().find(' '));
  return probe::gpu_view(host, device);
}

// Error rows become the job's errors (each distinct message once) and its exit code:
// the first failure decides, as bench always has.
void collect_errors(const std::vector<result::TestResult>& results, JobOutcome& outcome) {
  for (const auto& r : results) {
    // A test the stop request left unrun is not a failure: the summary says the run was
    // interrupted and how to continue it, and the exit code is 130.
    if (!r.error || r.error->kind == "interrupted") continue;
    const std::string line = r.config.name() + ": " + r.error->message;
    bool said = false;
    for (const auto& e : outcome.errors) said = said || e.ends_with(": " + r.error->message);
    if (!said) outcome.errors.push_back(line);
    if (outcome.exit_code == 0)
      outcome.exit_code = static_cast<int>(error_kind_from_name(r.error->kind));
  }
}

// What explain needs to bound the cost of CPU time taken from this run: the machine's CPUs
// (telemetry's other_cpu_share is a share of all of them) and the cgroup's CPU quota.
json cpu_limits_json(const FsRoot& fs, int pid) {
  const auto cgroup = telemetry::discover_cgroup(fs, pid > 0 ? pid : 0);
  return {{"machine_cpus", std::max(1, get_nprocs())},
          {"quota_cpus", cgroup.quota_cpus ? json(*cgroup.quota_cpus) : json(nullptr)},
          {"cgroup", cgroup.version ? json(cgroup.path) : json(nullptr)}};
}

// --draft: the draft must tokenize as the target does, or its proposals mean other words:
// each target's vocabulary against the draft's, from vocabulary-only loads (a second),
// before anything is measured. A draft whose weights outweigh a target's cannot pay
// (a draft token would cost more than a target one): said, not refused.
void check_draft(const BenchPlan& plan, const ModelSet& models, const model::GgufInfo& draft,
                 engine::Engine& engine, const JobContext& ctx) {
  engine::ModelOptions vocab;
  vocab.vocab_only = true;
  vocab.path = draft.path;
  const auto draft_vocab = engine.load(vocab);
  std::set<std::string> seen;
  for (const auto& c : plan.cases) {
    if (!seen.insert(c.model_path).second) continue;
    vocab.path = c.model_path;
    const auto target_vocab = engine.load(vocab);
    if (const auto why = runner::vocabulary_mismatch(*target_vocab, *draft_vocab); !why.empty())
      throw_bad_input(
          "--draft {}: its vocabulary is not the target {}'s ({}); a draft must share the target's tokenizer",
          draft.path, c.model_path, why);
    const auto& target = models.info(static_cast<size_t>(models.index_of(c.model_path)));
    if (draft.weight_bytes() >= target.weight_bytes() && ctx.sink)
      ctx.sink->warning(
          fmt::format("--draft {} ({:.1f} MiB of weights, {} parameters) is not smaller than the target {} "
                      "({:.1f} MiB, {}): each draft token costs about a target token, so speculation "
                      "cannot pay",
                      draft.path, draft.weight_bytes() / 1048576.0, draft.n_params(), c.model_path,
                      target.weight_bytes() / 1048576.0, target.n_params()));
  }
}

}  // namespace

void record_test(store::Store& store, int64_t run, size_t case_index, const json& r) {
  const bool failed = r.value("status", "ok") != "ok";
  const json& error = r.contains("error") ? r["error"] : json(nullptr);
  store.finish_configuration(run, static_cast<int64_t>(case_index),
                             failed ? store::Status::kFailed : store::Status::kComplete,
                             failed && error.is_object() ? error.value("message", "") : "");
  const json& load = r.contains("load") && r["load"].is_object() ? r["load"] : json::object();
  const json share = load.value("page_cache_resident_share_before", json(nullptr));
  store.record_test(run, static_cast<int64_t>(case_index),
                    {{"load_ms", load.value("samples_ms", json::array())},
                     {"page_cache_resident_share", share.is_number() ? share : json(-1.0)},
                     {"telemetry", r.value("telemetry", json(nullptr))},
                     {"roofline", r.value("roofline", json(nullptr))},
                     {"serving", r.value("serving", json(nullptr))},
                     {"placement", r.value("placement", json(nullptr))},
                     {"verify", r.value("verify", json(nullptr))},
                     {"speculative", r.value("speculative", json(nullptr))},
                     {"error", error.is_object() ? error : json(nullptr)}});
}

BenchPlan stored_bench_plan(store::Store& store, int64_t run) {
  return bench_plan_from_json(resumable_plan(store, run, "bench"));
}

BenchJobResult run_bench(BenchPlan plan, const JobContext& ctx) {
  const ProcessStopWatch watching;  // a Ctrl-C from here on stops after the unit in flight
  validate(plan, workload::default_thread_count());
  for (const auto& c : plan.cases)
    if (!c.cpu_mask.empty()) engine::check_cpu_mask_usable(c.cpu_mask);  // on this machine, before anything runs
  const EngineHandle engine = make_engine(plan.env, ctx);

  // Models first: a bad file must fail before minutes of probing.
  ModelSet models;
  const bool endpoint = !plan.env.endpoint.empty();
  for (auto& c : plan.cases)
    c.model_path = endpoint && c.model_path.empty() ? endpoint_model_path(plan.env.api_model)
                                                    : models.add_spec(c.model_path, ctx.sink);
  if (endpoint) {
    plan.ceilings = "off";  // a roofline of the server's compute is not ours to draw
    plan.run.api = plan.env.api.empty() ? "completions" : plan.env.api;
  } else {
    plan.run.api = plan.env.api;
  }
  auto model_index = [&](const std::string& p) { return is_endpoint_model(p) ? 0 : models.index_of(p); };
  // The draft is resolved like a model but kept out of the set: it gets no ceilings or
  // roofline of its own, only its identity beside the models'.
  ModelSet drafts;
  if (plan.run.spec.enabled() && !endpoint) {
    plan.run.spec.draft = drafts.add_spec(plan.run.spec.draft, ctx.sink);
    check_draft(plan, models, drafts.info(0), *engine.engine, ctx);
  }
  if (!endpoint) {  // an endpoint's threads are the server's
    std::vector<int> threads;
    for (const auto& c : plan.cases) threads.push_back(c.n_threads);
    warn_oversubscription(threads, ctx);
  }

  BenchJobResult out;
  result::BenchReport& report = out.report;
  report.provenance = runner::make_provenance(engine.identity, ctx.command_line);
  if (plan.env.server_pid > 0) report.provenance.extra["telemetry_pid"] = plan.env.server_pid;
  if (!plan.run.api.empty()) report.provenance.extra["request_path"] = plan.run.api;  // compare checks it
  // Reports add a column saying which prefills were remote and which fell back.
  if (!plan.env.prefill_remote.empty()) report.provenance.extra["prefill_remote"] = plan.env.prefill_remote;
  report.provenance.models = models.identities(plan.hash_models, ctx.sink);
  std::optional<result::ModelIdentity> draft_identity;
  if (!drafts.infos().empty()) draft_identity = drafts.identities(plan.hash_models, ctx.sink).front();
  if (endpoint && report.provenance.models.empty())
    report.provenance.models.push_back(endpoint_model_identity(engine.identity));
  // What the CPU can do next to what the loaded variant was built for: the seed's
  // silent fallback shows up as a gap here.
  const FsRoot fs(plan.env.sysfs_root);
  const auto cpu_features = platform::detect_cpu_features(fs);
  report.provenance.extra["cpu_features"] = platform::to_json(cpu_features);
  // The CPUs this process may run on (affinity, cpuset): a device held to one CPU is a
  // smaller device, which `explain` counts as hardware.
  report.provenance.extra["usable_cpus"] = workload::usable_cpu_count();
  report.provenance.extra["cpu_limits"] = cpu_limits_json(fs, plan.env.server_pid);
  if (cpu_features.emulated) {  // qemu-user: features are real, timings are not
    report.provenance.extra["emulated"] = true;
    if (ctx.sink) ctx.sink->warning(platform::emulation_warning(cpu_features));
  }
  if (engine.cpu_backend)
    report.provenance.extra["isa_gap"] = platform::to_json(platform::compare_isa(cpu_features, *engine.cpu_backend));
  // When ggml's Vulkan backend took no device, what the driver lists: doctor's
  // gpu.no_device names it (a CPU-type device skipped, no driver at all). With a device,
  // a second Vulkan instance would only repeat what the backend said.
  for (const auto& gpu : report.provenance.engine.gpu_backends)
    if (gpu.name == "vulkan" && gpu.devices.empty())
      report.provenance.extra["vulkan_devices"] = platform::to_json(platform::list_vulkan_devices());

  const auto ceilings = device_ceilings(plan, models, report.provenance.engine.cpu_variant,
                                       offload_devices(plan, report.provenance.engine.gpu_backends), ctx);
  std::optional<probe::DeviceCeilings> best_ceilings;
  if (engine.cpu_backend && !ceilings.empty() && ceilings[0])
    best_ceilings = best_variant_ceilings(
        plan, models, platform::compare_isa(cpu_features, *engine.cpu_backend, engine::installed_cpu_variants()),
        cpu_features.emulated, ctx);
  if (!ceilings.empty() && ceilings[0]) report.provenance.extra["ceilings"] = probe::to_json(*ceilings[0]);

  // The store: every repetition is committed as it completes; a resumed run reuses the
  // repetitions it already holds.
  std::map<std::pair<size_t, int>, result::Repetition> stored;
  for (const auto& u : plan.completed) {  // what a lab controller already holds
    result::Repetition rep = result::repetition_from_json(u["repetition"]);
    stored[{u["case_index"].get<size_t>(), rep.index}] = std::move(rep);
  }
  int64_t run_id = 0;
  if (ctx.store) {
    if (ctx.resume_run) {
      run_id = ctx.resume_run;
      for (const auto& [key, rep] : ctx.store->completed_units(run_id).repetitions)
        stored[{static_cast<size_t>(key.configuration_ordinal), static_cast<int>(key.repetition)}] =
            result::repetition_from_json(rep);
      ctx.store->resume_run(run_id);
    } else {
      run_id = ctx.store->begin_run("bench", result::to_json(report.provenance), to_json(plan));
    }
    for (size_t i = 0; i < plan.cases.size(); ++i) {
      json config = result::to_json(plan.cases[i]);
      config["model_path"] = plan.cases[i].model_path;
      config["test"] = plan.cases[i].name();
      ctx.store->add_configuration(run_id, static_cast<int64_t>(i), config);
    }
  }
  out.outcome.run_id = run_id;
  if (ctx.sink) ctx.sink->bench_begin(report.provenance, plan.cases);

  // Progress in timed repetitions, cases x repetitions: warm-ups and loads are not units
  // (their time is spread over the rate), stored ones count as done, and so does the
  // rest of a test that failed.
  const auto reps = static_cast<size_t>(std::max(0, plan.run.repetitions));
  std::vector<size_t> reps_done(plan.cases.size(), 0);
  for (const auto& [key, rep] : stored)
    if (key.first < reps_done.size()) ++reps_done[key.first];
  auto report_units = [&] {
    if (!ctx.sink) return;
    size_t done = 0;
    for (size_t n : reps_done) done += std::min(n, reps);
    ctx.sink->units(done, plan.cases.size() * reps, "repetitions");
  };

  const RunClock clock;
  runner::TelemetryRecorder recorder(plan.env.sample_hz, plan.env.sysfs_root, clock, plan.env.server_pid);
  runner::RunnerCallbacks callbacks;
  callbacks.stop = ctx.stop;
  callbacks.progress = [&](const std::string& s) { progress(ctx, s); };
  callbacks.event = [&](const PhaseEvent& e) { recorder.on_event(e); };
  callbacks.stored_repetition = [&](size_t i, int r) -> std::optional<result::Repetition> {
    auto it = stored.find({i, r});
    if (it == stored.end()) return std::nullopt;
    return it->second;
  };
  std::set<std::string> fallbacks_said;
  callbacks.repetition = [&](size_t i, const workload::TestCase& test, result::Repetition& rep) {
    if (engine.prefill_log) {
      attach_prefill_record(*engine.prefill_log, plan.env, rep.prefill_remote, rep.ttft_ms, rep.prefill_ms,
                            rep.prefill_tokens_per_s);
      if (const auto w = fallback_warning(rep.prefill_remote, plan.env, fallbacks_said); !w.empty() && ctx.sink)
        ctx.sink->warning(w);
    }
    recorder.enrich_repetition(test.name(), rep);
    if (ctx.store) ctx.store->record_repetition(run_id, static_cast<int64_t>(i), rep.index, result::to_json(rep));
    if (ctx.sink) ctx.sink->bench_repetition(i, test, rep);
    ++reps_done[i];
    report_units();
  };
  size_t finished_cases = 0;
  callbacks.enrich = [&](result::TestResult& r, const std::vector<PhaseEvent>&) {
    ++finished_cases;
    recorder.enrich(r);
    if (r.speculative && draft_identity) r.speculative->draft = *draft_identity;
    const auto i = static_cast<size_t>(r.model_index);
    if (i < ceilings.size() && ceilings[i]) {
      // The ceilings of the device that held the model: the GPU's when layers were offloaded.
      const auto judged = ceilings_for(r, *ceilings[i]);
      if (judged) {
        r.roofline = runner::roofline_of(r, models.info(i), *judged);
        const auto& p = r.placement;
        // Op offload at -ngl 0: llama.cpp moved the prompt's matmuls to a GPU (batch >= 32).
        const bool prefill_elsewhere = p.prefill && std::any_of(p.prefill->backends.begin(), p.prefill->backends.end(),
                                                                [](const auto& b) { return b.backend != "CPU"; });
        if (r.roofline && judged->device.empty() && prefill_elsewhere && r.config.n_prompt > 0)
          r.roofline->notes.push_back(
              "the prompt's matmuls ran on a GPU (op offload at -ngl 0) while the model stayed on the CPU: prefill is "
              "judged against the CPU's ceilings (doctor's gpu.decode_on_cpu names the split)");
        if (r.roofline && !judged->device.empty() && p.layers_offloaded < p.layers_total)
          r.roofline->notes.push_back(fmt::format(
              "partial offload: {} of {} layers on {}, the rest on the CPU, so this GPU's ceilings are above what "
              "this configuration can reach",
              p.layers_offloaded, p.layers_total, judged->device));
        // The prediction from the same ceilings next to the measurement: every stored run
        // checks the model (predict --check).
        if (r.roofline) r.roofline->prediction = bench_prediction(r, models.info(i), *judged);
        if (r.roofline && best_ceilings && judged->device.empty())
          r.roofline->best_variant = best_variant_json(r, models.info(i), *best_ceilings, best_ceilings->compute.variant);
      }
    }
    if (r.verify && !plan.verify_reference.empty())
      if (const auto why = analysis::compare_continuation(*r.verify, plan.verify_reference,
                                                          result_label(plan.verify_against));
          !why.empty() && ctx.sink)
        ctx.sink->warning(r.config.name() + ": " + why);
    // What a test has beyond its repetitions, so the stored run loads back whole.
    if (ctx.store) record_test(*ctx.store, run_id, finished_cases - 1, result::to_json(r));
  };
  callbacks.result = [&](const result::TestResult& r) {
    // Stored all the same, and said in the summary: a busy machine's figures are not the device's.
    if (const auto flags = analysis::contamination(r, result::to_json(report.provenance)); !flags.empty())
      out.outcome.contaminated.push_back(fmt::format("{}: {}", r.config.name(), fmt::join(flags, "; ")));
    if (ctx.sink) ctx.sink->bench_result(r);
    if (r.error && !ctx.stop.stop_requested()) {
      reps_done[finished_cases - 1] = reps;
      report_units();
    }
  };
  report_units();
  report.results = runner::run_test_cases(*engine.engine, plan.cases, plan.run, clock,
                                     model_index, callbacks);
  recorder.stop();
  // For doctor: llama.cpp's own words about fallbacks, repacking and buffer types.
  if (plan.keep_engine_log) report.provenance.extra["llama_log"] = engine_log_json();
  if (ctx.sink) ctx.sink->bench_end(report);
  recorder.write_trace(ctx.trace_file);

  out.outcome.interrupted = ctx.stop.stop_requested();
  collect_errors(report.results, out.outcome);
  if (ctx.store) {
    size_t failed = 0;
    for (const auto& r : report.results) failed += r.error && r.error->kind != "interrupted";
    const auto status = store::finished_status(report.results.size(), failed, out.outcome.interrupted);
    ctx.store->finish_run(run_id, status, finished_error(status, out.outcome, failed, report.results.size(), "tests"));
  }
  return out;
}

}  // namespace edgeprobe::app
