#include "cli/cmd_session.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "analysis/frame_probe.h"
#include "analysis/qes.h"
#include "analysis/stability.h"
#include "cli/common.h"
#include "core/error.h"
#include "core/stats.h"
#include "engine/backend.h"
#include "model/gguf_info.h"
#include "model/synth.h"
#include "result/result.h"
#include "runner/enrich.h"
#include "runner/provenance.h"
#include "runner/session_runner.h"
#include "store/store.h"
#include "workload/plan.h"

namespace edgeprobe::cli {
namespace {

using nlohmann::json;

struct SessionArgs {
  std::vector<std::string> models, ctx{"2048"}, max_tokens{"128"}, batch{"512"}, threads;
  int rounds = 3;
  int conversations = 50;
  std::string prompts;
  std::string on_overflow = "stop";
  std::string cooldown = "none";
  double sample_hz = 20;
  std::string sysfs_root = "/";
  std::string db;
  bool no_store = false;
  int64_t resume = 0;
  std::string output_format = "md";
  std::string output_file;
  bool quiet = false, verbose = false;
};

// The plan is stored with the run, so --resume rebuilds exactly the same sweep.
json make_plan(const std::vector<runner::SessionConfig>& configs, const runner::SessionOptions& o,
               const std::string& prompts) {
  json cs = json::array();
  for (const auto& c : configs) cs.push_back(c.to_json());
  return {{"kind", "session"},
          {"configs", cs},
          {"rounds", o.rounds},
          {"conversations", o.conversations},
          {"on_overflow", o.on_overflow},
          {"cooldown", o.cooldown},
          {"prompts", prompts}};
}

void plan_from_json(const json& plan, std::vector<runner::SessionConfig>& configs, runner::SessionOptions& o,
                    std::string& prompts) {
  if (plan.value("kind", "") != "session") throw_bad_input("--resume: that run is not a session run");
  configs.clear();
  for (const auto& c : plan["configs"])
    configs.push_back({c["model_path"], c["n_ctx"], c["max_tokens"], c["n_batch"], c["n_threads"]});
  o.rounds = plan["rounds"];
  o.conversations = plan["conversations"];
  o.on_overflow = plan["on_overflow"];
  o.cooldown = plan["cooldown"];
  prompts = plan["prompts"];
}

// Stability and QES of one configuration's turns, in the order they ran.
json analyse(const std::vector<json>& turns) {
  std::vector<double> tps, ttft;
  std::vector<const json*> measured;
  double missed_frames = 0, due_frames = 0;
  std::optional<double> peak_temp;
  std::string peak_zone;
  for (const auto& t : turns) {
    if (t.value("stop_reason", "") == "context_full" && t.value("generated_tokens", 0) == 0) continue;
    measured.push_back(&t);
    ttft.push_back(t["ttft_ms"].get<double>());
    if (t.value("generated_tokens", 0) > 1) tps.push_back(t["decode_tokens_per_s"].get<double>());
    for (const char* k : {"frames_prefill", "frames_decode"}) {
      if (t.contains(k)) {
        missed_frames += t[k].value("missed", 0.0);
        due_frames += t[k].value("due", 0.0);
      }
    }
    if (t["telemetry"].is_object()) {
      for (const auto& [phase, tel] : t["telemetry"].items()) {
        if (!tel.is_object() || !tel.contains("thermal")) continue;
        for (const auto& [zone, z] : tel["thermal"].items()) {
          const double c = z.value("max_temp_c", NAN);
          if (!std::isnan(c) && (!peak_temp || c > *peak_temp)) peak_temp = c, peak_zone = zone;
        }
      }
    }
  }
  const auto stability = analysis::analyse_stability(tps);
  json s = analysis::to_json(stability);
  // Tie every change point to the turn where it happened and the telemetry of that turn.
  json tied = json::array();
  std::vector<const json*> with_tps;
  for (const auto* t : measured)
    if ((*t).value("generated_tokens", 0) > 1) with_tps.push_back(t);
  for (const auto& cp : stability.change_points) {
    if (cp.index >= with_tps.size()) continue;
    const json& t = *with_tps[cp.index];
    tied.push_back({{"index", cp.index},
                    {"relative_change", cp.relative_change()},
                    {"round", t["round"]},
                    {"conversation_id", t["conversation_id"]},
                    {"turn_index", t["turn_index"]},
                    {"telemetry", t["telemetry"].is_object() && t["telemetry"].contains("decode") ? t["telemetry"]["decode"] : json(nullptr)}});
  }
  s["change_points_at"] = tied;
  const std::optional<double> missed_share = due_frames > 0 ? std::optional<double>(missed_frames / due_frames) : std::nullopt;
  auto inputs = analysis::make_qes_inputs(ttft, tps, missed_share, peak_temp, peak_zone);
  if (!missed_share) inputs.frames_missing_reason = "frame probe off or no frame due";
  if (!peak_temp) inputs.temp_missing_reason = "no readable thermal zone on this device";
  const auto ttft_summary = stats::summarize(ttft);
  const auto tps_summary = stats::summarize(tps);
  return {{"turns_measured", measured.size()},
          {"ttft_ms", result::to_json(ttft_summary)},
          {"decode_tokens_per_s", result::to_json(tps_summary)},
          {"missed_frame_share", missed_share ? json(*missed_share) : json(nullptr)},
          {"stability", s},
          {"qes", analysis::to_json(analysis::compute_qes(inputs))}};
}

std::string fmt_opt(const json& v, const char* format) {
  return v.is_number() ? fmt::format(fmt::runtime(format), v.get<double>()) : "unavailable";
}

void print_markdown(std::ostream& out, const json& report) {
  out << "| config | model | ctx | max tokens | threads | turns | ttft ms (median) | decode t/s (median) | CV | drift "
         "| change points | missed frames | QES |\n";
  out << "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& c : report["configs"]) {
    const json& a = c["analysis"];
    const json& st = a["stability"];
    const json& q = a["qes"];
    out << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", c["ordinal"].get<int>(),
                       c["config"]["model_path"].get<std::string>(), c["config"]["n_ctx"].get<int>(),
                       c["config"]["max_tokens"].get<int>(), c["config"]["n_threads"].get<int>(),
                       a["turns_measured"].get<int>(), fmt_opt(a["ttft_ms"]["median"], "{:.1f}"),
                       fmt_opt(a["decode_tokens_per_s"]["median"], "{:.2f}"), fmt_opt(st.value("cv", json()), "{:.3f}"),
                       st.contains("drift") && st["drift"].is_object() ? fmt_opt(st["drift"].value("ratio", json()), "{:.3f}") : "unavailable",
                       st["change_points"].size(), fmt_opt(a["missed_frame_share"], "{:.3f}"),
                       fmt_opt(q.value("total", json()), "{:.1f}"));
  }
  out << "\nQES components (0-100; a component without data is left out of the total and named):\n";
  for (const auto& c : report["configs"]) {
    const json& q = c["analysis"]["qes"];
    std::string parts;
    for (const auto& comp : q["components"])
      parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", comp["name"].get<std::string>(),
                           fmt_opt(comp.value("score", json()), "{:.1f}"));
    out << fmt::format("- config {}: {}; rests on: {}\n", c["ordinal"].get<int>(), parts, q.value("rests_on", json::array()).dump());
  }
}

