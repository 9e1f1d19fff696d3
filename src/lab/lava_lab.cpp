#include "lab/lava_lab.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "core/bounded_input.h"
#include "core/digest.h"
#include "core/error.h"
#include "core/text.h"
#include "edgeprobe_version.h"
#include "lab/deploy.h"
#include "lab/lab_run.h"
#ifdef EDGEPROBE_WITH_HTTP
#include "http/client.h"
#endif

namespace edgeprobe::lab::lava {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr size_t kMaxLogBytes = 256u << 20;  // a job log kept whole to import it

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// ---- the REST API (docs: LAVA's doc/v2/restapi.rsti) -------------------------------------

#ifdef EDGEPROBE_WITH_HTTP
class Rest {
 public:
  explicit Rest(Server server, size_t max_body = 16u << 20)
      : server_(std::move(server)), client_([&] {
          http::ClientOptions o;
          o.bearer_token = server_.token;
          o.auth_scheme = "Token";
          o.max_body_bytes = max_body;
          o.request_timeout_s = 120;
          return o;
        }()) {}

  json get_json(const std::string& path) { return parse(path, checked(path, client_.get(url(path)))); }
  std::string get_text(const std::string& path) { return checked(path, client_.get(url(path))).body; }
  // "" where LAVA has none (a job cancelled before a device took it has no log: 404).
  std::string get_text_if_any(const std::string& path) {
    http::Response r = client_.get(url(path));
    return r.status == 404 ? "" : checked(path, std::move(r)).body;
  }
  json post_json(const std::string& path, const json& body) {
    return parse(path, checked(path, client_.post_json(url(path), body.dump())));
  }

