#include "app/stream_sink.h"

#include <ostream>

namespace edgeprobe::app {

using nlohmann::json;

void StreamSink::emit(json line) {
  const std::lock_guard lock(mutex_);
  line["seq"] = seq_++;
  // Replace invalid UTF-8 instead of throwing: a model's reply can hold any bytes.
  out_ << line.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  out_.flush();
}

void StreamSink::start(const std::string& kind, const json& plan) {
  emit({{"event", "start"}, {"stream_version", kStreamVersion}, {"schema_version", result::kSchemaVersion},
        {"kind", kind}, {"plan", plan}});
}

void StreamSink::progress(const std::string& step) {
  estimate_.step(step);
  emit({{"event", "progress"}, {"step", step}});
}

void StreamSink::units(size_t done, size_t total, const std::string& unit) {
  estimate_.units(done, total, unit);
  const ProgressSnapshot s = estimate_.snapshot();
  emit({{"event", "progress"},
        {"step", s.step},
        {"done", s.done},
        {"total", s.total},
        {"unit", s.unit},
        {"elapsed_s", s.elapsed_s},
        {"eta_s", s.eta_s ? json(*s.eta_s) : json(nullptr)},
        {"eta_is_guess", s.eta_is_guess}});
}

void StreamSink::warning(const std::string& text) { emit({{"event", "warning"}, {"message", text}}); }

void StreamSink::bench_begin(const result::Provenance& provenance, const std::vector<workload::TestCase>& cases) {
  json tests = json::array();
  for (const auto& c : cases) {
    json config = result::to_json(c);
    config["model_path"] = c.model_path;
    config["test"] = c.name();
    tests.push_back(config);
  }
  emit({{"event", "provenance"}, {"provenance", result::to_json(provenance)}, {"cases", tests}});
}

void StreamSink::bench_repetition(size_t case_index, const workload::TestCase& test, const result::Repetition& rep) {
  emit({{"event", "repetition"}, {"case_index", case_index}, {"test", test.name()}, {"repetition", result::to_json(rep)}});
}

void StreamSink::bench_result(const result::TestResult& r) {
  emit({{"event", "test"}, {"result", result::to_json(r)}});
}

void StreamSink::bench_end(const result::BenchReport& report) {
  emit({{"event", "result"}, {"report", result::to_json(report)}});
}

void StreamSink::session_begin(const result::Provenance& provenance, const json&) {
  emit({{"event", "provenance"}, {"provenance", result::to_json(provenance)}});
}

void StreamSink::session_turn(size_t config_index, const result::Turn& turn) {
  emit({{"event", "turn"}, {"config_index", config_index}, {"turn", result::to_json(turn)}});
}

void StreamSink::session_end(const result::SessionReport& report) {
  emit({{"event", "result"}, {"report", result::to_json(report)}});
}

void StreamSink::end(const JobOutcome& o) {
  emit({{"event", "end"},
        {"exit_code", o.exit_code},
        {"run_id", o.run_id == 0 ? json(nullptr) : json(o.run_id)},
        {"interrupted", o.interrupted},
        {"errors", o.errors}});
}

void StreamSink::doctor_end(const json& provenance, const json& plan, const result::DoctorResult& report) {
  emit({{"event", "result"}, {"kind", "doctor"}, {"provenance", provenance}, {"plan", plan}, {"report", result::to_json(report)}});
}

void StreamSink::fatal(const std::string& kind, const std::string& message) {
  emit({{"event", "error"}, {"kind", kind}, {"message", message}});
}

}  // namespace edgeprobe::app
