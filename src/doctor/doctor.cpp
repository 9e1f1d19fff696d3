#include "doctor/doctor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/subprocess.h"
#include "result/migrate.h"

namespace edgeprobe::doctor {
namespace {

std::string first_error_line(const std::string& err) {
  std::istringstream in(err);
  std::string line, first;
  while (std::getline(in, line)) {
    if (line.starts_with("edgeprobe: error: ")) return line.substr(18);
    if (first.empty() && !line.empty()) first = line;
  }
  return first.empty() ? "no output" : first;
}

// 1, 2, 4, ... up to the usable CPUs, and the usable count itself: enough to see the
// scaling curve and the "more threads is slower" anomaly without a run per count.
std::vector<int> sweep_counts(int usable, int configured) {
  std::set<int> counts;
  for (int t = 1; t <= usable; t *= 2) counts.insert(t);
  if (usable >= 1) counts.insert(usable);
  counts.erase(configured);
  return {counts.begin(), counts.end()};
}

}  // namespace

ChildTests default_tests(const DoctorOptions& o) { return {o.n_prompt, o.n_gen, o.repetitions, true, {}}; }

BenchRun run_bench_child(const DoctorOptions& options, const std::string& label, const RunConfig& config,
                         const ChildTests& tests) {
  BenchRun run;
  run.label = label;
  run.config = config;
  run.argv = {options.edgeprobe_exe.empty() ? self_executable() : options.edgeprobe_exe,
              "bench", "-m", options.model_path,
              "-p", std::to_string(tests.n_prompt), "-n", std::to_string(tests.n_gen),
              "-r", std::to_string(tests.repetitions), "-o", "json", "--no-store", "-q", "--llama-log",
              "--sysfs-root", options.sysfs_root, "--sample-hz", fmt::format("{}", options.sample_hz)};
  if (!tests.warmup) run.argv.push_back("--no-warmup");
  // A fixture tree is another device: this machine's measured ceilings would not be its.
  if (options.sysfs_root != "/") run.argv.insert(run.argv.end(), {"--ceilings", "off"});
  for (auto& a : config.bench_args()) run.argv.push_back(a);
  run.argv.insert(run.argv.end(), tests.sweep_args.begin(), tests.sweep_args.end());

  const ProcessWatch watch;
  const auto r = run_subprocess(run.argv, options.child_timeout_s, options.child_env);
  run.window = watch.finish(r.wall_s, r.cpu_s, usable_cpus(collect_device_facts(FsRoot("/")), config));
  if (r.timed_out) {
    run.error = fmt::format("bench did not finish within {:.0f} s", options.child_timeout_s);
    return run;
  }
  try {
    run.report = nlohmann::json::parse(r.out);
  } catch (const nlohmann::json::exception&) {
    run.report = nullptr;
  }
  run.exit_code = r.exit_code;
  if (r.exit_code != 0) run.error = first_error_line(r.err);
  else if (!run.report.is_object()) run.error = "bench wrote no JSON result";
  return run;
}

nlohmann::json load_baseline(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw_bad_input("cannot read --baseline '{}': give a result written by 'edgeprobe bench -o json' or 'edgeprobe doctor -o json'", path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    throw_bad_input("--baseline '{}' is not JSON: give a result written by 'edgeprobe bench -o json' or 'edgeprobe doctor -o json'", path);
  }
  if (j.is_object() && j.contains("doctor") && field(j, "doctor").contains("primary")) j = field(field(j, "doctor"), "primary");
  j = result::upgrade_report(j);  // a baseline from an older edgeprobe reads like a new one
  if (!j.is_object() || !j.contains("provenance") || !field(j, "provenance").contains("models") ||
      !field(field(j, "provenance"), "models").is_array() || field(field(j, "provenance"), "models").empty())
    throw_bad_input("--baseline '{}' has no provenance.models: is it an 'edgeprobe bench -o json' result?", path);
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
  if (!options.baseline_path.empty()) e.baseline = load_baseline(options.baseline_path);
  e.device = collect_device_facts(FsRoot(options.sysfs_root));

  progress(fmt::format("measuring the configuration as given ({})", options.config.flags_text()));
  e.primary = run_bench_child(options, "as configured", options.config, default_tests(options));
  if (!e.primary.ok()) {
    if (e.primary.exit_code == static_cast<int>(ErrorKind::kBadInput)) throw Error(ErrorKind::kBadInput, e.primary.error);
    throw Error(ErrorKind::kEnvironment,
                fmt::format("the configuration does not run: {} (command: {})", e.primary.error, shell_join(e.primary.argv)));
  }

  if (options.experiments) {
    const auto& gap = field(e.primary.report, "provenance").value("isa_gap", nlohmann::json::object());
    if (gap.value("fallback", false) && !options.config.cpu_variant.empty()) {
      RunConfig best = options.config;
      best.cpu_variant = "";
      progress(fmt::format("measuring the best CPU variant ({}) instead of {}", gap.value("best_variant", "?"),
                           options.config.cpu_variant));
      e.best_variant = run_bench_child(options, "best CPU variant", best, default_tests(options));
    }
    const int usable = static_cast<int>(usable_cpus(e.device, options.config).size());
    const auto counts = sweep_counts(std::max(usable, 1), options.config.threads);
    if (!counts.empty()) {
      std::string list;
      for (int t : counts) list += (list.empty() ? "" : ",") + std::to_string(t);
      ChildTests sweep = default_tests(options);
      sweep.sweep_args = {"-t", list};
      RunConfig config = options.config;
      config.threads = 0;
      progress(fmt::format("measuring other thread counts (-t {})", list));
      e.thread_sweep = run_bench_child(options, "thread sweep -t " + list, config, sweep);
    }
    if (!options.config.use_mmap) {
      RunConfig mmap = options.config;
      mmap.use_mmap = true;
      progress("measuring a load with mmap");
      e.with_mmap = run_bench_child(options, "with mmap", mmap, {8, 0, 1, false, {}});
    }
  }
  progress("diagnosing");
  d.findings = diagnose(e);
  sort_by_impact(d.findings);
  d.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return d;
}

}  // namespace edgeprobe::doctor
