#include "lab/lava.h"

#include <fmt/format.h>
#include <yaml.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "app/stream_frames.h"
#include "core/digest.h"
#include "core/error.h"
#include "core/text.h"
#include "lab/stream_recorder.h"
#include "workload/sweep.h"

namespace edgeprobe::lab::lava {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// ---- reading YAML: one log record, or lavacli's identities -------------------------------

constexpr int kMaxYamlDepth = 16;  // a log record is a mapping of scalars, results one level more

// libyaml events to JSON: scalars as strings, no anchors (LAVA writes none), bounded depth.
// nullopt for text that is not one YAML document of that kind.
std::optional<json> yaml_to_json(std::string_view text) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) return std::nullopt;
  std::unique_ptr<yaml_parser_t, void (*)(yaml_parser_t*)> owner(&parser, yaml_parser_delete);
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  struct Open {
    json node;
    std::optional<std::string> key;
  };
  std::vector<Open> open;
  std::optional<json> root;
  auto place = [&](json value) -> bool {
    if (open.empty()) {
      root = std::move(value);
      return true;
    }
    Open& o = open.back();
    if (o.node.is_array()) {
      o.node.push_back(std::move(value));
    } else if (!o.key) {
      if (!value.is_string()) return false;  // a key that is not a scalar
      o.key = value.get<std::string>();
    } else {
      o.node[*o.key] = std::move(value);
      o.key.reset();
    }
    return true;
  };
  for (;;) {
    yaml_event_t ev;
    if (!yaml_parser_parse(&parser, &ev)) return std::nullopt;
    std::unique_ptr<yaml_event_t, void (*)(yaml_event_t*)> event(&ev, yaml_event_delete);
    switch (ev.type) {
      case YAML_SCALAR_EVENT: {
        std::string s(reinterpret_cast<const char*>(ev.data.scalar.value), ev.data.scalar.length);
        const bool plain = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        if (!place(plain && (s == "~" || s == "null" || s.empty()) ? json(nullptr) : json(std::move(s))))
          return std::nullopt;
        break;
      }
      case YAML_SEQUENCE_START_EVENT:
      case YAML_MAPPING_START_EVENT:
        if (open.size() >= kMaxYamlDepth) return std::nullopt;
        open.push_back({ev.type == YAML_MAPPING_START_EVENT ? json::object() : json::array(), std::nullopt});
        break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT: {
        json done = std::move(open.back().node);
        open.pop_back();
        if (!place(std::move(done))) return std::nullopt;
        break;
      }
      case YAML_ALIAS_EVENT:
        return std::nullopt;
      case YAML_STREAM_END_EVENT:
        return root;
      default:
        break;
    }
  }
}

