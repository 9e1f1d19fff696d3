#include "report/fixtures.h"

#include <algorithm>

#include "analysis/session_analysis.h"
#include "result/result.h"
#include "result/session.h"
#include "telemetry/summary.h"

namespace edgeprobe::report_test {
namespace {

using nlohmann::json;

result::Provenance provenance(const std::string& model_path, const std::string& sha256) {
  result::Provenance p;
  p.edgeprobe_version = "0.1.0";
  p.engine.name = "llama.cpp";
  p.engine.kind = "in-process";
  p.engine.version = "0.0.0";
  p.engine.commit = "80fb11a";
  p.device.id = "dev-0123456789abcdef";
  p.device.cpu_model = "Example CPU";
  p.device.board = "Example Board";
  p.started_at_utc = "2026-11-29T10:00:00Z";
  p.command_line = "edgeprobe bench -m " + model_path;
  result::ModelIdentity m;
  m.path = model_path;
  m.sha256 = sha256;
  m.name = "synth";
  m.dominant_type = "q4_0";
  p.models.push_back(m);
  return p;
}

// Phase telemetry as the sampler summarizes it, with a frequency that drops as the run
// heats up (share) so the chart has something to show.
json phase(int64_t start_ns, int64_t end_ns, double share, double temp_c) {
  telemetry::PhaseTelemetry t;
  t.start_ns = start_ns;
  t.end_ns = end_ns;
  t.samples = 4;
  telemetry::ClusterPhase big;
  big.name = "cluster0";
  big.role = "big";
  big.cpus = {0, 1};
  big.max_khz = 3000000;
  big.mean_freq_share = share;
  telemetry::ClusterPhase little;
  little.name = "cluster1";
  little.role = "little";
  little.cpus = {2, 3};
  little.max_khz = 2000000;
  little.mean_freq_share = 0.9;
  t.clusters = {big, little};
  t.thermal = {{"cpu-thermal", temp_c, temp_c - 1}};
  t.mean_power_w = 3.5 + share;
  t.energy_source = "rapl";
  t.throttled_ms = share < 0.8 ? 12.0 : 0.0;
  t.other_cpu_share = 0.02;
  return telemetry::to_json(t);
}

}  // namespace

json bench_document(int reps, int steps, bool with_telemetry, const std::string& model_path, const std::string& sha256) {
  result::BenchReport report;
  report.provenance = provenance(model_path, sha256);
  int64_t clock = 1'000'000'000;
  for (int test = 0; test < 2; ++test) {
    result::TestResult r;
    r.config.model_path = model_path;
    r.config.kind = test == 0 ? workload::TestKind::kPrompt : workload::TestKind::kGenerate;
    r.config.n_prompt = test == 0 ? 128 : 0;
    r.config.n_gen = test == 0 ? 0 : steps;
    r.config.n_threads = 2;
    r.load_ms = {800, 400, 401};
    for (int i = 0; i < reps; ++i) {
      result::Repetition rep;
      rep.index = i;
      rep.start_ns = clock;
      rep.prefill_ms = test == 0 ? 2000 + i : 0;
      rep.prefill_tokens_per_s = test == 0 ? 128 / (rep.prefill_ms / 1000) : 0;
      double decode_ms = 0;
      for (int s = 0; test == 1 && s < steps; ++s) {
        // Slower as it "heats up", with a spike every 97 steps.
        const double step = 30 + 10.0 * i / std::max(1, reps - 1) + (s % 97 == 0 ? 25 : (s % 7) * 0.5);
        rep.decode_step_ms.push_back(step);
        decode_ms += step;
      }
      rep.decode_ms = decode_ms;
      rep.ttft_ms = test == 0 ? rep.prefill_ms : rep.decode_step_ms.front();
      rep.decode_tokens_per_s = test == 1 ? (steps - 1) / (decode_ms / 1000) : 0;
      rep.end_ns = clock + static_cast<int64_t>((rep.prefill_ms + decode_ms) * 1e6);
      rep.peak_rss_bytes = 700'000'000;
      if (with_telemetry) {
        const double share = 1.0 - 0.3 * i / std::max(1, reps - 1);
        rep.telemetry = json::object();
        if (test == 0) rep.telemetry["prefill"] = phase(rep.start_ns, rep.end_ns, share, 50 + 2 * i);
        else rep.telemetry["decode"] = phase(rep.start_ns, rep.end_ns, share, 55 + 3 * i);
      }
      r.repetitions.push_back(rep);
      clock = rep.end_ns + 500'000'000;
    }
    if (with_telemetry) r.telemetry = {{"sample_hz", 20}, {"unavailable", json::array()}};
    if (test == 1) {
      r.roofline = result::roofline_from_json({{"decode_bandwidth_ceiling_tokens_per_s", 50.0}, {"decode_kernel_ceiling_tokens_per_s", 42.0},
                                               {"decode_ceiling_tokens_per_s", 42.0}, {"decode_bound", "kernel"}, {"decode_efficiency", 0.7}});
    } else {
      r.roofline = result::roofline_from_json({{"prefill_ceiling_tokens_per_s", 90.0}, {"prefill_efficiency", 0.71}});
    }
    report.results.push_back(r);
  }
  if (!with_telemetry) {
    for (auto& r : report.results) r.telemetry = nullptr;
  }
  return result::to_json(report);
}

json session_document(int rounds, int conversations, int turns, int steps, const std::string& reply) {
  result::SessionReport report;
  report.run_id = 3;
  report.provenance = provenance("model.gguf", "ab12");
  report.telemetry_unavailable = {"thermal: no /sys/class/thermal"};
  result::SessionConfigResult c;
  c.config.model_path = "model.gguf";
  c.config.max_tokens = steps;
  c.config.n_threads = 2;
  const int total = rounds * conversations * turns;
  int n = 0;
  for (int r = 0; r < rounds; ++r) {
    for (int conv = 0; conv < conversations; ++conv) {
      for (int t = 0; t < turns; ++t, ++n) {
        const double tps = n < total / 2 ? 20.0 + (n % 5) * 0.1 : 14.0 + (n % 5) * 0.1;
        json steps_ms = json::array();
        for (int s = 0; s < steps; ++s) steps_ms.push_back(1000.0 / tps + (s % 3) * 0.25);
        c.turns.push_back(result::turn_from_json({{"round", r}, {"conversation_id", "c" + std::to_string(conv)}, {"turn_index", t},
                           {"prompt_tokens", 40}, {"context_tokens", 100 * (t + 1)}, {"generated_tokens", steps},
                           {"stop_reason", "max_tokens"}, {"ttft_ms", 200.0 + 30 * t}, {"prefill_ms", 195.0},
                           {"prefill_tokens_per_s", 200.0}, {"decode_tokens_per_s", tps},
                           {"e2e_ms", 200.0 + steps * 1000.0 / tps}, {"decode_step_ms", steps_ms}, {"reply", reply},
                           {"telemetry", {{"decode", phase(0, 1'000'000'000, tps / 20, 50 + n * 0.05)}}},
                           {"missed_frame_share_prefill", nullptr}, {"missed_frame_share_decode", nullptr}}));
      }
    }
  }
  c.analysis = analysis::analyse_session_turns(c.turns);
  report.configs.push_back(c);
  return result::to_json(report);
}

json doctor_document(const std::string& text) {
  const json findings = json::array(
      {{{"id", "kernel.isa_fallback"}, {"severity", "critical"}, {"title", "the sse42 variant runs on an AVX2 CPU " + text},
        {"evidence", {"loaded: sse42", "CPU has: AVX2, FMA", text}}, {"affects", "prefill+decode"},
        {"fix", "drop --cpu-variant sse42 " + text}, {"speedup", 2.5}, {"speedup_basis", "measured"},
        {"speedup_detail", "measured: the best variant against sse42 " + text}},
       {{"id", "threads.oversubscribed"}, {"severity", "warning"}, {"title", "more threads than cores"},
        {"evidence", {"8 threads on 4 cores"}}, {"affects", "decode"}, {"fix", "-t 4"}, {"speedup", 1.3},
        {"speedup_basis", "estimated"}, {"speedup_detail", "estimated: threads over cores"}},
       {{"id", "memory.footprint"}, {"severity", "info"}, {"title", "memory as declared"}, {"evidence", json::array()},
        {"affects", "memory"}, {"fix", ""}, {"speedup", nullptr}, {"speedup_basis", nullptr},
        {"speedup_detail", nullptr}}});
  return {{"schema_version", 2}, {"kind", "doctor"},
          {"doctor", {{"model", "model.gguf " + text}, {"healthy", false}, {"config", {"-t", "8"}}, {"findings", findings}}}};
}

}  // namespace edgeprobe::report_test
