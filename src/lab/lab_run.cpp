#include "lab/lab_run.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "app/models.h"
#include "app/plan.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/text.h"
#include "edgeprobe_version.h"
#include "lab/deploy.h"
#include "lab/device_state.h"
#include "lab/locked_store.h"
#include "lab/stream_recorder.h"
#include "lab/transport.h"
#include "workload/sweep.h"
#include "core/stop_token.h"

namespace edgeprobe::lab {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;


void sleep_s(double s, const StopToken& stop) {
  const double end = steady_seconds() + s;
  while (steady_seconds() < end && !stop.stop_requested())
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::min(200, static_cast<int>((end - steady_seconds()) * 1000) + 1)));
}

class DeviceRunner {
 public:
  DeviceRunner(store::Store& store, store::RunId lab_run, Device device, const std::vector<app::Plan>& plans,
               std::vector<DeviceJob> previous, const LabRunOptions& options)
      : store_(store),
        lab_run_(lab_run),
        device_(std::move(device)),
        plans_(plans),
        previous_(std::move(previous)),
        options_(options) {}

  DeviceOutcome run() {
    DeviceOutcome out{device_, {}};
    out.jobs.resize(plans_.size());
    size_t next = 0;
    try {
      transport_ = make_transport(device_);
      say("connecting ({})", transport_->describe());
      const DeviceState state = read_state(*transport_, device_);
      if (!state.reachable) throw_environment("unreachable: {}", state.why_not);
      say("{} {}, {}; deploying", state.arch, state.os, state.soc.empty() ? state.cpu : state.soc);
      std::vector<std::string> models;
      for (const auto& p : plans_) {
        for (const auto& m : app::plan_models(p)) models.push_back(m);
        if (!app::plan_prompts(p).empty()) models.push_back(app::plan_prompts(p));  // a session's own conversations
      }
      DeployOptions dopt;
      dopt.dist_dir = options_.dist_dir;
      deploy_ = deploy(*transport_, device_, state, models, dopt);
      for (; next < plans_.size() && !options_.stop.stop_requested(); ++next) {
        if (next < previous_.size() && previous_[next].status == "complete") {  // resumed: done before
          out.jobs[next] = previous_[next];
          out.jobs[next].committed = 0;
          continue;
        }
        out.jobs[next] = run_job(next);
        if (out.jobs[next].status != "complete") {
          ++next;
          break;
        }
      }
    } catch (const std::exception& e) {
      // Whatever went wrong stays with this device: the others go on.
      const std::string why = e.what();
      const auto* error = dynamic_cast<const Error*>(&e);
      if (next < out.jobs.size() && out.jobs[next].status.empty()) {
        out.jobs[next] = {previous_run(next), "failed", why, 0, error ? error->exit_code() : 1};
        record_job(next, out.jobs[next], {}, {});
        ++next;
      }
      say("failed: {}", why);
    }
    for (size_t k = next; k < out.jobs.size(); ++k)
      if (out.jobs[k].status.empty())
        out.jobs[k] = {previous_run(k), "not run", "an earlier job failed", 0, 0};
    if (options_.stop.stop_requested())
      for (auto& j : out.jobs)
        if (j.status == "not run") j.error = "interrupted";
    return out;
  }

 private:
  template <typename... Args>
  void say(fmt::format_string<Args...> f, Args&&... args) {
    if (options_.say)
      options_.say(fmt::format("[{}] {}", device_.name, fmt::format(f, std::forward<Args>(args)...)));
  }

  store::RunId previous_run(size_t k) const { return k < previous_.size() ? previous_[k].run : 0; }

  // Cooldown before a job, then a pause while the device is at its thermal ceiling.
  json hygiene(DeviceState& state) {
    const double t0 = steady_seconds();
    if (options_.cooldown.seconds > 0) {
      say("cooling down {}s", options_.cooldown.seconds);
      sleep_s(options_.cooldown.seconds, options_.stop);
    }
    auto wait_below = [&](double limit_c, const char* why) {
      while (state.max_temp_c && *state.max_temp_c > limit_c && steady_seconds() - t0 < options_.max_wait_s &&
             !options_.stop.stop_requested()) {
        say("{}: {:.1f} C > {:.1f} C, waiting", why, *state.max_temp_c, limit_c);
        sleep_s(5, options_.stop);
        state = read_state(*transport_, device_);
      }
    };
    if (options_.cooldown.until_c) wait_below(*options_.cooldown.until_c, "cooling down");
    if (options_.thermal_limit_c) wait_below(*options_.thermal_limit_c - 0.001, "thermal ceiling");
    return {{"waited_s", steady_seconds() - t0},
            {"start_temp_c", state.max_temp_c ? json(*state.max_temp_c) : json(nullptr)}};
  }