std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    out.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string text_of(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// ---- rendering a job ---------------------------------------------------------------------

// LAVA test case and tag names: URL-safe, no whitespace.
std::string lava_name(std::string_view text) {
  std::string out;
  for (const char c : text)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '-';
  return out.empty() ? "-" : out;
}

// The inline test's shell: every line runs in one POSIX sh script on the device.
std::vector<std::string> test_steps(const JobSpec& s) {
  std::vector<std::string> steps = {
      // Fetch into a part file of this job's own, check its SHA-256, then rename: an interrupted download is never
      // taken for a whole one, and jobs sharing a work directory (devices on one host) never write one file together.
      "ep_fetch() { if [ -f \"$3\" ] && echo \"$2  $3\" | sha256sum -c --status; then return 0; fi; mkdir -p "
      "\"$(dirname \"$3\")\"; ep_part=\"$3.$EP_RUN.$$.part\"; if command -v curl >/dev/null; then curl -fsSL -o "
      "\"$ep_part\" \"$1\"; else wget -q -O \"$ep_part\" \"$1\"; fi && echo \"$2  $ep_part\" | sha256sum -c --status "
      "&& mv -f \"$ep_part\" \"$3\" || { rm -f \"$ep_part\"; return 1; }; }",
      // The inventory's workdir; a relative one is under the login's home, as for `lab run`.
      "case \"$EP_WORKDIR\" in /*) EP_DIR=\"$EP_WORKDIR\" ;; *) EP_DIR=\"$HOME/$EP_WORKDIR\" ;; esac; mkdir -p "
      "\"$EP_DIR/plans\" && cd \"$EP_DIR\" || lava-test-raise ep-workdir",
      // lava-test-case --shell runs its command in a script of its own, where ep_fetch is unknown.
      "ep_case() { name=$1; shift; if \"$@\"; then lava-test-case \"$name\" --result pass; else lava-test-case "
      "\"$name\" --result fail; lava-test-raise \"$name\"; exit 1; fi; }",
      "ep_case ep-fetch-bundle ep_fetch \"$EP_BUNDLE_URL\" \"$EP_BUNDLE_SHA256\" \"bundles/$EP_BUNDLE_NAME.tar.gz\"",
      // Unpacked under the bundle's SHA-256 into a directory of this job's own, then renamed into place whole (mv -T
      // fails if another job got there first): a bundle in place is complete and never removed while a job runs it.
      "EP_BIN=\"bundles/$EP_BUNDLE_SHA256/$EP_BUNDLE_NAME/edgeprobe\"; [ -d \"bundles/$EP_BUNDLE_SHA256\" ] || { "
      "ep_tmp=\"bundles/.unpack.$EP_RUN.$$\"; rm -rf \"$ep_tmp\" && mkdir -p \"$ep_tmp\" && tar -xzf "
      "\"bundles/$EP_BUNDLE_NAME.tar.gz\" -C \"$ep_tmp\" && { mv -T \"$ep_tmp\" \"bundles/$EP_BUNDLE_SHA256\" 2>/dev/null "
      "|| [ -d \"bundles/$EP_BUNDLE_SHA256\" ]; }; ep_rc=$?; rm -rf \"$ep_tmp\"; [ \"$ep_rc\" = 0 ]; } || "
      "lava-test-raise ep-unpack-bundle",
  };
  for (size_t i = 0; i < s.models.size(); ++i)
    steps.push_back(fmt::format(
        "ep_case ep-fetch-model-{} ep_fetch \"$EP_MODEL_{}_URL\" \"$EP_MODEL_{}_SHA256\" \"$EP_MODEL_{}_PATH\"", i + 1,
        i + 1, i + 1, i + 1));
  steps.insert(steps.end(), {
      "echo \"$EP_PLAN_B64\" | base64 -d > \"plans/$EP_RUN.json\" && echo \"$EP_PLAN_SHA256  plans/$EP_RUN.json\" | "
      "sha256sum -c --status || lava-test-raise ep-plan",
      // The stream goes to LAVA's log framed (it survives the log's rewriting) and to a file.
      "sh \"$EP_BIN\" run --plan \"plans/$EP_RUN.json\" -o lava | tee \"$EP_RUN.lava\"",
      "sh \"$EP_BIN\" lab lava-cases \"$EP_RUN.lava\" > \"$EP_RUN.cases\" && . "
      "\"./$EP_RUN.cases\"",
  });
  return steps;
}

}  // namespace

Server server_from_environment() {
  Server s;
  const char* url = std::getenv("LAVA_URL");
  const char* token = std::getenv("LAVA_TOKEN");
  if (url && *url && token && *token) {
    s.url = url;
    s.token = token;
  } else {
    const char* home = std::getenv("HOME");
    const char* xdg = std::getenv("XDG_CONFIG_HOME");
    const std::string path = (xdg && *xdg ? std::string(xdg) : std::string(home ? home : "") + "/.config") +
                             "/lavacli.yaml";
    const char* id = std::getenv("LAVA_IDENTITY");
    const std::string identity = id && *id ? id : "default";
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const auto doc = in ? yaml_to_json(text.str().substr(0, 1 << 20)) : std::nullopt;
    if (!doc || !doc->is_object() || !doc->contains(identity) || !(*doc)[identity].is_object())
      throw_bad_input(
          "no LAVA server: set LAVA_URL and LAVA_TOKEN, or add identity '{}' to {} (lavacli identities add)",
          one_line(identity, 40), path);
    const json& i = (*doc)[identity];
    s.url = text_of(i, "uri");
    s.token = text_of(i, "token");
    if (s.url.empty() || s.token.empty())
      throw_bad_input("identity '{}' of {} needs uri and token", one_line(identity, 40), path);
  }
  // lavacli's uri may name the XML-RPC endpoint; the REST API sits beside it.
  for (const char* tail : {"/RPC2/", "/RPC2", "/"})
    if (s.url.ends_with(tail)) s.url.resize(s.url.size() - std::string_view(tail).size());
  if (!s.url.starts_with("http://") && !s.url.starts_with("https://"))
    throw_bad_input("LAVA server URL '{}' must start with http:// or https://", one_line(s.url, 80));
  return s;
}

