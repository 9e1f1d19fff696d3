#include "cli/cmd_bench.h"

#include <CLI/CLI.hpp>
#include <ggml.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>

#include "cli/common.h"
#include "core/error.h"
#include "engine/backend.h"
#include "engine/llama_engine.h"
#include "model/gguf_info.h"
#include "model/synth.h"
#include "report/reporter.h"
#include "core/fs.h"
#include "platform/cpu_features.h"
#include "platform/isa_gap.h"
#include "probe/ceilings.h"
#include "probe/roofline.h"
#include "runner/bench_runner.h"
#include "runner/enrich.h"
#include "store/store.h"
#include "runner/provenance.h"
#include "workload/plan.h"

namespace edgeprobe::cli {
namespace {

struct BenchArgs {
  std::vector<std::string> models, n_prompt{"512"}, n_gen{"128"}, prompt_gen, n_depth{"0"}, threads, cpu_masks,
      cpu_strict{"0"}, poll{"50"}, n_batch{"2048"}, n_ubatch{"512"}, flash_attn{"auto"}, type_k{"f16"},
      type_v{"f16"}, mmap{"1"};
  int repetitions = 5;
  double delay_s = 0;
  bool no_warmup = false;
  uint64_t seed = 42;
  std::string output_format = "md";
  std::string output_file;
  std::string cpu_variant;
  bool verbose = false;
  bool quiet = false;
  bool no_hash = false;
  bool keep_llama_log = false;
  double sample_hz = 20;
  std::string sysfs_root = "/";
  std::string trace_file;
  std::string ceilings = "auto";
  std::string db;
  bool no_store = false;
  int64_t resume = 0;
};

std::vector<std::string> split_all(const std::vector<std::string>& texts) {
  std::vector<std::string> out;
  for (const auto& t : texts)
    for (auto& item : workload::split_list(t)) out.push_back(item);
  return out;
}

workload::SweepSpec to_spec(const BenchArgs& a) {
  workload::SweepSpec s;
  s.models = split_all(a.models);
  s.n_prompt = workload::parse_int_lists(a.n_prompt, "-p");
  s.n_gen = workload::parse_int_lists(a.n_gen, "-n");
  for (const auto& pg : a.prompt_gen) {
    const auto v = workload::parse_int_list(pg, "-pg");
    if (v.size() != 2) throw_bad_input("invalid value '{}' for -pg: expected two numbers, prompt,generate", pg);
    s.prompt_gen.emplace_back(v[0], v[1]);
  }
  // As in llama-bench, -pg alone means only the pg tests unless -p/-n were given too.
  s.n_depth = workload::parse_int_lists(a.n_depth, "-d");
  s.threads = workload::parse_int_lists(a.threads, "-t");
  s.cpu_masks = a.cpu_masks.empty() ? std::vector<std::string>{""} : split_all(a.cpu_masks);
  s.cpu_strict = workload::parse_int_lists(a.cpu_strict, "--cpu-strict");
  s.poll = workload::parse_int_lists(a.poll, "--poll");
  s.n_batch = workload::parse_int_lists(a.n_batch, "-b");
  s.n_ubatch = workload::parse_int_lists(a.n_ubatch, "-ub");
  s.flash_attn.clear();
  for (const auto& f : split_all(a.flash_attn)) s.flash_attn.push_back(workload::parse_flash_attn(f));
  s.type_k = split_all(a.type_k);
  s.type_v = split_all(a.type_v);
  s.use_mmap.clear();
  for (const auto& m : split_all(a.mmap)) s.use_mmap.push_back(workload::parse_bool(m, "--mmap"));

  // Validate values up front: a typo must fail in a second, not an hour into a sweep.
  for (int v : s.n_prompt) if (v < 0 || v > 1 << 20) throw_bad_input("-p {} out of range 0..1048576", v);
  for (int v : s.n_gen) if (v < 0 || v > 1 << 20) throw_bad_input("-n {} out of range 0..1048576", v);
  for (int v : s.n_depth) if (v < 0 || v > 1 << 22) throw_bad_input("-d {} out of range", v);
  for (int v : s.threads) if (v < 1 || v > 512) throw_bad_input("-t {} out of range 1..512", v);
  for (int v : s.poll) if (v < 0 || v > 100) throw_bad_input("--poll {} out of range 0..100", v);
  for (int v : s.cpu_strict) if (v != 0 && v != 1) throw_bad_input("--cpu-strict {} must be 0 or 1", v);
  for (int v : s.n_batch) if (v < 1) throw_bad_input("-b {} must be positive", v);
  for (int v : s.n_ubatch) if (v < 1) throw_bad_input("-ub {} must be positive", v);
  for (const auto& m : s.cpu_masks) if (!m.empty()) engine::parse_cpu_mask(m);
  for (const auto& t : s.type_k) engine::parse_cache_type(t);
  for (const auto& t : s.type_v) engine::parse_cache_type(t);
  return s;
}

int run(const BenchArgs& args, const std::vector<std::string>& command_line) {
  if (args.repetitions < 1 || args.repetitions > 10000) throw_bad_input("-r {} out of range 1..10000", args.repetitions);
  if (args.delay_s < 0 || args.delay_s > 3600) throw_bad_input("--delay {} out of range 0..3600 seconds", args.delay_s);
  workload::SweepSpec spec = to_spec(args);
  if (spec.models.empty()) spec.models.push_back("");  // the built-in default model
  if (args.resume && args.no_store) throw_bad_input("--resume needs the results store; drop --no-store");
  if (args.resume) spec.models.clear();  // the stored plan says what to run

  // Check every model file ourselves before llama.cpp sees it: llama.cpp aborts on some
  // hostile files instead of returning an error.
  engine::start_log_capture(args.verbose);
  Progress progress(!args.quiet);
  progress.update("loading the ggml CPU backend");
  const auto& backend = engine::load_cpu_backend(args.cpu_variant);
  for (auto& m : spec.models) {
    if (m.empty() || m.starts_with("synth:")) progress.update("preparing the synthesized model (written on first use, then cached)");
    m = model::resolve_model_spec(m);
  }
  std::vector<model::GgufInfo> infos;
  std::map<std::string, int> model_index;
  for (const auto& path : spec.models) {
    if (model_index.count(path)) continue;
    model_index[path] = static_cast<int>(infos.size());
    infos.push_back(model::read_gguf_info(path));
  }
  auto cases = workload::expand(spec, workload::default_thread_count());
  if (cases.empty() && !args.resume) throw_bad_input("nothing to run: every -p, -n and -pg value is 0");

  // The results store: every repetition is committed as it completes; --resume takes
  // the stored plan and runs only what is missing.
  std::unique_ptr<store::Store> db;
  store::RunId run_id = 0;
  std::map<std::pair<size_t, int>, result::Repetition> stored;
  runner::RunnerOptions options;
  options.repetitions = args.repetitions;
  options.delay_s = args.delay_s;
  options.warmup = !args.no_warmup;
  options.seed = args.seed;
  if (!args.no_store) {
    db = store::open_store(args.db.empty() ? store::default_db_path() : args.db,
                           args.resume ? store::Mode::kMustExist : store::Mode::kCreate);
  }
  if (args.resume) {
    const auto rec = db->get_run(args.resume);
    if (rec.kind != "bench") throw_bad_input("--resume {}: that run is a {} run, not a bench run", args.resume, rec.kind);
    if (rec.status == "complete") throw_bad_input("run {} is already complete; nothing to resume", args.resume);
    const nlohmann::json& plan = rec.plan;
    cases.clear();
    for (const auto& c : plan.at("cases")) cases.push_back(result::test_case_from_json(c.at("config"), c.at("model_path")));
    options.repetitions = plan.at("repetitions");
    options.delay_s = plan.at("delay_s");
    options.warmup = plan.at("warmup");
    options.seed = plan.at("seed");
    const nlohmann::json done = db->load_run(args.resume);
    for (const auto& c : done["configurations"])
      for (const auto& rep : c["repetitions"])
        stored[{c["ordinal"].get<size_t>(), rep["ordinal"].get<int>()}] = result::repetition_from_json(rep["result"]);
    db->resume_run(args.resume);
    run_id = args.resume;
    for (const auto& c : cases) {
      if (!model_index.count(c.model_path)) {
        model_index[c.model_path] = static_cast<int>(infos.size());
        infos.push_back(model::read_gguf_info(c.model_path));
      }
    }
  }

  std::ofstream file;
  if (!args.output_file.empty()) {
    file.open(args.output_file, std::ios::trunc);
    if (!file) throw_bad_input("cannot write --output '{}'", args.output_file);
  }
  std::ostream& out = args.output_file.empty() ? std::cout : file;
  if (!args.trace_file.empty() && !std::ofstream(args.trace_file, std::ios::app))
    throw_bad_input("cannot write --trace '{}'", args.trace_file);
  auto reporter = report::make_reporter(args.output_format, out);

  result::BenchReport report;
  report.provenance = runner::make_provenance(backend, join_command_line(command_line));
  for (const auto& info : infos) {
    progress.update(fmt::format("hashing {}", info.path));
    report.provenance.models.push_back(runner::model_identity(info, !args.no_hash));
  }
  // What the CPU can do next to what the loaded variant was built for: the seed's
  // silent fallback shows up as a gap here.
  const FsRoot fs(args.sysfs_root);
  const auto cpu_features = platform::detect_cpu_features(fs);
  report.provenance.extra["cpu_features"] = platform::to_json(cpu_features);
  report.provenance.extra["isa_gap"] = platform::to_json(platform::compare_isa(cpu_features, backend));

  // The device's own ceilings, measured once per device and build (then cached), before
  // the sampler starts so the probe does not disturb the timeline.
  if (args.ceilings != "auto" && args.ceilings != "off" && args.ceilings != "refresh")
    throw_bad_input("--ceilings '{}': use auto, refresh or off", args.ceilings);
  std::vector<std::optional<probe::DeviceCeilings>> ceilings(infos.size());
  if (args.ceilings != "off") {
    for (size_t i = 0; i < infos.size(); ++i) {
      progress.update("measuring the device's ceilings (cached after the first run)");
      probe::ProbeOptions po;
      po.sysfs_root = args.sysfs_root;
      po.model_path = infos[i].path;
      po.variant = backend.variant;
      try {
        ceilings[i] = probe::load_or_measure(po, args.ceilings == "refresh" && i == 0);
        // The model's own matmuls at this sweep's ubatches and thread counts (cached too).
        probe::KernelNeeds needs;
        for (const auto& c : cases) {
          if (c.model_path != infos[i].path) continue;
          if (c.n_prompt > 0) needs.prefill_tokens.insert(probe::prefill_kernel_tokens(c.n_prompt, c.n_ubatch));
          if (c.n_gen > 0) needs.decode_threads.insert(c.n_threads);
        }
        progress.update("measuring the model's kernels (cached after the first run)");
        probe::ensure_model_kernels(*ceilings[i], infos[i], needs, po);
      } catch (const Error& e) {
        if (e.kind() == ErrorKind::kBadInput) throw;
        std::cerr << "edgeprobe: warning: ceilings unavailable: " << e.what() << "\n";
      }
    }
    if (ceilings[0]) report.provenance.extra["ceilings"] = probe::to_json(*ceilings[0]);
  }

  reporter->begin(report.provenance, cases);
  if (db) {
    if (!args.resume) {
      nlohmann::json plan_cases = nlohmann::json::array();
      for (const auto& c : cases) plan_cases.push_back({{"model_path", c.model_path}, {"config", result::to_json(c)}});
      const nlohmann::json plan = {{"kind", "bench"}, {"cases", plan_cases}, {"repetitions", options.repetitions},
                                   {"delay_s", options.delay_s}, {"warmup", options.warmup}, {"seed", options.seed}};
      run_id = db->begin_run(store::RunKind::kBench, result::to_json(report.provenance), plan);
    }
    for (size_t i = 0; i < cases.size(); ++i) {
      nlohmann::json config = result::to_json(cases[i]);
      config["model_path"] = cases[i].model_path;
      config["test"] = cases[i].name();
      db->add_configuration(run_id, static_cast<int64_t>(i), config);
    }
  }
  runner::RunnerCallbacks callbacks;
  callbacks.progress = [&](const std::string& s) { progress.update(s); };
  callbacks.result = [&](const result::TestResult& r) {
    progress.finish();
    reporter->add(r);
  };
  const RunClock clock;
  runner::TelemetryRecorder recorder(args.sample_hz, args.sysfs_root, clock);
  callbacks.event = [&](const PhaseEvent& e) { recorder.on_event(e); };
  callbacks.stored_repetition = [&](size_t i, int r) -> std::optional<result::Repetition> {
    auto it = stored.find({i, r});
    if (it == stored.end()) return std::nullopt;
    return it->second;
  };
  callbacks.repetition = [&](size_t i, const workload::TestCase& test, result::Repetition& rep) {
    recorder.enrich_repetition(test.name(), rep);
    if (db) db->record_repetition(run_id, static_cast<int64_t>(i), rep.index, result::to_json(rep));
  };
  size_t finished_cases = 0;
  callbacks.enrich = [&](result::TestResult& r, const std::vector<PhaseEvent>&) {
    if (db) {
      db->finish_configuration(run_id, static_cast<int64_t>(finished_cases),
                               r.error ? store::Status::kFailed : store::Status::kComplete, r.error ? r.error->message : "");
    }
    ++finished_cases;
    recorder.enrich(r);
    if (const auto& c = ceilings[static_cast<size_t>(r.model_index)]) r.roofline = runner::roofline_json(r, infos[static_cast<size_t>(r.model_index)], *c);
  };
  report.results = runner::run_bench(cases, options, clock, [&](const std::string& p) { return model_index.at(p); },
                                     callbacks);
  recorder.stop();
  progress.finish();
  if (args.keep_llama_log) {
    // For doctor: llama.cpp's own words about fallbacks, repacking and buffer types.
    nlohmann::json lines = nlohmann::json::array();
    // Info and above: the debug lines (one per tensor) say nothing doctor looks for.
    for (const auto& line : engine::captured_log())
      if (line.level >= GGML_LOG_LEVEL_INFO) lines.push_back({{"level", line.level}, {"text", line.text}});
    report.provenance.extra["llama_log"] = std::move(lines);
  }
  reporter->end(report);
  recorder.write_trace(args.trace_file);
  if (db) {
    const bool interrupted = runner::stop_requested();
    db->finish_run(run_id, interrupted ? store::Status::kFailed : store::Status::kComplete,
                   interrupted ? "interrupted" : "");
    if (!args.quiet)
      std::cerr << "edgeprobe: stored as run " << run_id << " in " << db->location()
                << (interrupted ? fmt::format(" (interrupted: 'edgeprobe bench --resume {}' finishes it)", run_id) : "")
                << "\n";
  }

  // Every row is written; now say what failed, once per distinct message, and exit non-zero.
  int exit_code = 0;
  std::vector<std::string> said;
  for (const auto& r : report.results) {
    if (!r.error) continue;
    if (std::find(said.begin(), said.end(), r.error->message) == said.end()) {
      std::cerr << "edgeprobe: error: " << r.config.name() << ": " << r.error->message << "\n";
      said.push_back(r.error->message);
    }
    if (exit_code == 0) exit_code = r.error->kind == "bad_input" ? 2 : r.error->kind == "bug" ? 1 : 3;
  }
  return exit_code;
}

}  // namespace

void register_bench(CLI::App& app, const std::vector<std::string>& command_line) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "Measure prefill and decode apart, per token, through libllama");
  cmd->add_option("-m,--model", a->models, "GGUF model file(s), comma list or repeated; synth:SHAPE[:QUANT] for a synthesized one "
                 "(default: synth:tinyllama-1.1b:q4_0)");
  cmd->add_option("-p,--n-prompt", a->n_prompt, "Prompt lengths (pp tests), e.g. 512 or 64-512*2")->capture_default_str();
  cmd->add_option("-n,--n-gen", a->n_gen, "Generation lengths (tg tests)")->capture_default_str();
  cmd->add_option("--pg", a->prompt_gen, "Prompt+generation pairs 'pp,tg' (alias -pg; repeat for more)");
  cmd->add_option("-d,--n-depth", a->n_depth, "Context depth filled before each timed run")->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "Thread counts (default: physical cores available)");
  cmd->add_option("-C,--cpu-mask", a->cpu_masks, "CPU affinity masks in hex, e.g. 0x3");
  cmd->add_option("--cpu-strict", a->cpu_strict, "Strict placement, one CPU per thread (0|1)")->capture_default_str();
  cmd->add_option("--poll", a->poll, "Threadpool polling level 0..100")->capture_default_str();
  cmd->add_option("-b,--batch-size", a->n_batch, "Logical batch sizes")->capture_default_str();
  cmd->add_option("--ubatch-size", a->n_ubatch, "Physical batch sizes (alias -ub)")->capture_default_str();
  cmd->add_option("--flash-attn", a->flash_attn, "Flash attention on|off|auto (alias -fa)")->capture_default_str();
  cmd->add_option("--cache-type-k", a->type_k, "K cache types (alias -ctk)")->capture_default_str();
  cmd->add_option("--cache-type-v", a->type_v, "V cache types (alias -ctv)")->capture_default_str();
  cmd->add_option("--mmap", a->mmap, "Load with mmap (1) or read into memory (0) (alias -mmp)")->capture_default_str();
  cmd->add_option("-r,--repetitions", a->repetitions, "Timed repetitions per test")->capture_default_str();
  cmd->add_option("--delay", a->delay_s, "Seconds to sleep before each test (cool-down)")->capture_default_str();
  cmd->add_flag("--no-warmup", a->no_warmup, "Skip the untimed full-length warm-up run (alias -nw)");
  cmd->add_option("--seed", a->seed, "Seed for the prompt tokens")->capture_default_str();
  cmd->add_option("-o,--output-format", a->output_format, "md, csv, json or jsonl")->capture_default_str();
  cmd->add_option("--output", a->output_file, "Write results to FILE instead of stdout");
  cmd->add_option("--cpu-variant", a->cpu_variant,
                  "Load this ggml CPU variant (e.g. sse42) instead of the best one for this CPU");
  cmd->add_flag("--no-hash", a->no_hash, "Skip the model file's SHA-256 (big files on slow storage)");
  cmd->add_flag("--llama-log", a->keep_llama_log, "Keep llama.cpp's log lines (info and above) in the json result as provenance.llama_log");
  cmd->add_option("--sample-hz", a->sample_hz, "Telemetry sampling rate (0 = off)")->capture_default_str();
  cmd->add_option("--sysfs-root", a->sysfs_root, "Read sysfs/procfs under this root (fixture trees)")->capture_default_str();
  cmd->add_option("--trace", a->trace_file, "Write a Chrome/Perfetto trace of phases, tokens and telemetry");
  cmd->add_option("--ceilings", a->ceilings, "Device ceilings for efficiency: auto (cached probe), refresh or off")
      ->capture_default_str();
  cmd->add_option("--db", a->db, "Results store (default: ~/.local/share/edgeprobe/results.db)");
  cmd->add_flag("--no-store", a->no_store, "Do not record the run in the results store");
  cmd->add_option("--resume", a->resume, "Finish an interrupted bench run from the store (its stored plan)");
  cmd->add_flag("-v,--verbose", a->verbose, "Echo llama.cpp's log to stderr");
  cmd->add_flag("-q,--quiet", a->quiet, "No progress on stderr");
  cmd->callback([a, command_line] {
    const int rc = run(*a, command_line);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace edgeprobe::cli