int run(const SessionArgs& a, const std::vector<std::string>& command_line) {
  if (a.rounds < 1 || a.rounds > 1000) throw_bad_input("--rounds {} out of range 1..1000", a.rounds);
  if (a.conversations < 1) throw_bad_input("--conversations {} must be at least 1", a.conversations);
  if (a.on_overflow != "stop" && a.on_overflow != "shift") throw_bad_input("--on-overflow '{}': use stop or shift", a.on_overflow);
  if (a.cooldown != "none" && a.cooldown != "temp") {
    char* end = nullptr;
    const double s = std::strtod(a.cooldown.c_str(), &end);
    if (end == a.cooldown.c_str() || *end != '\0' || s < 0 || s > 3600)
      throw_bad_input("--cooldown '{}': use none, temp or seconds (0..3600)", a.cooldown);
  }
  if (a.output_format != "md" && a.output_format != "json") throw_bad_input("--output-format '{}': use md or json", a.output_format);
  if (a.no_store && a.resume) throw_bad_input("--resume needs the results store; drop --no-store");

  engine::start_log_capture(a.verbose);
  Progress progress(!a.quiet);
  const auto& backend = engine::load_cpu_backend();

  std::unique_ptr<store::Store> db;
  if (!a.no_store) db = store::open_store(a.db.empty() ? store::default_db_path() : a.db,
                                          a.resume ? store::Mode::kMustExist : store::Mode::kCreate);

  std::vector<runner::SessionConfig> configs;
  runner::SessionOptions options;
  std::string prompts = a.prompts.empty() ? runner::default_conversations_path() : a.prompts;
  store::RunId run_id = 0;
  std::map<store::TurnKey, json> stored_turns;
  if (a.resume) {
    const auto rec = db->get_run(a.resume);
    if (rec.status == "complete") throw_bad_input("run {} is already complete; nothing to resume", a.resume);
    plan_from_json(rec.plan, configs, options, prompts);
    db->resume_run(a.resume);
    run_id = a.resume;
    const json stored = db->load_run(run_id);
    for (const auto& t : stored["turns"]) {
      const json& r = t["result"];
      stored_turns[{t["configuration_ordinal"], r["round"], r["conversation_id"], r["turn_index"]}] = r;
    }
  } else {
    std::vector<std::string> models;
    for (const auto& m : a.models)
      for (const auto& item : workload::split_list(m)) models.push_back(item);
    if (models.empty()) models.push_back("");
    for (auto& m : models) {
      if (m.empty() || m.starts_with("synth:")) progress.update("preparing the synthesized model (written on first use, then cached)");
      m = model::resolve_model_spec(m);
      model::read_gguf_info(m);  // bad files fail here, before anything runs
    }
    const auto ctx = workload::parse_int_lists(a.ctx, "-c");
    const auto gen = workload::parse_int_lists(a.max_tokens, "--max-tokens");
    const auto batch = workload::parse_int_lists(a.batch, "-b");
    auto threads = workload::parse_int_lists(a.threads, "-t");
    if (threads.empty()) threads.push_back(workload::default_thread_count());
    for (int v : ctx) if (v < 64 || v > 1 << 20) throw_bad_input("-c {} out of range 64..1048576", v);
    for (int v : gen) if (v < 1 || v > 1 << 16) throw_bad_input("--max-tokens {} out of range 1..65536", v);
    for (int v : batch) if (v < 1) throw_bad_input("-b {} must be positive", v);
    for (int v : threads) if (v < 1 || v > 512) throw_bad_input("-t {} out of range 1..512", v);
    // Model outermost: each model loads once.
    for (const auto& m : models)
      for (int c : ctx)
        for (int g : gen)
          for (int b : batch)
            for (int t : threads) configs.push_back({m, c, g, b, t});
    options.rounds = a.rounds;
    options.conversations = a.conversations;
    options.on_overflow = a.on_overflow;
    options.cooldown = a.cooldown;
  }
  const auto conversations = runner::load_conversations(prompts);

  result::Provenance provenance = runner::make_provenance(backend, join_command_line(command_line));
  std::set<std::string> seen;
  for (const auto& c : configs)
    if (seen.insert(c.model_path).second) provenance.models.push_back(runner::model_identity(model::read_gguf_info(c.model_path), true));
  const json provenance_json = result::to_json(provenance);
  if (db && !a.resume) run_id = db->begin_run(store::RunKind::kSession, provenance_json, make_plan(configs, options, prompts));
  if (db)
    for (size_t i = 0; i < configs.size(); ++i) db->add_configuration(run_id, static_cast<int64_t>(i), configs[i].to_json());

  std::ofstream file;
  if (!a.output_file.empty()) {
    file.open(a.output_file, std::ios::trunc);
    if (!file) throw_bad_input("cannot write --output '{}'", a.output_file);
  }

  const RunClock clock;
  runner::TelemetryRecorder recorder(a.sample_hz, a.sysfs_root, clock);
  analysis::FrameProbe frames(clock);
  frames.start();
  std::vector<std::vector<json>> turns(configs.size());
  for (const auto& [key, r] : stored_turns) turns[static_cast<size_t>(key.configuration_ordinal)].push_back(r);

  runner::SessionCallbacks cb;
  cb.progress = [&](const std::string& s) { progress.update(s); };
  cb.current_max_temp_c = [&] { return recorder.current_max_temp_c(); };
  cb.completed_turn = [&](size_t ci, int round, const std::string& conv, int ti) -> std::optional<runner::TurnResult> {
    auto it = stored_turns.find({static_cast<int64_t>(ci), round, conv, ti});
    if (it == stored_turns.end()) return std::nullopt;
    runner::TurnResult t;
    t.reply = it->second.value("reply", "");
    t.stop_reason = it->second.value("stop_reason", "");
    return t;
  };
  cb.turn_done = [&](size_t ci, runner::TurnResult& t) {
    json j;
    if (t.end_ns > 0) {
      t.telemetry = {{"prefill", recorder.summarize(t.start_ns, t.prefill_end_ns, t.prompt_tokens)},
                     {"decode", recorder.summarize(t.prefill_end_ns, t.end_ns, t.generated_tokens - 1)}};
      t.missed_frame_share_prefill = frames.missed_share(t.start_ns, t.prefill_end_ns);
      t.missed_frame_share_decode = frames.missed_share(t.prefill_end_ns, t.end_ns);
      j = t.to_json();
      const auto fp = frames.window_stats(t.start_ns, t.prefill_end_ns);
      const auto fd = frames.window_stats(t.prefill_end_ns, t.end_ns);
      j["frames_prefill"] = {{"due", fp.frames}, {"missed", fp.missed}, {"late", fp.late}};
      j["frames_decode"] = {{"due", fd.frames}, {"missed", fd.missed}, {"late", fd.late}};
    } else {
      j = t.to_json();
    }
    if (db) db->record_turn(run_id, {static_cast<int64_t>(ci), t.round, t.conversation_id, t.turn_index}, j);
    turns[ci].push_back(std::move(j));
  };
  try {
    runner::run_session(configs, conversations, options, clock, cb);
  } catch (const Error& e) {
    frames.stop();
    recorder.stop();
    if (db) db->finish_run(run_id, store::Status::kFailed, e.what());
    throw;
  }
  frames.stop();
  recorder.stop();
  progress.finish();

  json report = {{"schema_version", result::kSchemaVersion}, {"kind", "session"}, {"run_id", run_id},
                 {"provenance", provenance_json}, {"telemetry_unavailable", recorder.unavailable()}};
  json cs = json::array();
  for (size_t i = 0; i < configs.size(); ++i) {
    json analysis_json = analyse(turns[i]);
    if (db) db->record_run_summary(run_id, fmt::format("config{}", i), analysis_json);
    cs.push_back({{"ordinal", i}, {"config", configs[i].to_json()}, {"analysis", analysis_json}, {"turns", turns[i]}});
  }
  report["configs"] = cs;
  if (db) db->finish_run(run_id, store::Status::kComplete);

  std::ostream& out = a.output_file.empty() ? std::cout : file;
  if (a.output_format == "json") out << report.dump(2) << "\n";
  else print_markdown(out, report);
  if (db && !a.quiet) std::cerr << "edgeprobe: session stored as run " << run_id << " in " << db->location() << "\n";
  return 0;
}

}  // namespace