std::string bundle_target(const Device& d) {
  if (d.arch == "aarch64" || d.arch == "arm64") return "aarch64-linux-gnu";
  if (d.arch == "x86_64" || d.arch == "amd64") return "x86_64-linux-gnu";
  throw_bad_input(
      "{}: a LAVA device needs arch: aarch64 or x86_64 in the inventory (LAVA runs the job, so edgeprobe cannot "
      "ask the device first){}",
      d.name, d.arch.empty() ? "" : fmt::format("; '{}' has no bundle", one_line(d.arch, 40)));
}

std::string plan_sha256(const json& plan) { return sha256_hex(plan.dump()); }

std::string render_job(const JobSpec& s) {
  const std::string type = s.device.labels.contains("lava_device_type") ? s.device.labels.at("lava_device_type") : "ssh";
  // A device of the inventory is its own tag ep-NAME (LAVA cannot target a device by
  // name); a pool's job goes to any device of its type with its tags (lab submit --pool).
  json tags = json::array();
  if (!s.device.labels.contains("lava_pool")) tags.push_back(lava_name("ep-" + s.device.name));
  if (s.device.labels.contains("lava_tags"))
    for (const auto& t : workload::split_list(s.device.labels.at("lava_tags"))) tags.push_back(lava_name(t));
  const std::string run = fmt::format("lab{}-{}-job{}-a{}", s.lab_run, lava_name(s.device.name), s.job, s.attempt);
  const std::string plan_text = s.plan.dump();
  json parameters = {{"EP_RUN", run},
                     {"EP_WORKDIR", s.device.workdir.empty() ? "edgeprobe-lab" : s.device.workdir},
                     {"EP_BUNDLE_URL", s.bundle_url},
                     {"EP_BUNDLE_SHA256", s.bundle_sha256},
                     {"EP_BUNDLE_NAME", s.bundle_name},
                     {"EP_PLAN_B64", base64_encode(plan_text)},
                     {"EP_PLAN_SHA256", sha256_hex(plan_text)}};
  for (size_t i = 0; i < s.models.size(); ++i) {
    parameters[fmt::format("EP_MODEL_{}_URL", i + 1)] = s.models[i].url;
    parameters[fmt::format("EP_MODEL_{}_SHA256", i + 1)] = s.models[i].sha256;
    parameters[fmt::format("EP_MODEL_{}_PATH", i + 1)] = s.models[i].device_path;
  }
  const int job_minutes = std::max(2, static_cast<int>(s.job_timeout_s / 60 + 0.999));
  json job = {
      {"job_name", fmt::format("edgeprobe lab {} {} job {} attempt {}", s.lab_run, s.device.name, s.job, s.attempt)},
      {"device_type", type},
      {"tags", tags},
      {"priority", "medium"},
      {"visibility", "public"},
      {"metadata",
       {{"ep_lab_run", std::to_string(s.lab_run)},
        {"ep_device", s.device.name},
        {"ep_job", std::to_string(s.job)},
        {"ep_attempt", std::to_string(s.attempt)},
        {"ep_plan_sha256", plan_sha256(s.plan)}}},
      {"timeouts",
       {{"job", {{"minutes", job_minutes + 10}}},
        {"action", {{"minutes", job_minutes + 5}}},
        {"connection", {{"minutes", 2}}}}},
      {"actions",
       json::array(
           {{{"deploy", {{"to", "ssh"}, {"os", "debian"}, {"timeout", {{"minutes", 10}}}}}},
            {{"boot",
              {{"method", "ssh"},
               {"connection", "ssh"},
               {"failure_retry", 2},
               // A root shell's prompt and a user's, as Debian's bash shows them.
               {"prompts", json::array({"root@[^:]+:.*# ", "[^@ ]+@[^:]+:.*\\$ "})},
               {"timeout", {{"minutes", 5}}}}}},
            {{"test",
              {{"timeout", {{"minutes", job_minutes}}},
               {"definitions",
                json::array({{{"from", "inline"},
                              {"name", "edgeprobe"},
                              {"path", "inline/edgeprobe.yaml"},
                              {"parameters", parameters},
                              {"repository",
                               {{"metadata",
                                 {{"format", "Lava-Test Test Definition 1.0"},
                                  {"name", "edgeprobe"},
                                  {"description", "an edgeprobe plan, streamed framed into the job log"}}},
                                {"run", {{"steps", test_steps(s)}}}}}}})}}}}})}};
  if (!s.notify_url.empty())
    job["notify"] = {{"criteria", {{"status", "finished"}}},
                     {"callbacks",
                      json::array({{{"url", s.notify_url},
                                    {"method", "POST"},
                                    {"dataset", "minimal"},
                                    {"content-type", "json"}}})}};
  // JSON is YAML: every string is quoted and escaped, so nothing in a name or path can
  // change what the job means.
  return "# edgeprobe LAVA job (docs/lab.md)\n" + job.dump(2) + "\n";
}

