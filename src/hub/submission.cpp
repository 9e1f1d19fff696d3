#include "hub/submission.h"

#include <fmt/format.h>

#include "app/bench_job.h"
#include "core/digest.h"
#include "core/error.h"
#include "probe/roofline.h"
#include "result/migrate.h"

namespace edgeprobe::hub {

using nlohmann::json;

namespace {

constexpr const char* kName = "submission";

// One test's rate against its ceiling; "" when within it or not judged.
std::string over_ceiling(const std::string& test, const char* phase, double measured, double ceiling) {
  if (ceiling <= 0 || measured <= ceiling * (1.0 + probe::kSuspectMargin)) return "";
  return fmt::format(
      "{} {}: {:.0f} % of the device's own ceiling ({:.4g} tok/s measured, ceiling {:.4g} tok/s); above "
      "{:.0f} % is "
      "not physically possible on that device (or its ceilings were measured wrong): refused",
      test, phase, 100.0 * measured / ceiling, measured, ceiling, 100.0 * (1.0 + probe::kSuspectMargin));
}

bool carries_ceilings(const result::Document& document) {
  const auto* bench = std::get_if<result::BenchReport>(&document);
  if (!bench) return false;
  for (const auto& r : bench->results)
    if (r.roofline &&
        (r.roofline->prefill_ceiling_tokens_per_s > 0 || r.roofline->decode_ceiling_tokens_per_s > 0))
      return true;
  return false;
}

// A doctor document's provenance is its primary run's (doctor_job.cpp stores it so); a
// search (tune) has none.
result::Provenance provenance_of(const result::Document& d) {
  if (const auto* doctor = std::get_if<result::DoctorResult>(&d)) {
    const auto* report = std::get_if<result::DoctorReport>(doctor);
    return report && report->primary ? report->primary->provenance : result::Provenance{};
  }
  return std::visit(
      [](const auto& doc) -> result::Provenance {
        if constexpr (requires { doc.provenance; }) return doc.provenance;
        return {};
      },
      d);
}

}  // namespace

std::string impossible_efficiency(const result::Document& document) {
  const auto* bench = std::get_if<result::BenchReport>(&document);
  if (!bench) return "";
  for (const result::TestResult& r : bench->results) {
    if (!r.roofline || r.repetitions.empty()) continue;
    // The rates are recomputed from the repetitions: a document's own efficiency fields
    // are claims like any other.
    const result::TestSummary s = summarize(r);
    const std::string name = r.config.name();
    if (r.config.n_prompt > 0)
      if (auto why = over_ceiling(name, "prefill", s.prefill_tokens_per_s.median,
                                  r.roofline->prefill_ceiling_tokens_per_s);
          !why.empty())
        return why;
    if (r.config.n_gen > 0)
      if (auto why = over_ceiling(name, "decode", s.decode_tokens_per_s.median,
                                  r.roofline->decode_ceiling_tokens_per_s);
          !why.empty())
        return why;
  }
  return "";
}

std::string run_key(const result::Document& document) {
  const result::Provenance p = provenance_of(document);
  if (p.started_at_utc.empty() && p.device.id.empty())
    return "content:" +
           sha256_hex(result::to_json(document).dump(-1, ' ', false, json::error_handler_t::replace));
  return "run:" + sha256_hex(fmt::format("{}\n{}\n{}\n{}", result::kind_of(document), p.device.id,
                                         p.started_at_utc, p.command_line));
}

Checked check_submission(std::string_view body) {
  const json upgraded = result::read_upgraded_result_text(body, kName);
  result::Document document = result::document_from_json(upgraded, kName);
  if (const std::string why = impossible_efficiency(document); !why.empty())
    throw_bad_input("{}: {}", kName, why);
  std::string ceilings = carries_ceilings(document) ? "checked" : "unchecked";
  std::string key = run_key(document);
  return {std::move(document), std::move(key), std::move(ceilings)};
}

namespace {

store::RunId record_bench(store::Store& store, const result::BenchReport& bench, const json& plan) {
  const store::RunId run = store.begin_run("bench", result::to_json(bench.provenance), plan);
  size_t failed = 0;
  for (size_t i = 0; i < bench.results.size(); ++i) {
    const result::TestResult& r = bench.results[i];
    json config = result::to_json(r.config);
    config["model_path"] = r.config.model_path;
    config["test"] = r.config.name();
    store.add_configuration(run, static_cast<int64_t>(i), config);
    for (const auto& rep : r.repetitions)
      store.record_repetition(run, static_cast<int64_t>(i), rep.index, result::to_json(rep));
    app::record_test(store, run, i, result::to_json(r));
    failed += r.error.has_value();
  }
  store.finish_run(run, store::finished_status(bench.results.size(), failed, false));
  return run;
}

store::RunId record_session(store::Store& store, const result::SessionReport& session, const json& plan) {
  const store::RunId run = store.begin_run("session", result::to_json(session.provenance), plan);
  size_t failed = 0;
  for (size_t i = 0; i < session.configs.size(); ++i) {
    const auto& c = session.configs[i];
    const auto ordinal = static_cast<int64_t>(i);
    store.add_configuration(run, ordinal, c.config.to_json());
    for (const auto& t : c.turns)
      store.record_turn(run, {ordinal, t.round, t.conversation_id, t.turn_index}, result::to_json(t));
    store.record_test(run, ordinal, c.analysis);
    store.finish_configuration(run, ordinal, c.error ? store::Status::kFailed : store::Status::kComplete,
                               c.error ? c.error->message : "");
    failed += c.error.has_value();
  }
  store.finish_run(run, store::finished_status(session.configs.size(), failed, false));
  return run;
}

store::RunId record_doctor(store::Store& store, const result::Document& document, const json& plan) {
  const auto& doctor = std::get<result::DoctorResult>(document);
  const store::RunId run = store.begin_run("doctor", result::to_json(provenance_of(document)), plan);
  store.record_run_summary(run, "doctor", result::to_json(doctor));
  store.finish_run(run, store::Status::kComplete);
  return run;
}

}  // namespace

store::RunId record_submission(store::Store& store, const Checked& checked, const json& hub_facts) {
  const json plan = {{"hub", hub_facts}};
  return std::visit(
      [&](const auto& doc) -> store::RunId {
        using T = std::decay_t<decltype(doc)>;
        if constexpr (std::is_same_v<T, result::BenchReport>) return record_bench(store, doc, plan);
        if constexpr (std::is_same_v<T, result::SessionReport>) return record_session(store, doc, plan);
        if constexpr (std::is_same_v<T, result::DoctorResult>)
          return record_doctor(store, checked.document, plan);
      },
      checked.document);
}

json submission_facts(const store::RunRecord& record) {
  if (record.plan.is_object() && record.plan.contains("hub") && record.plan["hub"].is_object())
    return record.plan["hub"];
  return nullptr;
}

}  // namespace edgeprobe::hub
