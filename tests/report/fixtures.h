#pragma once
// Result documents of every kind, synthesized with the real result structs and analysis
// (no measuring), for the HTML report tests.
#include <nlohmann/json.hpp>

#include <string>

namespace edgeprobe::report_test {

// A bench result: a prompt test and a decode test, `reps` repetitions of `steps` decode
// steps each, per-phase telemetry (two clusters, a thermal zone, power, throttling) when
// `telemetry`, roofline ceilings on the decode test. `model_path` names the model.
nlohmann::json bench_document(int reps, int steps, bool telemetry, const std::string& model_path = "model.gguf",
                              const std::string& sha256 = "ab12");
// A session result: `rounds` x `conversations` x `turns` turns of `steps` decode steps,
// a slowdown halfway so the analysis finds a change point; `reply` is every turn's reply.
nlohmann::json session_document(int rounds, int conversations, int turns, int steps,
                                const std::string& reply = "a reply");
// A doctor result with a critical finding (measured speed-up) and an info one.
nlohmann::json doctor_document(const std::string& text = "");

}  // namespace edgeprobe::report_test