  DeviceJob run_job(size_t k) {
    const app::Plan& plan = plans_[k];
    const std::string kind = app::kind_of(plan);
    const store::RunId resume = previous_run(k);
    DeviceState before = read_state(*transport_, device_);
    if (!before.reachable) throw_environment("unreachable: {}", before.why_not);
    const json waited = hygiene(before);

    // The plan as the device reads it: its model paths, and what the store already holds.
    auto on_device = [&](const std::string& m) {
      for (const auto& [local, remote] : deploy_.models)
        if (local == m) return remote;
      return m;
    };
    app::Plan device_plan = plan;
    app::map_plan_models(device_plan, on_device);
    // What the store already holds; a doctor job is one unit: resumed, it runs again whole.
    if (auto* b = std::get_if<app::BenchPlan>(&device_plan); b && resume)
      b->completed = completed_list(store_, resume, kind);
    if (auto* s = std::get_if<app::SessionPlan>(&device_plan)) {
      if (!s->prompts.empty()) s->prompts = on_device(s->prompts);
      if (resume) s->completed = completed_list(store_, resume, kind);
    }
    const std::string name = fmt::format("lab{}-job{}.json", lab_run_, k);
    const fs::path local =
        fs::temp_directory_path() / fmt::format("edgeprobe-{}-{}-{}", getpid(), device_.name, name);
    {
      std::ofstream f(local);
      f << app::to_json(device_plan).dump();
      if (!f) throw_environment("cannot write {}", local.string());
    }
    const SubprocessResult mk =
        transport_->run("mkdir -p " + shell_quote(device_.workdir + "/plans"), within(60));
    if (mk.exit_code != 0) throw_environment("cannot make the plans directory: {}", output_line(mk.err));
    transport_->push(local.string(), device_.workdir + "/plans/" + name, 600);
    fs::remove(local);

    const std::string home = device_.transport == "adb" ? "export HOME=\"$PWD\"; " : "";
    const std::string command = "cd " + shell_quote(device_.workdir) + " && " + home + "exec " +
                                deploy_.launcher + " run --plan " + shell_quote("plans/" + name);
    StreamRecorder recorder(store_,
                            {{"lab_run", lab_run_},
                             {"device", device_.name},
                             {"job", k},
                             {"transport", device_.transport},
                             {"labels", device_.labels}},
                            resume);
    say("job {}/{} ({}) started{}", k + 1, plans_.size(), kind,
        resume ? fmt::format(", resuming run {}", resume) : "");
    double last_said = steady_seconds();
    SubprocessOptions po;
    po.timeout_s = options_.job_timeout_s;
    po.cancel = [stop = options_.stop] { return stop.stop_requested(); };
    po.on_line = [&](std::string_view line) {
      recorder.line(line);
      if (steady_seconds() - last_said >= 5) {
        last_said = steady_seconds();
        say("{}", render_plain(recorder.progress()));
      }
    };
    const SubprocessResult r = transport_->run(command, po);
    if (!recorder.ended()) {
      std::string why = transport_->unreachable(r);
      if (why.empty() && r.cancelled) why = "interrupted";
      if (why.empty() && !recorder.failed().empty()) why = recorder.failed();
      if (why.empty())
        why =
            fmt::format("edgeprobe exited {} without finishing its stream: {}", r.exit_code, output_line(r.err));
      why = fmt::format("{} (after {} units committed)", why, recorder.committed());
      recorder.finish_cut(why);
    }
    DeviceJob job;
    job.run = recorder.run_id() ? recorder.run_id() : resume;
    job.committed = recorder.committed();
    if (recorder.ended()) {
      job.exit_code = recorder.exit_code();
      job.status = "complete";
      if (!recorder.errors().empty()) job.error = recorder.errors().front();
    } else {
      job.status = "failed";
      job.error = recorder.failed();
      job.exit_code = recorder.exit_code() ? recorder.exit_code() : 3;
    }
    DeviceState after = read_state(*transport_, device_);
    record_job(k, job, lab_state(before, after, waited), {});
    if (job.status == "complete")
      say("job {}/{} done: {} units committed to run {}{}", k + 1, plans_.size(), job.committed, job.run,
          job.error.empty() ? "" : " (with errors: " + job.error + ")");
    else
      say("job {}/{} failed: {}", k + 1, plans_.size(), job.error);
    return job;
  }

