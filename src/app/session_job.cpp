#include "app/session_job.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "analysis/frame_probe.h"
#include "analysis/session_analysis.h"
#include "app/engine_factory.h"
#include "app/models.h"
#include "app/stored_run.h"
#include "core/error.h"
#include "runner/telemetry_recorder.h"
#include "runner/provenance.h"
#include "runner/session_runner.h"
#include "store/store.h"
#include "core/stop_token.h"

namespace edgeprobe::app {

using nlohmann::json;

SessionPlan stored_session_plan(store::Store& store, int64_t run) {
  return session_plan_from_json(resumable_plan(store, run, "session"));
}

SessionJobResult run_session(SessionPlan plan, const JobContext& ctx) {
  const ProcessStopWatch watching;  // a Ctrl-C from here on stops after the turn in flight
  validate(plan, workload::default_thread_count());
  const EngineHandle engine = make_engine(plan.env, ctx);
  ModelSet models;
  // Bad files fail here, before anything runs.
  const bool endpoint = !plan.env.endpoint.empty();
  for (auto& c : plan.configs)
    c.model_path = endpoint && c.model_path.empty() ? endpoint_model_path(plan.env.api_model)
                                                    : models.add_spec(c.model_path, ctx.sink);
  plan.options.api = endpoint && plan.env.api.empty() ? "chat" : plan.env.api;
  if (!endpoint) {
    std::vector<int> threads;
    for (const auto& c : plan.configs) threads.push_back(c.n_threads);
    warn_oversubscription(threads, ctx);
  }
  if (plan.prompts.empty()) plan.prompts = runner::default_conversations_path();
  const auto conversations = runner::load_conversations(plan.prompts);

  SessionJobResult out;
  result::SessionReport& report = out.report;
  report.provenance = runner::make_provenance(engine.identity, ctx.command_line);
  if (plan.env.server_pid > 0) report.provenance.extra["telemetry_pid"] = plan.env.server_pid;
  if (!plan.options.api.empty()) report.provenance.extra["request_path"] = plan.options.api;  // compare checks it
  // Reports add a column saying which prefills were remote and which fell back.
  if (!plan.env.prefill_remote.empty()) report.provenance.extra["prefill_remote"] = plan.env.prefill_remote;
  report.provenance.models = models.identities(true, ctx.sink);
  if (endpoint && report.provenance.models.empty())
    report.provenance.models.push_back(endpoint_model_identity(engine.identity));
  const json plan_json = to_json(plan);

  // Turns an interrupted run already stored are replayed untimed to rebuild the history.
  std::map<store::TurnKey, result::Turn> stored_turns;
  auto keep_stored = [&](int64_t config_index, const json& turn) {
    result::Turn t = result::turn_from_json(turn);
    stored_turns[{config_index, t.round, t.conversation_id, t.turn_index}] = std::move(t);
  };
  for (const auto& u : plan.completed)  // what a lab controller already holds
    keep_stored(u["config_index"].get<int64_t>(), u["turn"]);
  int64_t run_id = 0;
  if (ctx.store) {
    if (ctx.resume_run) {
      run_id = ctx.resume_run;
      for (const auto& [key, turn] : ctx.store->completed_units(run_id).turns) keep_stored(key.configuration_ordinal, turn);
      ctx.store->resume_run(run_id);
    } else {
      run_id = ctx.store->begin_run("session", result::to_json(report.provenance), plan_json);
    }
    for (size_t i = 0; i < plan.configs.size(); ++i)
      ctx.store->add_configuration(run_id, static_cast<int64_t>(i), plan.configs[i].to_json());
  }
  report.run_id = out.outcome.run_id = run_id;
  if (ctx.sink) ctx.sink->session_begin(report.provenance, plan_json);

  const RunClock clock;
  runner::TelemetryRecorder recorder(plan.env.sample_hz, plan.env.sysfs_root, clock, plan.env.server_pid);
  analysis::FrameProbe frames(clock);
  frames.start();
  std::vector<std::vector<result::Turn>> turns(plan.configs.size());
  for (const auto& [key, r] : stored_turns) turns[static_cast<size_t>(key.configuration_ordinal)].push_back(r);

  // Progress in turns, configs x rounds x conversations x turns: stored turns count as
  // done (their replay is untimed and quick), and so do the turns of a config that failed.
  const size_t n_conv = std::min(conversations.size(), static_cast<size_t>(std::max(1, plan.options.conversations)));
  size_t turns_per_config = 0;
  for (size_t k = 0; k < n_conv; ++k)
    turns_per_config += conversations[k].turns.size() * static_cast<size_t>(std::max(0, plan.options.rounds));
  std::vector<size_t> turns_done(plan.configs.size(), 0);
  for (const auto& [key, r] : stored_turns)
    if (static_cast<size_t>(key.configuration_ordinal) < turns_done.size())
      ++turns_done[static_cast<size_t>(key.configuration_ordinal)];
  auto report_units = [&] {
    if (!ctx.sink) return;
    size_t done = 0;
    for (size_t n : turns_done) done += std::min(n, turns_per_config);
    ctx.sink->units(done, plan.configs.size() * turns_per_config, "turns");
  };
  report_units();

  runner::SessionCallbacks cb;
  cb.stop = ctx.stop;
  cb.progress = [&](const std::string& s) {
    if (ctx.sink) ctx.sink->progress(s);
  };
  cb.current_max_temp_c = [&] { return recorder.current_max_temp_c(); };
  cb.completed_turn = [&](size_t ci, int round, const std::string& conv, int ti) -> std::optional<result::Turn> {
    auto it = stored_turns.find({static_cast<int64_t>(ci), round, conv, ti});
    if (it == stored_turns.end()) return std::nullopt;
    return it->second;
  };
  std::set<std::string> fallbacks_said;
  cb.turn_done = [&](size_t ci, result::Turn& t) {
    if (engine.prefill_log && t.end_ns > 0) {
      // A timed turn has these figures; the record may replace them with the split's.
      json record;
      double ttft_ms = t.ttft_ms.value_or(0), prefill_ms = t.prefill_ms.value_or(0),
             prefill_tps = t.prefill_tokens_per_s.value_or(0);
      attach_prefill_record(*engine.prefill_log, plan.env, record, ttft_ms, prefill_ms, prefill_tps);
      t.ttft_ms = ttft_ms, t.prefill_ms = prefill_ms, t.prefill_tokens_per_s = prefill_tps;
      if (const auto w = fallback_warning(record, plan.env, fallbacks_said); !w.empty() && ctx.sink)
        ctx.sink->warning(w);
      if (!record.is_null()) t.prefill_remote = std::move(record);
    }
    if (t.end_ns > 0) {
      t.telemetry = {{"prefill", recorder.summarize(t.start_ns, t.prefill_end_ns, t.prompt_tokens)},
                     {"decode", recorder.summarize(t.prefill_end_ns, t.end_ns, t.generated_tokens - 1)}};
      t.missed_frame_share_prefill = frames.missed_share(t.start_ns, t.prefill_end_ns);
      t.missed_frame_share_decode = frames.missed_share(t.prefill_end_ns, t.end_ns);
      auto counts = [](const analysis::FrameWindowStats& w) {
        return result::FrameCounts{static_cast<int64_t>(w.frames), static_cast<int64_t>(w.missed),
                                   static_cast<int64_t>(w.late)};
      };
      t.frames_prefill = counts(frames.window_stats(t.start_ns, t.prefill_end_ns));
      t.frames_decode = counts(frames.window_stats(t.prefill_end_ns, t.end_ns));
    }
    if (ctx.store)
      ctx.store->record_turn(run_id, {static_cast<int64_t>(ci), t.round, t.conversation_id, t.turn_index}, result::to_json(t));
    if (ctx.sink) ctx.sink->session_turn(ci, t);
    turns[ci].push_back(t);
    ++turns_done[ci];
    report_units();
  };
  cb.turns_skipped = [&](size_t ci, size_t n, const std::string& why) {
    turns_done[ci] += n;  // settled: they will not run, so the bar and the estimate do not wait for them
    out.outcome.skipped += n;
    out.outcome.skipped_why = "conversations ended early; see each turn's stop_reason";
    if (ctx.sink) ctx.sink->progress(fmt::format("{} turn{} of this conversation skipped: {}", n, n == 1 ? "" : "s", why));
    report_units();
  };
  std::map<size_t, result::ErrorInfo> config_errors;
  cb.config_failed = [&](size_t ci, const result::ErrorInfo& e) {
    config_errors[ci] = e;
    if (ctx.store) ctx.store->finish_configuration(run_id, static_cast<int64_t>(ci), store::Status::kFailed, e.message);
    turns_done[ci] = turns_per_config;
    report_units();
  };
  try {
    runner::run_session(*engine.engine, plan.configs, conversations, plan.options, clock, cb);
  } catch (const Error& e) {
    frames.stop();
    recorder.stop();
    if (ctx.store) ctx.store->finish_run(run_id, store::Status::kFailed, e.what());
    throw;
  }
  frames.stop();
  recorder.stop();

  out.outcome.interrupted = ctx.stop.stop_requested();
  report.telemetry_unavailable = recorder.unavailable();
  for (size_t i = 0; i < plan.configs.size(); ++i) {
    result::SessionConfigResult c;
    c.ordinal = static_cast<int>(i);
    c.config = plan.configs[i];
    c.analysis = analysis::analyse_session_turns(turns[i]);
    c.turns = std::move(turns[i]);
    if (config_errors.contains(i)) c.error = config_errors[i];
    // An interrupted run's analysis is partial: the resumed run stores the whole one.
    if (ctx.store && !out.outcome.interrupted) ctx.store->record_test(run_id, static_cast<int64_t>(i), c.analysis);
    report.configs.push_back(std::move(c));
  }
  out.outcome.errors = result::session_errors(report, &out.outcome.exit_code);
  if (ctx.store) {
    // Units are turns; a configuration that failed before any turn (its model did not
    // load) counts as one failed unit.
    size_t units = 0, failed = 0;
    for (const auto& c : report.configs) {
      for (const auto& t : c.turns) {
        ++units;
        failed += t.error.has_value();
      }
      if (c.error && c.turns.empty()) ++units, ++failed;
    }
    const auto status = store::finished_status(units, failed, out.outcome.interrupted);
    ctx.store->finish_run(run_id, status, finished_error(status, out.outcome, failed, units, "turns"));
  }
  if (ctx.sink) ctx.sink->session_end(report);
  return out;
}

}  // namespace edgeprobe::app