 private:
  std::string url(const std::string& path) const { return server_.url + "/api/v0.2/" + path; }
  http::Response checked(const std::string& path, http::Response r) {
    if (r.status / 100 != 2)
      throw_environment("LAVA {} answered HTTP {}: {}", http::redact_url(url(path)), r.status, edgeprobe::one_line(r.body, 200));
    return r;
  }
  json parse(const std::string& path, const http::Response& r) {
    json j = json::parse(r.body, nullptr, false);
    if (j.is_discarded()) throw_environment("LAVA {} answered with no JSON: {}", http::redact_url(url(path)), edgeprobe::one_line(r.body, 120));
    return j;
  }
  Server server_;
  http::Client client_;
};
#else
class Rest {
 public:
  explicit Rest(const Server&, size_t = 0) {
    throw_environment("this edgeprobe was built without its HTTP client (EDGEPROBE_HTTP=OFF): it cannot reach LAVA");
  }
  json get_json(const std::string&) { return {}; }
  std::string get_text(const std::string&) { return {}; }
  std::string get_text_if_any(const std::string&) { return {}; }
  json post_json(const std::string&, const json&) { return {}; }
};
#endif

// ---- staging artifacts -------------------------------------------------------------------

struct Artifact {
  std::string name, sha256;
};

// Copies `local` into the artifacts directory under a name its content fixes.
Artifact stage(const std::string& local, const std::string& dir, const std::string& name = "") {
  Artifact a;
  a.sha256 = sha256_file(local);
  a.name = name.empty() ? a.sha256.substr(0, 12) + "-" + fs::path(local).filename().string() : name;
  const fs::path target = fs::path(dir) / a.name;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (fs::exists(target) && fs::file_size(target) == fs::file_size(local) && sha256_file(target.string()) == a.sha256)
    return a;
  const fs::path part = target.string() + ".part";
  if (!fs::copy_file(local, part, fs::copy_options::overwrite_existing, ec) || (fs::rename(part, target, ec), ec))
    throw_environment("cannot copy {} into the artifacts directory {}: {}", local, dir, ec.message());
  return a;
}

std::string join_url(const std::string& base, const std::string& name) {
  return (base.ends_with("/") ? base : base + "/") + name;
}

struct LabRecord {
  std::vector<app::Plan> plans;
  std::vector<Device> devices;
  json provenance;
};

LabRecord read_lab(const store::Store& store, store::RunId lab_run) {
  const store::RunRecord record = store.get_run(lab_run);
  if (record.kind != "lab") throw_bad_input("run {} is a {} run, not a lab run", lab_run, record.kind);
  LabRecord out;
  for (const auto& p : record.plan.at("plans")) out.plans.push_back(app::plan_from_json(p));
  for (const auto& d : record.plan.at("devices")) out.devices.push_back(device_from_json(d));
  out.provenance = record.provenance;
  return out;
}

// The lab run's word on a job: the columns every lab engine has, and LAVA's own facts.
store::LabJob job_record(const JobRow& row, const JobReport* report) {
  store::LabJob r;
  r.device = row.device;
  r.job = static_cast<int64_t>(row.job);
  r.status = row.status;
  r.attempt = row.attempt;
  r.error = row.error;
  r.device_run = row.run;
  r.detail = {{"engine", "lava"}, {"lava_job", row.lava_job}, {"submitted_at", json(nullptr)}};
  if (report)
    r.detail["lava"] = {{"state", report->state},
                        {"health", report->health},
                        {"error_type", report->error_type},
                        {"error_msg", report->error_msg},
                        {"actual_device", report->actual_device}};
  return r;
}

// Renders (and submits) one device's job for plan k.
JobRow submit_one(store::Store& store, store::RunId lab_run, const Device& device, size_t k, const app::Plan& plan,
                  int attempt, store::RunId resume_run, const SubmitOptions& o, Rest* rest) {
  JobRow row;
  row.device = device.name;
  row.job = k;
  row.attempt = attempt;
  JobSpec spec;
  spec.device = device;
  spec.lab_run = lab_run;
  spec.job = k;
  spec.attempt = attempt;
  spec.job_timeout_s = o.job_timeout_s;
  spec.notify_url = o.notify_url;
  const std::string target = bundle_target(device);
  spec.bundle_name = bundle_name(target);
  const Artifact bundle = stage(bundle_file(o.dist_dir, target), o.artifacts_dir, spec.bundle_name + ".tar.gz");
  spec.bundle_url = join_url(o.artifacts_url, bundle.name);
  spec.bundle_sha256 = bundle.sha256;
  // The plan as the device reads it: models (and a session's conversations) fetched by
  // the job into models/, and the units the store already holds marked done.
  std::map<std::string, std::string> on_device;
  auto fetch = [&](const std::string& local) {
    if (local.empty()) return local;
    if (auto it = on_device.find(local); it != on_device.end()) return it->second;
    const Artifact a = stage(local, o.artifacts_dir);
    spec.models.push_back({join_url(o.artifacts_url, a.name), a.sha256, "models/" + a.name});
    return on_device[local] = "models/" + a.name;
  };
  app::Plan device_plan = plan;
  app::map_plan_models(device_plan, fetch);
  if (auto* s = std::get_if<app::SessionPlan>(&device_plan)) {
    if (!s->prompts.empty()) s->prompts = fetch(s->prompts);
    if (resume_run) s->completed = completed_list(store, resume_run, "session");
  }
  if (auto* b = std::get_if<app::BenchPlan>(&device_plan); b && resume_run)
    b->completed = completed_list(store, resume_run, "bench");
  spec.plan = app::to_json(device_plan);
  const std::string yaml = render_job(spec);
  if (!o.render_dir.empty()) {
    fs::create_directories(o.render_dir);
    row.definition = (fs::path(o.render_dir) / fmt::format("lab{}-{}-job{}-a{}.yaml", lab_run, device.name, k, attempt)).string();
    std::ofstream f(row.definition);
    f << yaml;
    if (!f) throw_environment("cannot write {}", row.definition);
  }
  row.run = resume_run;
  if (rest) {
    const json answer = rest->post_json("jobs/", {{"definition", yaml}});
    const json ids = answer.value("job_ids", json::array());
    if (!ids.is_array() || ids.empty() || !ids[0].is_number_integer())
      throw_environment("LAVA accepted the job for {} but named no job id: {}", device.name, edgeprobe::one_line(answer.dump(), 200));
    row.lava_job = ids[0].get<int64_t>();
    row.status = "submitted";
  } else {
    row.status = "rendered";
  }
  store::LabJob record = job_record(row, nullptr);
  record.detail["submitted_at"] = unix_now();
  store.record_lab_job(lab_run, record);
  if (o.say)
    o.say(fmt::format("[{}] job {} {}{}", device.name, k + 1, row.status,
                      row.lava_job ? fmt::format(" as LAVA job {}", row.lava_job) : " to " + row.definition));
  return row;
}

void check_artifacts(const SubmitOptions& o) {
  if (o.artifacts_dir.empty() || o.artifacts_url.empty())
    throw_bad_input(
        "LAVA devices fetch the bundle and models themselves: give --artifacts-dir DIR and --artifacts-url URL "
        "(where the lab serves DIR)");
  if (!o.artifacts_url.starts_with("http://") && !o.artifacts_url.starts_with("https://") &&
      !o.artifacts_url.starts_with("file://"))
    throw_bad_input("--artifacts-url '{}': use http://, https:// or file://", edgeprobe::one_line(o.artifacts_url, 80));
  if (!(o.queue_deadline_s > 0)) throw_bad_input("--queue-deadline must be a positive number of seconds");
}

std::optional<Rest> rest_for(const SubmitOptions& o) {
  if (!o.server) return std::nullopt;
  return std::optional<Rest>(std::in_place, *o.server);
}

}  // namespace

