#include "app/doctor_child.h"

#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "app/stream_reader.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/subprocess.h"
#include "core/text.h"
#include "platform/cpu_features.h"
#include "workload/sweep.h"

namespace edgeprobe::app {
namespace {

// The distinct values of one setting across the configurations, in their order.
template <class T, class Get>
std::vector<T> values_of(const std::vector<doctor::RunConfig>& configs, Get get) {
  std::vector<T> out;
  for (const auto& c : configs)
    if (T v = get(c); std::find(out.begin(), out.end(), v) == out.end()) out.push_back(std::move(v));
  return out;
}

// What a child that sent no error event (it crashed, or never started edgeprobe) said.
std::string first_error_line(const std::string& err) {
  std::istringstream in(err);
  std::string line, first;
  while (std::getline(in, line)) {
    if (line.starts_with("edgeprobe: error: ")) return one_line(line.substr(18), 400);
    if (first.empty() && !line.empty()) first = line;
  }
  return first.empty() ? "no output" : one_line(first, 400);
}

}  // namespace

BenchPlan bench_child_plan(const doctor::DoctorOptions& o, const doctor::RunConfig& config,
                           const doctor::ChildTests& tests) {
  const std::vector<doctor::RunConfig> configs = tests.sweep.empty() ? std::vector{config} : tests.sweep;
  BenchPlan plan;
  auto& s = plan.sweep;
  s.models = {o.model_path};
  s.n_prompt = {tests.n_prompt};
  s.n_gen = {tests.n_gen};
  s.threads = values_of<int>(configs, [](const auto& c) { return c.threads; });
  if (s.threads == std::vector<int>{0}) s.threads.clear();  // unresolved: the child's default count
  s.cpu_masks = values_of<std::string>(configs, [](const auto& c) { return c.cpu_mask; });
  s.cpu_strict = values_of<int>(configs, [](const auto& c) { return c.cpu_strict; });
  s.poll = values_of<int>(configs, [](const auto& c) { return c.poll; });
  s.n_batch = values_of<int>(configs, [](const auto& c) { return c.n_batch; });
  s.n_ubatch = values_of<int>(configs, [](const auto& c) { return c.n_ubatch; });
  s.flash_attn = values_of<int>(configs, [](const auto& c) { return workload::parse_flash_attn(c.flash_attn); });
  s.type_k = values_of<std::string>(configs, [](const auto& c) { return c.type_k; });
  s.type_v = values_of<std::string>(configs, [](const auto& c) { return c.type_v; });
  s.use_mmap = values_of<int>(configs, [](const auto& c) { return c.use_mmap ? 1 : 0; });
  s.n_gpu_layers = values_of<int>(configs, [](const auto& c) { return c.n_gpu_layers; });
  s.devices = values_of<std::string>(configs, [](const auto& c) { return c.devices; });
  s.op_offload = values_of<int>(configs, [](const auto& c) { return c.op_offload ? 1 : 0; });
  const auto variants = values_of<std::string>(configs, [](const auto& c) { return c.cpu_variant; });
  // A sweep varies one setting: two would be their cross product, tests nobody asked for.
  size_t product = variants.size();
  for (size_t n : {std::max<size_t>(s.threads.size(), 1), s.cpu_masks.size(), s.cpu_strict.size(), s.poll.size(),
                   s.n_batch.size(), s.n_ubatch.size(), s.flash_attn.size(), s.type_k.size(), s.type_v.size(),
                   s.use_mmap.size(), s.n_gpu_layers.size(), s.devices.size(), s.op_offload.size()})
    product *= n;
  if (product != configs.size() || variants.size() != 1)
    throw Error(ErrorKind::kBug, fmt::format("doctor: a child's {} configurations differ in more than one setting", configs.size()));
  plan.env.cpu_variant = variants.front();
  if (tests.draft && !o.draft.empty()) {
    plan.run.spec.draft = o.draft;
    plan.run.spec.draft_max = o.draft_max;
  }
  plan.run.repetitions = tests.repetitions;
  plan.run.warmup = tests.warmup;
  plan.keep_engine_log = true;  // the checks read llama.cpp's load log
  plan.env.sysfs_root = o.sysfs_root;
  plan.env.sample_hz = o.sample_hz;
  // A fixture tree is another device: this machine's measured ceilings would not be its.
  // Under emulation there is no device whose ceilings they would be (and they take long).
  static const bool emulated = platform::detect_cpu_features(FsRoot("/")).emulated;
  if (o.sysfs_root != "/" || emulated) plan.ceilings = "off";
  return plan;
}

doctor::ChildOutput run_bench_child(const doctor::DoctorOptions& o, const doctor::RunConfig& config,
                                    const doctor::ChildTests& tests) {
  doctor::ChildOutput out;
  const std::string plan = to_json(bench_child_plan(o, config, tests)).dump();
  std::vector<std::string> argv = o.edgeprobe_exe.empty() ? self_command() : std::vector<std::string>{o.edgeprobe_exe};
  argv.insert(argv.end(), {"run", "--plan", "-"});
  out.command = "printf '%s\\n' " + shell_quote(plan) + " | " + shell_join(argv);
  StreamReader stream("in the bench child");
  SubprocessOptions po = within(o.child_timeout_s);
  po.stdin_data = plan;
  po.env = o.child_env;
  po.on_line = [&stream](std::string_view line) { stream.line(line); };
  po.own_group = false;  // a Ctrl-C at the terminal reaches the child too
  SubprocessResult r;
  try {
    r = run_subprocess(argv, po);
  } catch (const Error& e) {
    out.error = one_line(e.what(), 400);
    return out;
  }
  out.exit_code = r.exit_code;
  out.timed_out = r.timed_out;
  out.wall_s = r.wall_s;
  out.cpu_s = r.cpu_s;
  if (r.timed_out) {
    out.error = fmt::format("bench did not finish within {:.0f} s", o.child_timeout_s);
    return out;
  }
  if (stream.report().is_object()) {
    try {
      out.report = result::bench_report_from_json(stream.report());
    } catch (const std::exception& e) {  // our own binary wrote it: a mismatched edgeprobe_exe
      out.error = "its result is not a bench result this edgeprobe reads: " + one_line(e.what(), 300);
      return out;
    }
  }
  // The job's own words first (the error event, then end's errors), then its stderr.
  if (r.exit_code != 0)
    out.error = !stream.error_message().empty() ? stream.error_message()
                : !stream.errors().empty()      ? one_line(stream.errors().front(), 400)
                                                : first_error_line(r.err);
  else if (!stream.failed().empty())
    out.error = "its stream broke: " + stream.failed();
  else if (!out.report)
    out.error = "bench sent no result";
  return out;
}

}  // namespace edgeprobe::app