  json lab_state(const DeviceState& before, const DeviceState& after, const json& waited) const {
    const bool hot =
        options_.thermal_limit_c && after.max_temp_c && *after.max_temp_c >= *options_.thermal_limit_c;
    return {{"before", to_json(before)},
            {"after", to_json(after)},
            {"throttled", before.capped() || (after.reachable && after.capped()) || hot},
            {"rooted", before.rooted},
            {"pinned", before.pinned()},
            {"hygiene", waited}};
  }

  // Where the lab run says what became of this device's job (the latest entry wins), and
  // the device's state around it in the job's own run.
  void record_job(size_t k, const DeviceJob& job, const json& state, const json&) {
    try {
      if (job.run && !state.is_null()) store_.record_run_summary(job.run, "lab", state);
      store::LabJob row;
      row.device = device_.name;
      row.job = static_cast<int64_t>(k);
      row.status = job.status;
      row.error = job.error;
      row.device_run = job.run;
      row.detail = {{"committed", job.committed}, {"exit_code", job.exit_code}, {"state", state}};
      store_.record_lab_job(lab_run_, row);
    } catch (const std::exception& e) {
      say("could not record the job in the store: {}", e.what());
    }
  }

  store::Store& store_;
  store::RunId lab_run_;
  Device device_;
  const std::vector<app::Plan>& plans_;
  std::vector<DeviceJob> previous_;
  const LabRunOptions& options_;
  std::unique_ptr<Transport> transport_;
  DeployResult deploy_;
};

LabRunResult run_devices(store::Store& raw_store, store::RunId lab_run, const std::vector<Device>& devices,
                         const std::vector<app::Plan>& plans,
                         const std::map<std::string, std::vector<DeviceJob>>& previous,
                         const LabRunOptions& options) {
  const ProcessStopWatch watching;  // a Ctrl-C from here on stops after the jobs in flight
  LockedStore store(raw_store);
  LabRunResult result;
  result.lab_run = lab_run;
  result.devices.resize(devices.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < devices.size(); ++i) {
    auto it = previous.find(devices[i].name);
    std::vector<DeviceJob> prev = it == previous.end() ? std::vector<DeviceJob>{} : it->second;
    threads.emplace_back([&, i, prev] {
      DeviceRunner runner(store, lab_run, devices[i], plans, prev, options);
      result.devices[i] = runner.run();
    });
  }
  for (auto& t : threads) t.join();
  std::vector<std::string> failed;
  for (const auto& d : result.devices) {
    for (const auto& j : d.jobs)
      if (result.exit_code == 0 && j.exit_code != 0) result.exit_code = j.exit_code;
    if (!d.ok()) failed.push_back(d.device.name + ": " + d.error());
  }
  if (!failed.empty() && result.exit_code == 0) result.exit_code = 3;
  const bool interrupted = options.stop.stop_requested();
  store.finish_run(lab_run,
                   failed.empty() && !interrupted ? store::Status::kComplete : store::Status::kFailed,
                   interrupted      ? "interrupted"
                   : failed.empty() ? ""
                                    : fmt::format("{} of {} devices failed", failed.size(), devices.size()));
  return result;
}

}  // namespace

// The units a stored run holds, as a plan's "completed" list (what the stream sent).
json completed_list(const store::Store& store, store::RunId run, const std::string& kind) {
  json out = json::array();
  const store::CompletedUnits done = store.completed_units(run);
  if (kind == "bench") {
    for (const auto& [key, repetition] : done.repetitions)
      out.push_back({{"case_index", key.configuration_ordinal}, {"repetition", repetition}});
  } else {
    for (const auto& [key, turn] : done.turns) out.push_back({{"config_index", key.configuration_ordinal}, {"turn", turn}});
  }
  return out;
}

std::map<std::string, std::vector<store::LabJob>> latest_job_records(const store::Store& store,
                                                                     store::RunId lab_run,
                                                                     const std::vector<Device>& devices,
                                                                     size_t plans) {
  std::map<std::string, std::vector<store::LabJob>> out;
  for (const auto& d : devices) out[d.name].resize(plans);
  for (store::LabJob& j : store.lab_jobs(lab_run)) {
    const auto it = out.find(j.device);
    const auto k = static_cast<size_t>(j.job);
    if (it != out.end() && j.job >= 0 && k < plans) it->second[k] = std::move(j);
  }
  return out;
}

