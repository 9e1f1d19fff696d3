#include "lab/stream_recorder.h"

#include <fmt/format.h>

#include "app/bench_job.h"
#include "app/job.h"
#include "core/error.h"
#include "result/doctor.h"

namespace edgeprobe::lab {

using nlohmann::json;

StreamRecorder::StreamRecorder(store::Store& store, json lab, store::RunId resume_run)
    : app::StreamReader("on the device"), store_(store), lab_(std::move(lab)), resume_run_(resume_run) {
  if (resume_run_) done_ = store_.completed_units(resume_run_);
}

void StreamRecorder::event(const json& e) {
  const std::string ev = e["event"];
  if (ev == "start") {
    plan_ = e.at("plan");
    plan_.erase("completed");  // the stored plan is the whole job; done units live in the store
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
    done_.repetitions.emplace(key, nullptr);  // only whether it is there is asked
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
    done_.turns.emplace(key, nullptr);
    ++committed_;
  } else if (ev == "result" && kind() == "doctor") {
    // A diagnosis is one unit, stored whole as a doctor run when it arrives, read into its
    // structs first: a report of another shape is the device's error, not a stored run.
    const result::DoctorResult report = result::doctor_result_from_json(e.at("report"));
    json provenance = e.value("provenance", json::object());
    provenance["extra"]["lab"] = lab_;
    run_id_ = store_.begin_run("doctor", provenance, e.value("plan", plan_));
    store_.record_run_summary(run_id_, "doctor", result::to_json(report));
    ++committed_;
  } else if (ev == "result") {
    // Session: each configuration's analysis over all its turns (stored and new).
    if (kind() == "session" && run_id_ && e.at("report").contains("configs"))
      for (const auto& c : e["report"]["configs"])
        if (c.contains("analysis") && !c["analysis"].is_null())
          store_.record_test(run_id_, c.value("ordinal", 0), c["analysis"]);
  } else if (ev == "end") {
    const bool interrupted = e.value("interrupted", false);
    // As the device's own store would: partial or failed when tests or turns failed.
    const auto status = store::finished_status(units_, failed_units_, interrupted);
    // The run's error in the job's own words (app::finished_error), from the end event.
    app::JobOutcome outcome;
    outcome.errors = errors();
    if (run_id_)
      store_.finish_run(run_id_, status,
                        interrupted ? "interrupted on the device"
                                    : app::finished_error(status, outcome, failed_units_, units_,
                                                          kind() == "session" ? "turns" : "tests"));
  }
}

void StreamRecorder::begin(const json& provenance_in, const json& cases) {
  json provenance = provenance_in;
  provenance["extra"]["lab"] = lab_;
  if (resume_run_) {
    run_id_ = resume_run_;
    store_.resume_run(run_id_);
  } else {
    if (kind().empty()) throw Error(ErrorKind::kBug, "provenance before start");
    run_id_ = store_.begin_run(kind(), provenance, plan_);
  }
  if (kind() == "bench") {
    for (size_t i = 0; i < cases.size(); ++i)
      store_.add_configuration(run_id_, static_cast<int64_t>(i), cases[i]);
  } else {
    const json configs = plan_.value("configs", json::array());
    for (size_t i = 0; i < configs.size(); ++i)
      store_.add_configuration(run_id_, static_cast<int64_t>(i), configs[i]);
  }
}

void StreamRecorder::on_stop(std::string& why) {
  try {
    if (run_id_) store_.finish_run(run_id_, store::Status::kFailed, why);
  } catch (const std::exception& e) {
    why += fmt::format(" (and the run could not be marked failed: {})", e.what());
  }
}

}  // namespace edgeprobe::lab