Log parse_log(std::string_view text) {
  Log log;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.starts_with("- ")) line.remove_prefix(2);  // the log as a YAML list
    if (line.empty() || line.find_first_not_of(" \r\t") == std::string_view::npos) continue;
    const auto record = yaml_to_json(line);
    if (!record || !record->is_object() || !record->contains("lvl") || !record->contains("msg")) {
      ++log.unreadable;
      continue;
    }
    log.records.push_back({text_of(*record, "lvl"), (*record)["msg"]});
  }
  return log;
}

JobReport report_from_log(const Log& log) {
  JobReport r;
  r.state = "Running";
  r.health = "Unknown";
  for (const auto& rec : log.records) {
    if (rec.lvl != "results" || !rec.msg.is_object()) continue;
    if (text_of(rec.msg, "definition") != "lava" || text_of(rec.msg, "case") != "job") continue;
    r.state = "Finished";
    const std::string result = text_of(rec.msg, "result");
    r.error_type = text_of(rec.msg, "error_type");
    r.error_msg = text_of(rec.msg, "error_msg");
    r.health = result == "pass" ? "Complete" : r.error_type == "Canceled" ? "Canceled" : "Incomplete";
  }
  return r;
}

JobReport report_from_rest(const json& detail, const json& lava_tests) {
  JobReport r;
  r.state = text_of(detail, "state");
  r.health = text_of(detail, "health");
  const json& rows = lava_tests.contains("results") ? lava_tests["results"] : lava_tests;
  if (rows.is_array())
    for (const auto& t : rows) {
      if (!t.is_object() || text_of(t, "name") != "job") continue;
      json meta = t.value("metadata", json());  // a YAML text in LAVA 2023.01
      if (meta.is_string()) meta = yaml_to_json(meta.get<std::string>()).value_or(json());
      if (meta.is_object() && text_of(meta, "definition") == "lava") {
        r.error_type = text_of(meta, "error_type");
        r.error_msg = text_of(meta, "error_msg");
      }
    }
  if (r.error_msg.empty()) r.error_msg = text_of(detail, "failure_comment");
  r.actual_device = text_of(detail, "actual_device");
  return r;
}

std::vector<Device> pool_devices(const std::string& pool, int count, const std::string& arch) {
  const auto colon = pool.find(':');
  const std::string type = pool.substr(0, colon), tags = colon == std::string::npos ? "" : pool.substr(colon + 1);
  if (type.empty() || lava_name(type) != type)
    throw_bad_input("--pool '{}': give a LAVA device type, then :TAG,TAG if any (--pool rpi5:site-b)", one_line(pool, 80));
  if (count < 1 || count > 1000) throw_bad_input("--count {}: give how many jobs the pool runs (1..1000)", count);
  std::vector<Device> out;
  for (int i = 1; i <= count; ++i) {
    Device d;
    d.name = fmt::format("{}-{}", type, i);
    d.transport = "lava";
    d.arch = arch;
    d.workdir = "edgeprobe-lab";
    d.labels = {{"lava_device_type", type}, {"lava_pool", pool}};
    if (!tags.empty()) d.labels["lava_tags"] = tags;
    bundle_target(d);  // an arch that has no bundle is refused now, not per job
    out.push_back(std::move(d));
  }
  return out;
}