// A plan checked as `run --plan` will check it, with its models made local files (a
// synthesized model is written here once, so every device gets the same bytes).
app::Plan prepare_plan(app::Plan plan) {
  app::map_plan_models(plan, [](const std::string& spec) {
    // Absolute: a local device runs in its workdir, not in the controller's directory.
    return fs::absolute(app::ModelSet::resolve(spec, nullptr)).lexically_normal().string();
  });
  if (auto* s = std::get_if<app::SessionPlan>(&plan); s && !s->prompts.empty())
    s->prompts = fs::absolute(s->prompts).lexically_normal().string();
  // Checked as this machine would run it, on a copy: the devices resolve their own threads.
  app::Plan checked = plan;
  app::validate(checked, workload::default_thread_count());
  return plan;
}

Cooldown Cooldown::parse(const std::string& text) {
  Cooldown c;
  if (text.empty() || text == "none") return c;
  const bool temp = text.starts_with("temp:");
  const std::string number = temp ? text.substr(5) : text;
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  if (number.empty() || *end != '\0' || !(v >= 0) || v > (temp ? 150 : 3600))
    throw_bad_input("--cooldown '{}': use none, SECONDS (0..3600) or temp:CELSIUS", text);
  if (temp)
    c.until_c = v;
  else
    c.seconds = v;
  return c;
}

bool DeviceOutcome::ok() const {
  for (const auto& j : jobs)
    if (j.status != "complete") return false;
  return true;
}

std::string DeviceOutcome::error() const {
  for (const auto& j : jobs)
    if (j.status != "complete") return j.error.empty() ? j.status : j.error;
  return "";
}

LabRunResult run_lab(store::Store& store, const std::vector<Device>& devices, const LabRunOptions& options) {
  if (options.plans.empty()) throw_bad_input("lab run: no plan to run");
  std::vector<app::Plan> plans;
  json plans_json = json::array();
  for (const auto& p : options.plans) {
    plans.push_back(prepare_plan(p));
    plans_json.push_back(app::to_json(plans.back()));
  }
  json device_list = json::array();
  for (const auto& d : devices) device_list.push_back(to_json(d));
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  const json provenance = {{"controller", {{"host", host}, {"edgeprobe", kVersion}}},
                           {"command_line", options.command_line}};
  const json lab_plan = {{"plans", plans_json}, {"devices", device_list}};
  const store::RunId lab_run = store.begin_run("lab", provenance, lab_plan);
  return run_devices(store, lab_run, devices, plans, {}, options);
}

LabRunResult resume_lab(store::Store& store, store::RunId lab_run, const LabRunOptions& options) {
  const store::RunRecord record = store.get_run(lab_run);
  if (record.kind != "lab") throw_bad_input("run {} is a {} run, not a lab run", lab_run, record.kind);
  if (record.status == "complete") throw_bad_input("lab run {} is already complete", lab_run);
  std::vector<app::Plan> plans;
  for (const auto& p : record.plan.at("plans")) plans.push_back(app::plan_from_json(p));
  std::vector<Device> devices;
  for (const auto& d : record.plan.at("devices")) devices.push_back(device_from_json(d));
  // The latest word on each device's jobs.
  std::map<std::string, std::vector<DeviceJob>> previous;
  for (const auto& [name, records] : latest_job_records(store, lab_run, devices, plans.size()))
    for (const auto& s : records) {
      DeviceJob& j = previous[name].emplace_back();
      j.run = s.device_run;
      j.status = s.status;
    }
  // Devices whose every job is complete are done; the rest run what is left.
  std::vector<Device> todo;
  for (const auto& d : devices) {
    bool done = true;
    for (const auto& j : previous[d.name]) done = done && j.status == "complete";
    if (!done) todo.push_back(d);
  }
  if (todo.empty()) throw_bad_input("lab run {}: every device already finished", lab_run);
  store.resume_run(lab_run);
  return run_devices(store, lab_run, todo, plans, previous, options);
}

json to_json(const LabRunResult& r) {
  json devices = json::array();
  for (const auto& d : r.devices) {
    json jobs = json::array();
    for (const auto& j : d.jobs)
      jobs.push_back({{"run_id", j.run ? json(j.run) : json(nullptr)},
                      {"status", j.status},
                      {"error", j.error},
                      {"committed", j.committed},
                      {"exit_code", j.exit_code}});
    devices.push_back({{"device", d.device.name}, {"ok", d.ok()}, {"error", d.error()}, {"jobs", jobs}});
  }
  return {{"lab_run", r.lab_run}, {"exit_code", r.exit_code}, {"devices", devices}};
}

}  // namespace edgeprobe::lab