bool is_lava_lab(const store::Store& store, store::RunId lab_run) {
  const store::RunRecord r = store.get_run(lab_run);
  return r.kind == "lab" && r.provenance.value("engine", "") == "lava";
}

LabJobs submit(store::Store& store, const std::vector<Device>& devices, const SubmitOptions& o) {
  if (o.plans.empty()) throw_bad_input("lab submit: no plan to run");
  check_artifacts(o);
  std::vector<app::Plan> plans;
  json plans_json = json::array();
  for (const auto& p : o.plans) {
    plans.push_back(prepare_plan(p));
    plans_json.push_back(app::to_json(plans.back()));
  }
  auto rest = rest_for(o);  // before the store is touched: no server, no lab run
  json device_list = json::array();
  for (const auto& d : devices) device_list.push_back(to_json(d));
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  const json provenance = {{"controller", {{"host", host}, {"edgeprobe", kVersion}}},
                           {"command_line", o.command_line},
                           {"engine", "lava"},
                           {"lava", {{"queue_deadline_s", o.queue_deadline_s}, {"submitted", o.server.has_value()}}}};
  LabJobs out;
  out.lab_run = store.begin_run("lab", provenance, {{"plans", plans_json}, {"devices", device_list}});
  for (const auto& d : devices)
    for (size_t k = 0; k < plans.size(); ++k) {
      try {
        out.jobs.push_back(submit_one(store, out.lab_run, d, k, plans[k], 1, 0, o, rest ? &*rest : nullptr));
      } catch (const Error& e) {
        // A device that cannot be submitted stays with its error; the others go.
        JobRow row;
        row.device = d.name;
        row.job = k;
        row.status = "error";
        row.error = e.what();
        store.record_lab_job(out.lab_run, job_record(row, nullptr));
        out.jobs.push_back(row);
        out.exit_code = e.exit_code();
      }
    }
  return out;
}

