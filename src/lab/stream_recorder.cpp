#include "lab/stream_recorder.h"

#include <fmt/format.h>

#include "app/bench_job.h"
#include "app/job.h"
#include "core/error.h"
#include "core/text.h"

namespace edgeprobe::lab {

using nlohmann::json;

StreamRecorder::StreamRecorder(store::Store& store, json lab, store::RunId resume_run)
    : store_(store), lab_(std::move(lab)), resume_run_(resume_run) {
  if (resume_run_) done_ = store_.completed_units(resume_run_);
}

namespace {

// A stream line nests a few levels (a result's samples, a provenance): deeper is not one
// edgeprobe writes, and copying or storing it would recurse as deep.
constexpr int kMaxLineDepth = 64;
struct TooDeep {};

}  // namespace

void StreamRecorder::line(std::string_view text) {
  if (stopped_ || text.empty()) return;
  json e;
  try {
    e = json::parse(text, [](int depth, json::parse_event_t, json&) {
      if (depth > kMaxLineDepth) throw TooDeep{};
      return true;
    });
  } catch (const TooDeep&) {
    stop(fmt::format("line {} of the stream nests deeper than {} levels", next_seq_, kMaxLineDepth));
    return;
  } catch (const json::parse_error&) {
    stop(fmt::format("line {} of the stream is not JSON: {}", next_seq_, one_line(text.substr(0, 120), 200)));
    return;
  }
  if (!e.is_object() || !e.contains("event") || !e.contains("seq") || !e["seq"].is_number_integer()) {
    stop(fmt::format("line {} of the stream has no event or seq", next_seq_));
    return;
  }
  if (e["seq"].get<int64_t>() != next_seq_) {
    stop(fmt::format("the stream skipped from seq {} to {}", next_seq_ - 1, e["seq"].get<int64_t>()));
    return;
  }
  ++next_seq_;
  try {
    event(e);
  } catch (const std::exception& ex) {  // json type errors and store errors alike
    stop(fmt::format("seq {} ({}): {}", next_seq_ - 1, one_line(e["event"].dump(), 80), one_line(ex.what())));
  }
}

void StreamRecorder::event(const json& e) {
  const std::string ev = e["event"];
  if (ev == "start") {
    kind_ = e.at("kind");
    plan_ = e.at("plan");
    plan_.erase("completed");  // the stored plan is the whole job; done units live in the store
  } else if (ev == "progress") {
    if (e.contains("done")) estimate_.units(e["done"], e["total"], e.value("unit", ""));
    estimate_.step(e.value("step", ""));
  } else if (ev == "warning") {
    warnings_.push_back(one_line(e.value("message", ""), 400));  // the device's words: one escaped line
  } else if (ev == "provenance") {
    begin(e.at("provenance"), e.value("cases", json::array()));
  } else if (ev == "repetition") {
    if (!run_id_) throw Error(ErrorKind::kBug, "a repetition before the provenance");
    const json& rep = e.at("repetition");
    const store::RepetitionKey key{e.at("case_index").get<int64_t>(), rep.at("index").get<int64_t>()};
    if (done_.has(key)) {
      ++skipped_;
      return;
    }
    store_.record_repetition(run_id_, key.configuration_ordinal, key.repetition, rep);
    done_.repetitions.insert(key);
    ++committed_;
  } else if (ev == "test") {
    if (!run_id_) throw Error(ErrorKind::kBug, "a test result before the provenance");
    const json& r = e.at("result");
    const auto ordinal = static_cast<int64_t>(tests_seen_++);
    ++units_;
    failed_units_ += r.value("status", "ok") != "ok";
    // A test stored before the resume keeps its one record of what it had beyond its
    // repetitions; the rest are written as the device's own store writes them.
    if (!done_.complete_configurations.contains(ordinal)) {
      app::record_test(store_, run_id_, static_cast<size_t>(ordinal), r);
      done_.complete_configurations.insert(ordinal);
    }
  } else if (ev == "turn") {
    if (!run_id_) throw Error(ErrorKind::kBug, "a turn before the provenance");
    const json& t = e.at("turn");
    const store::TurnKey key{e.at("config_index").get<int64_t>(), t.at("round").get<int64_t>(),
                             t.at("conversation_id").get<std::string>(), t.at("turn_index").get<int64_t>()};
    ++units_;
    failed_units_ += t.contains("error") && t["error"].is_object();
    if (done_.has(key)) {
      ++skipped_;
      return;
    }
    store_.record_turn(run_id_, key, t);
    done_.turns.insert(key);
    ++committed_;
  } else if (ev == "result" && kind_ == "doctor") {
    // A diagnosis is one unit, stored whole as a doctor run when it arrives.
    json provenance = e.value("provenance", json::object());
    provenance["extra"]["lab"] = lab_;
    run_id_ = store_.begin_run("doctor", provenance, e.value("plan", plan_));
    store_.record_run_summary(run_id_, "doctor", e.at("report"));
    ++committed_;
  } else if (ev == "result") {
    // Session: each configuration's analysis over all its turns (stored and new).
    if (kind_ == "session" && run_id_ && e.at("report").contains("configs"))
      for (const auto& c : e["report"]["configs"])
        if (c.contains("analysis") && !c["analysis"].is_null())
          store_.record_run_summary(run_id_, "config" + std::to_string(c.value("ordinal", 0)), c["analysis"]);
  } else if (ev == "end") {
    ended_ = true;
    exit_code_ = e.value("exit_code", 0);
    errors_ = e.value("errors", std::vector<std::string>{});
    const bool interrupted = e.value("interrupted", false);
    // As the device's own store would: partial or failed when tests or turns failed.
    const auto status = store::finished_status(units_, failed_units_, interrupted);
    // The run's error in the job's own words (app::finished_error), from the end event.
    app::JobOutcome outcome;
    outcome.errors = errors_;
    if (run_id_)
      store_.finish_run(run_id_, status,
                        interrupted ? "interrupted on the device"
                                    : app::finished_error(status, outcome, failed_units_, units_,
                                                          kind_ == "session" ? "turns" : "tests"));
    stopped_ = true;
  } else if (ev == "error") {
    exit_code_ = e.value("kind", "") == "bad_input" ? 2 : 3;
    stop(fmt::format("{} on the device: {}", one_line(e.value("kind", "error"), 40), one_line(e.value("message", ""), 400)));
  }
}

void StreamRecorder::begin(const json& provenance_in, const json& cases) {
  json provenance = provenance_in;
  provenance["extra"]["lab"] = lab_;
  if (resume_run_) {
    run_id_ = resume_run_;
    store_.resume_run(run_id_);
  } else {
    if (kind_.empty()) throw Error(ErrorKind::kBug, "provenance before start");
    run_id_ = store_.begin_run(kind_, provenance, plan_);
  }
  if (kind_ == "bench") {
    for (size_t i = 0; i < cases.size(); ++i)
      store_.add_configuration(run_id_, static_cast<int64_t>(i), cases[i]);
  } else {
    const json configs = plan_.value("configs", json::array());
    for (size_t i = 0; i < configs.size(); ++i)
      store_.add_configuration(run_id_, static_cast<int64_t>(i), configs[i]);
  }
}

void StreamRecorder::stop(const std::string& why) {
  if (stopped_) return;
  stopped_ = true;
  failed_ = why;
  try {
    if (run_id_) store_.finish_run(run_id_, store::Status::kFailed, why);
  } catch (const std::exception& e) {
    failed_ += fmt::format(" (and the run could not be marked failed: {})", e.what());
  }
}

void StreamRecorder::finish_cut(const std::string& why) {
  if (ended_) return;
  stop(why);
}

}  // namespace edgeprobe::lab