std::string device_status(const JobReport& job, bool stream_whole, bool past_queue_deadline) {
  if (job.state != "Finished") {
    const bool queued = job.state == "Submitted" || job.state == "Scheduling" || job.state.empty();
    if (queued) return past_queue_deadline ? "not_scheduled" : "queued";
    return "running";
  }
  if (stream_whole) return "ok";  // every unit is in the store, whatever LAVA did after
  if (job.health == "Canceled") return "cancelled";
  if (job.health == "Complete") return "partial";
  // An infrastructure error, a closed connection or a timeout is the device or its link,
  // not the plan: that device fails alone and LAVA checks its health before its next job.
  static const std::vector<std::string> lost = {"Infrastructure", "LAVATimeout", "MultinodeTimeout"};
  for (const auto& t : lost)
    if (job.error_type == t) return "lost";
  return "error";
}

bool finished(const std::string& status) { return status != "queued" && status != "running"; }

Imported import_stream(store::Store& store, const Log& log, const json& lab, store::RunId resume_run,
                       bool job_finished, const std::string& why_cut) {
  Imported out;
  app::FrameDecoder frames;
  StreamRecorder recorder(store, lab, resume_run);
  for (const auto& rec : log.records) {
    if (rec.lvl != "target" || !rec.msg.is_string()) continue;
    for (const auto& line : frames.line(rec.msg.get<std::string>())) {
      ++out.lines;
      recorder.line(line);
    }
  }
  out.whole = frames.ended() && recorder.ended() && recorder.failed().empty();
  out.problem = !frames.problem().empty() ? frames.problem() : recorder.failed();
  if (!frames.ended() && out.problem.empty())
    out.problem = out.lines ? fmt::format("the stream stops after {} lines, without its END record", out.lines)
                            : "no edgeprobe stream in the log";
  if (job_finished && !recorder.ended())
    recorder.finish_cut(fmt::format("{}: {} (after {} units)", why_cut, out.problem, recorder.committed() + recorder.skipped()));
  out.run = recorder.run_id() ? recorder.run_id() : resume_run;
  out.committed = recorder.committed();
  out.skipped = recorder.skipped();
  return out;
}

std::string test_case_commands(std::string_view stream) {
  std::vector<std::string> lines;
  if (stream.find(app::kFramePrefix) != std::string_view::npos) {
    app::FrameDecoder frames;
    for (const auto& l : lines_of(stream))
      for (auto& line : frames.line(l)) lines.push_back(std::move(line));
  } else {
    lines = lines_of(stream);
  }
  std::string out = "# edgeprobe's headline figures as LAVA test cases\n";
  auto add = [&](const std::string& name, bool pass, std::optional<double> value, const std::string& units) {
    out += "lava-test-case " + shell_quote(lava_name(name)) + " --result " + (pass ? "pass" : "fail");
    if (value) out += fmt::format(" --measurement {:.4f} --units {}", *value, shell_quote(units));
    out += "\n";
  };
  size_t turns = 0, failed_turns = 0;
  bool session = false;
  for (const auto& line : lines) {
    const json e = json::parse(line, nullptr, false);
    if (!e.is_object()) continue;
    const std::string ev = text_of(e, "event");
    if (ev == "test" && e["result"].is_object()) {
      const json& r = e["result"];
      const bool ok = text_of(r, "status") == "ok";
      const std::string name = fmt::format("{}-t{}", text_of(r, "test"),
                                           r.contains("config") ? r["config"].value("n_threads", 0) : 0);
      for (const char* phase : {"prefill", "decode"}) {
        const json& p = r.value(phase, json());
        if (p.is_object() && p.contains("tokens_per_s") && p["tokens_per_s"].is_object() &&
            p["tokens_per_s"].value("median", json()).is_number())
          add(name + "-" + phase, ok, p["tokens_per_s"]["median"].get<double>(), "tok/s");
      }
      if (!ok) add(name, false, std::nullopt, "");
    } else if (ev == "turn") {
      session = true;
      ++turns;
      failed_turns += e["turn"].is_object() && e["turn"].contains("error") && e["turn"]["error"].is_object();
    } else if (ev == "end") {
      if (session) add("session-turns", failed_turns == 0, static_cast<double>(turns), "turns");
      add("edgeprobe-exit", e.value("exit_code", 1) == 0, static_cast<double>(e.value("exit_code", 1)), "code");
    }
  }
  return out;
}

}  // namespace edgeprobe::lab::lava