LabJobs resubmit(store::Store& store, store::RunId lab_run, const SubmitOptions& options) {
  if (!is_lava_lab(store, lab_run)) throw_bad_input("run {} is not a LAVA lab run", lab_run);
  const LabRecord lab = read_lab(store, lab_run);
  SubmitOptions o = options;
  check_artifacts(o);
  auto rest = rest_for(o);
  LabJobs out;
  out.lab_run = lab_run;
  const auto records = latest_job_records(store, lab_run, lab.devices, lab.plans.size());
  for (const auto& d : lab.devices)
    for (size_t k = 0; k < lab.plans.size(); ++k) {
      const store::LabJob& r = records.at(d.name)[k];
      const std::string& status = r.status;
      if (status == "ok") continue;
      if (status == "submitted" || status == "queued" || status == "running")
        throw_bad_input("lab run {}: {}'s job {} is still {} on LAVA; import it first (edgeprobe lab import {})",
                        lab_run, d.name, k + 1, status, lab_run);
      const store::RunId previous = r.device_run;
      const int attempt = (status.empty() ? 0 : static_cast<int>(r.attempt)) + 1;
      out.jobs.push_back(submit_one(store, lab_run, d, k, lab.plans[k], attempt, previous, o, rest ? &*rest : nullptr));
    }
  if (out.jobs.empty()) throw_bad_input("lab run {}: every device already finished", lab_run);
  store.resume_run(lab_run);
  return out;
}

