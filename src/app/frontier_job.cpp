#include "app/frontier_job.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "app/bench_job.h"
#include "app/fidelity_job.h"
#include "app/models.h"
#include "core/error.h"
#include "core/stats.h"
#include "model/gguf_info.h"
#include "model/quantize.h"
#include "model/synth.h"
#include "workload/sweep.h"

namespace edgeprobe::app {
namespace {

// The reference and each quantization as model specs the other jobs resolve.
struct Specs {
  std::string reference;
  std::vector<std::string> quants;
};

Specs specs_of(const FrontierPlan& plan, JobSink* sink, int n_threads) {
  Specs s;
  const std::string& m = plan.model;
  for (const char* prefix : {"trained:", "synth:"}) {
    if (!m.starts_with(prefix)) continue;
    // trained:NAME[:QUANT] or synth:SHAPE[:QUANT]: the given quantization is the reference,
    // else the family's full precision.
    const size_t name_end = m.find(':', std::string(prefix).size());
    const std::string family = m.substr(0, name_end);
    s.reference = name_end == std::string::npos ? family + (m.starts_with("trained:") ? ":f32" : ":f16") : m;
    for (const auto& q : plan.quants) s.quants.push_back(family + ":" + q);
    return s;
  }
  s.reference = ModelSet::resolve(m, sink);
  model::read_gguf_info(s.reference);  // a bad file is one line before anything is hashed
  if (sink) sink->progress("hashing " + s.reference);
  const std::string sha = model::sha256_file(s.reference);
  for (const auto& q : plan.quants) {
    if (sink) sink->progress(fmt::format("quantizing to {} (first use; then cached)", q));
    s.quants.push_back(model::quantized_copy(s.reference, sha, q, n_threads));
  }
  return s;
}

void validate(const FrontierPlan& plan) {
  if (plan.model.empty())
    throw_bad_input("frontier needs -m MODEL (trained:NAME, synth:SHAPE or an f16/f32 GGUF file)");
  if (plan.quants.empty()) throw_bad_input("frontier needs at least one quantization in -q");
  for (const auto& q : plan.quants) model::quant_ftype(q);  // an unknown name lists the known ones
  for (size_t i = 0; i < plan.quants.size(); ++i)
    if (std::count(plan.quants.begin(), plan.quants.end(), plan.quants[i]) > 1)
      throw_bad_input("-q names {} twice", plan.quants[i]);
  if (plan.rounds < 1 || plan.rounds > 100) throw_bad_input("--rounds {} out of range 1..100", plan.rounds);
  if (plan.n_prompt < 1 || plan.n_gen < 2)
    throw_bad_input("-p must be >= 1 and -n >= 2 (decode speed needs steps after the first token)");
}

// Rounds of one repetition per model, the order rotated each round so no quantization
// always runs right after a load of the same neighbour.
std::vector<workload::TestCase> speed_cases(const std::vector<std::string>& models, const FrontierPlan& plan,
                                            int n_threads) {
  std::vector<workload::TestCase> cases;
  for (int r = 0; r < plan.rounds; ++r)
    for (size_t k = 0; k < models.size(); ++k) {
      workload::TestCase c;
      c.model_path = models[(k + static_cast<size_t>(r)) % models.size()];
      c.kind = workload::TestKind::kPromptGenerate;
      c.n_prompt = plan.n_prompt;
      c.n_gen = plan.n_gen;
      c.n_threads = n_threads;
      cases.push_back(c);
    }
  return cases;
}

// The results in speed_cases' order: round r's k-th test ran model (k + r) % n.
void fill_speed(fidelity::Frontier& f, const result::BenchReport& report, int rounds) {
  const size_t n = f.points.size();
  std::vector<std::vector<double>> prefill(n), decode(n);
  for (size_t r = 0; r < static_cast<size_t>(rounds); ++r) {
    std::vector<const result::Repetition*> rep(n, nullptr);
    for (size_t k = 0; k < n; ++k) {
      const auto& t = report.results.at(r * n + k);
      if (t.error || t.repetitions.empty())
        throw_environment("speed round {} failed on {}: {}", r + 1, f.points[(k + r) % n].quant,
                          t.error ? t.error->message : "no repetition");
      rep[(k + r) % n] = &t.repetitions.front();
    }
    for (size_t p = 0; p < n; ++p) {
      auto& point = f.points[p];
      point.prefill_ratio.push_back(rep[p]->prefill_tokens_per_s / rep[0]->prefill_tokens_per_s);
      point.decode_ratio.push_back(rep[p]->decode_tokens_per_s / rep[0]->decode_tokens_per_s);
      point.peak_rss_bytes = std::max(point.peak_rss_bytes, rep[p]->peak_rss_bytes);
      prefill[p].push_back(rep[p]->prefill_tokens_per_s);
      decode[p].push_back(rep[p]->decode_tokens_per_s);
    }
  }
  for (size_t p = 0; p < n; ++p) {
    f.points[p].prefill_tokens_per_s = stats::summarize(prefill[p]).median;
    f.points[p].decode_tokens_per_s = stats::summarize(decode[p]).median;
  }
}

}  // namespace

fidelity::Frontier run_frontier(const FrontierPlan& plan, const JobContext& context) {
  const auto t0 = std::chrono::steady_clock::now();
  validate(plan);
  JobSink* sink = context.sink;
  const int n_threads = plan.n_threads > 0 ? plan.n_threads : workload::default_thread_count();
  const Specs specs = specs_of(plan, sink, n_threads);

  fidelity::Frontier f;
  f.base = plan.model;
  f.n_threads = n_threads;
  f.rounds = plan.rounds;
  f.n_prompt = plan.n_prompt;
  f.n_gen = plan.n_gen;
  std::vector<std::string> models{specs.reference};
  models.insert(models.end(), specs.quants.begin(), specs.quants.end());
  f.points.resize(models.size());

  for (size_t i = 0; i < models.size(); ++i) {
    auto& p = f.points[i];
    p.quant = i == 0 ? "reference" : plan.quants[i - 1];
    p.is_reference = i == 0;
    if (i == 0) continue;
    if (sink) sink->progress(fmt::format("fidelity of {} against the reference", p.quant));
    FidelityPlan fp;
    fp.model = models[i];
    fp.reference = specs.reference;
    fp.text = plan.text;
    fp.chunks = plan.chunks;
    fp.n_threads = n_threads;
    fp.env = plan.env;
    const auto report = run_fidelity(fp, context);
    p.fidelity = report.summary;
    p.path = report.model["path"];
    p.sha256 = report.model["sha256"];
    if (i == 1) {
      f.points[0].path = report.reference["path"];
      f.points[0].sha256 = report.reference["sha256"];
      f.text = report.text;
      f.n_ctx = report.settings.n_ctx;
      f.n_chunks = report.settings.n_chunks;
    }
  }
  for (auto& p : f.points) p.size_bytes = std::filesystem::file_size(p.path);

  if (sink)
    sink->progress(fmt::format("speed: {} rounds of {} models, interleaved", plan.rounds, models.size()));
  BenchPlan bp;
  bp.cases = speed_cases(models, plan, n_threads);
  bp.run.repetitions = 1;
  bp.env = plan.env;
  bp.env.sample_hz = 0;
  bp.hash_models = false;
  bp.ceilings = "off";
  JobContext bench_context;
  bench_context.stop = context.stop;
  const auto bench = run_bench(bp, bench_context);
  if (bench.report.results.size() != bp.cases.size())
    throw_environment("the speed rounds stopped after {} of {} tests", bench.report.results.size(),
                      bp.cases.size());
  fill_speed(f, bench.report, plan.rounds);
  fidelity::mark_dominated(f.points);
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return f;
}

}  // namespace edgeprobe::app