void register_session(CLI::App& app, const std::vector<std::string>& command_line) {
  auto a = std::make_shared<SessionArgs>();
  CLI::App* cmd = app.add_subcommand("session", "MELT-style multi-turn chat sessions with a QES score");
  cmd->add_option("-m,--model", a->models, "GGUF model file(s) or synth:SHAPE[:QUANT] (default: synth:tinyllama-1.1b:q4_0)");
  cmd->add_option("--rounds", a->rounds, "Rounds over the conversations (MELT: 3)")->capture_default_str();
  cmd->add_option("--conversations", a->conversations, "Conversations per round (the first N)")->capture_default_str();
  cmd->add_option("--max-tokens", a->max_tokens, "Generation limits per turn (list)")->capture_default_str();
  cmd->add_option("-c,--ctx-size", a->ctx, "Context sizes (list)")->capture_default_str();
  cmd->add_option("-b,--batch-size", a->batch, "Batch sizes (list)")->capture_default_str();
  cmd->add_option("-t,--threads", a->threads, "Thread counts (list; default: physical cores available)");
  cmd->add_option("--prompts", a->prompts, "Conversations JSONL (default: the built-in set in data/)");
  cmd->add_option("--on-overflow", a->on_overflow, "When the context is full: stop the conversation or shift")->capture_default_str();
  cmd->add_option("--cooldown", a->cooldown, "Between rounds: none, seconds, or temp (back near the start temperature)")
      ->capture_default_str();
  cmd->add_option("--sample-hz", a->sample_hz, "Telemetry sampling rate (0 = off)")->capture_default_str();
  cmd->add_option("--sysfs-root", a->sysfs_root, "Read sysfs/procfs under this root")->capture_default_str();
  cmd->add_option("--db", a->db, "Results store (default: ~/.local/share/edgeprobe/results.db)");
  cmd->add_flag("--no-store", a->no_store, "Do not record the run in the results store");
  cmd->add_option("--resume", a->resume, "Continue an interrupted session run where it stopped");
  cmd->add_option("-o,--output-format", a->output_format, "md or json")->capture_default_str();
  cmd->add_option("--output", a->output_file, "Write the report to FILE instead of stdout");
  cmd->add_flag("-q,--quiet", a->quiet, "No progress on stderr");
  cmd->add_flag("-v,--verbose", a->verbose, "Echo llama.cpp's log to stderr");
  cmd->callback([a, command_line] {
    const int rc = run(*a, command_line);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace edgeprobe::cli