LabJobs import(store::Store& store, store::RunId lab_run, const ImportOptions& o) {
  if (!is_lava_lab(store, lab_run)) throw_bad_input("run {} is not a LAVA lab run (lab submit --engine lava)", lab_run);
  const LabRecord lab = read_lab(store, lab_run);
  const double deadline_s = lab.provenance["lava"].value("queue_deadline_s", 24 * 3600.0);
  if (!o.log_file.empty()) {
    bool known = false;
    for (const auto& d : lab.devices) known = known || d.name == o.device;
    if (!known) throw_bad_input("lab run {} has no device '{}'", lab_run, edgeprobe::one_line(o.device, 60));
    if (o.job >= lab.plans.size()) throw_bad_input("lab run {} has {} jobs per device, not {}", lab_run, lab.plans.size(), o.job + 1);
  }
  std::optional<Rest> rest;
  LabJobs out;
  out.lab_run = lab_run;
  const auto records = latest_job_records(store, lab_run, lab.devices, lab.plans.size());
  bool all_finished = true, all_ok = true;
  for (const auto& d : lab.devices)
    for (size_t k = 0; k < lab.plans.size(); ++k) {
      const store::LabJob& r = records.at(d.name)[k];
      JobRow row;
      row.device = d.name;
      row.job = k;
      if (!r.status.empty()) {
        row.attempt = static_cast<int>(r.attempt);
        row.lava_job = r.detail.value("lava_job", int64_t{0});
        row.status = r.status;
        row.error = r.error;
        row.run = r.device_run;
        if (r.detail.contains("lava") && r.detail["lava"].is_object())
          row.lava_device = r.detail["lava"].value("actual_device", "");
      }
      const bool from_log = !o.log_file.empty() && d.name == o.device && k == o.job;
      // An ok job's units are all stored (its run is complete): importing it again adds nothing.
      // So is one that never got a device: edgeprobe cancelled it (LAVA then calls it Canceled).
      const bool settled =
          row.status == "ok" || row.status == "not_scheduled" || (row.status == "error" && !row.lava_job);
      if (settled || (!from_log && (!o.log_file.empty() || !row.lava_job))) {
        all_finished = all_finished && (finished(row.status) && row.status != "submitted" && row.status != "rendered");
        all_ok = all_ok && row.status == "ok";
        out.jobs.push_back(row);
        continue;
      }
      JobReport report;
      Log log;
      bool past_deadline = false;
      if (from_log) {
        log = parse_log(read_bounded(o.log_file, kMaxLogBytes, "a LAVA job log"));
        report = report_from_log(log);
      } else {
        if (!rest) rest.emplace(server_from_environment(), kMaxLogBytes);
        const std::string id = std::to_string(row.lava_job);
        const json detail = rest->get_json("jobs/" + id + "/");
        report = report_from_rest(detail, json());
        if (report.state == "Finished" && report.health != "Complete")
          report = report_from_rest(detail, rest->get_json("jobs/" + id + "/tests/?limit=1000"));
        const bool queued = report.state == "Submitted" || report.state == "Scheduling";
        const json submitted_at = r.detail.value("submitted_at", json());
        const double submitted = submitted_at.is_number() ? submitted_at.get<double>() : unix_now();
        past_deadline = queued && unix_now() - submitted > deadline_s;
        if (past_deadline) {
          rest->get_text("jobs/" + id + "/cancel/");  // LAVA's cancel; the job never ran
          if (o.say) o.say(fmt::format("[{}] LAVA job {} still queued after {:.0f} s: cancelled", d.name, id, deadline_s));
        }
        if (!queued) log = parse_log(rest->get_text_if_any("jobs/" + id + "/logs/"));
      }
      if (!report.actual_device.empty()) row.lava_device = report.actual_device;
      const bool job_finished = report.state == "Finished";
      const std::string why = fmt::format("LAVA job {} {}{}{}", row.lava_job ? std::to_string(row.lava_job) : o.log_file,
                                          report.health, report.error_type.empty() ? "" : " (" + report.error_type + ")",
                                          report.error_msg.empty() ? "" : ": " + edgeprobe::one_line(report.error_msg, 200));
      json lab_ctx = {{"lab_run", lab_run}, {"device", d.name}, {"job", k}, {"transport", "lava"},
                      {"lava_job", row.lava_job}, {"attempt", row.attempt}, {"labels", d.labels},
                      {"lava_device", row.lava_device}};
      Imported imp;
      if (row.run && store.get_run(row.run).status == "complete") {
        // An earlier import took the whole stream while LAVA was still closing the job.
        imp.run = row.run;
        imp.whole = true;
      } else if (!log.records.empty()) {
        imp = import_stream(store, log, lab_ctx, row.run, job_finished, why);
      }
      if (imp.run) row.run = imp.run;
      row.units = imp.committed;
      row.status = device_status(report, imp.whole, past_deadline);
      row.error = row.status == "ok"        ? ""
                  : row.status == "partial" ? imp.problem
                  : row.status == "not_scheduled"
                      ? fmt::format("not scheduled within {:.0f} s; LAVA job cancelled", deadline_s)
                  : finished(row.status) ? why + (imp.problem.empty() ? "" : "; " + imp.problem)
                                         : "";
      store.record_lab_job(lab_run, [&] {
        store::LabJob rec = job_record(row, &report);
        rec.detail["submitted_at"] = r.detail.value("submitted_at", json());
        return rec;
      }());
      if (o.say)
        o.say(fmt::format("[{}] job {}: {}, {} units new, {} already stored{}", d.name, k + 1, row.status, imp.committed,
                          imp.skipped, row.error.empty() ? "" : " (" + row.error + ")"));
      all_finished = all_finished && finished(row.status);
      all_ok = all_ok && row.status == "ok";
      out.jobs.push_back(row);
    }
  if (all_finished) {
    size_t failed = 0;
    for (const auto& j : out.jobs) failed += j.status != "ok";
    if (store.get_run(lab_run).status == "running")
      store.finish_run(lab_run, all_ok ? store::Status::kComplete : store::Status::kFailed,
                       all_ok ? "" : fmt::format("{} of {} device jobs did not finish", failed, out.jobs.size()));
    out.exit_code = all_ok ? 0 : 3;
  }
  return out;
}

json to_json(const LabJobs& jobs) {
  json rows = json::array();
  for (const auto& j : jobs.jobs)
    rows.push_back({{"device", j.device}, {"job", j.job}, {"attempt", j.attempt},
                    {"lava_job", j.lava_job ? json(j.lava_job) : json(nullptr)}, {"status", j.status},
                    {"run_id", j.run ? json(j.run) : json(nullptr)}, {"units", j.units}, {"error", j.error},
                    {"definition", j.definition.empty() ? json(nullptr) : json(j.definition)},
                    {"lava_device", j.lava_device.empty() ? json(nullptr) : json(j.lava_device)}});
  return {{"lab_run", jobs.lab_run}, {"exit_code", jobs.exit_code}, {"jobs", rows}};
}

}  // namespace edgeprobe::lab::lava
