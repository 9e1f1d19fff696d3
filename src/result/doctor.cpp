#include "result/doctor.h"

#include <fmt/format.h>

#include <string_view>

#include "core/error.h"
#include "core/json_read.h"
#include "result/migrate.h"

namespace edgeprobe::result {

using nlohmann::json;
using json_read::field;
using json_read::list;
using json_read::number;
using json_read::object;
using json_read::number_or_null;
using json_read::optional_num;
using json_read::text;

namespace {

std::vector<double> numbers(const json& j, const char* key) {
  std::vector<double> out;
  for (const auto& v : list(j, key))
    if (v.is_number()) out.push_back(v.get<double>());
  return out;
}

Severity severity_from_name(const std::string& name) {
  if (name == "critical") return Severity::kCritical;
  if (name == "warning") return Severity::kWarning;
  return Severity::kInfo;
}

PairVerdict verdict_from_name(const std::string& name, PairVerdict otherwise) {
  for (auto v : {PairVerdict::kContinue, PairVerdict::kFaster, PairVerdict::kSlower, PairVerdict::kSame,
                 PairVerdict::kInconclusive})
    if (name == verdict_name(v)) return v;
  return otherwise;
}

std::optional<PairedEstimate> estimate_from_json(const json& j) {
  if (!j.is_object()) return std::nullopt;
  return PairedEstimate{number<int>(j, "pairs"), number<double>(j, "median_ratio"), number<double>(j, "low"),
                        number<double>(j, "high"), number<double>(j, "coverage")};
}

json optional_estimate(const std::optional<PairedEstimate>& e) { return e ? to_json(*e) : json(nullptr); }

json to_json(const DoctorChild& c) {
  return {{"label", c.label},
          {"config", c.config},
          {"command", c.command},
          {"error", c.error},
          {"window",
           {{"wall_s", c.wall_s},
            {"child_cpu_s", c.child_cpu_s},
            {"other_cpu_share", number_or_null(c.other_cpu_share)},
            {"throttled_ms", number_or_null(c.throttled_ms)},
            {"cpu_pressure_share", number_or_null(c.cpu_pressure_share)},
            {"reference_kernel_ms", c.reference_kernel_ms}}}};
}

DoctorChild child_from_json(const json& j) {
  DoctorChild c;
  c.label = text(j, "label");
  c.config = json_read::strings(j, "config");
  c.command = text(j, "command");
  c.error = text(j, "error");
  const json& w = object(j, "window");
  c.wall_s = number<double>(w, "wall_s");
  c.child_cpu_s = number<double>(w, "child_cpu_s");
  c.other_cpu_share = optional_num(w, "other_cpu_share");
  c.throttled_ms = optional_num(w, "throttled_ms");
  c.cpu_pressure_share = optional_num(w, "cpu_pressure_share");
  c.reference_kernel_ms = numbers(w, "reference_kernel_ms");
  return c;
}

json tests_json(int n_prompt, int n_gen, int repetitions) {
  return {{"n_prompt", n_prompt}, {"n_gen", n_gen}, {"repetitions", repetitions}};
}

}  // namespace

const char* severity_name(Severity severity) {
  switch (severity) {
    case Severity::kCritical: return "critical";
    case Severity::kWarning: return "warning";
    case Severity::kInfo: return "info";
  }
  return "info";
}

const char* verdict_name(PairVerdict verdict) {
  switch (verdict) {
    case PairVerdict::kContinue: return "measuring";
    case PairVerdict::kFaster: return "faster";
    case PairVerdict::kSlower: return "slower";
    case PairVerdict::kSame: return "same";
    case PairVerdict::kInconclusive: return "inconclusive";
  }
  return "inconclusive";
}

std::string speedup_basis_word(const Finding& f) {
  std::string_view s = f.speedup_basis;
  const std::string emulated = std::string(kEmulatedSpeedup) + ": ";
  if (s.starts_with(emulated)) s.remove_prefix(emulated.size());
  for (const char* word : {"measured", "estimated", "none"})
    if (s.starts_with(word)) return word;
  return "";
}

json to_json(const Finding& f) {
  json j = {{"id", f.id},         {"severity", severity_name(f.severity)},
            {"title", f.title},   {"evidence", f.evidence},
            {"affects", f.affects}, {"fix", f.fix},
            {"data", f.data}};
  const std::string word = speedup_basis_word(f);
  j["speedup"] = number_or_null(f.speedup);
  j["speedup_basis"] = word.empty() ? json(nullptr) : json(word);
  j["speedup_detail"] = f.speedup_basis.empty() ? json(nullptr) : json(f.speedup_basis);
  return j;
}

Finding finding_from_json(const json& j) {
  Finding f;
  f.id = text(j, "id");
  f.severity = severity_from_name(text(j, "severity"));
  f.title = text(j, "title");
  f.evidence = json_read::strings(j, "evidence");
  f.affects = text(j, "affects");
  f.fix = text(j, "fix");
  if (const json& d = field(j, "data"); d.is_object()) f.data = d;
  // Before the speed-up had one name: estimated_speedup, with the sentence in speedup_basis.
  f.speedup = optional_num(j, j.contains("speedup") ? "speedup" : "estimated_speedup");
  f.speedup_basis = text(j, "speedup_detail", j.contains("speedup_detail") ? "" : text(j, "speedup_basis"));
  return f;
}

std::string rates_text(const Rates& r) {
  std::string out;
  if (r.pp) out += fmt::format("prefill {:.1f} t/s", *r.pp);
  if (r.tg) out += fmt::format("{}decode {:.1f} t/s", out.empty() ? "" : ", ", *r.tg);
  return out.empty() ? "no rate" : out;
}

json to_json(const Rates& r) {
  return {{"prefill_tokens_per_s", number_or_null(r.pp)}, {"decode_tokens_per_s", number_or_null(r.tg)}};
}

Rates rates_from_json(const json& j) {
  return {optional_num(j, "prefill_tokens_per_s"), optional_num(j, "decode_tokens_per_s")};
}

json to_json(const PairedEstimate& e) {
  return {{"pairs", e.n}, {"median_ratio", e.median}, {"low", e.low}, {"high", e.high}, {"coverage", e.coverage}};
}

json to_json(const PairComparison& c) {
  json pairs = json::array();
  for (const auto& p : c.pairs)
    pairs.push_back({{"a", p.a}, {"b", p.b}, {"ratio", p.ratio}, {"disturbed", p.disturbed}, {"why", p.why}});
  return {{"what", c.what},
          {"a", c.a_label},
          {"b", c.b_label},
          {"after", c.after},
          {"metric", c.metric},
          {"pairs", pairs},
          {"estimate", optional_estimate(c.estimate)},
          {"phases", {{"prefill", optional_estimate(c.prefill_estimate)}, {"decode", optional_estimate(c.decode_estimate)}}},
          {"b_ceilings", c.b_ceilings},
          {"includes_disturbed", c.includes_disturbed},
          {"verdict", verdict_name(c.verdict)},
          {"first_round", optional_estimate(c.first_estimate)},
          {"first_verdict", c.first_estimate ? verdict_name(c.first_verdict) : ""},
          {"speed_variation", c.speed_variation},
          {"error", c.error},
          {"wall_s", c.wall_s}};
}

PairComparison comparison_from_json(const json& j) {
  PairComparison c;
  c.what = text(j, "what");
  c.a_label = text(j, "a");
  c.b_label = text(j, "b");
  c.after = json_read::strings(j, "after");
  c.metric = text(j, "metric", c.metric);
  for (const auto& p : list(j, "pairs"))
    c.pairs.push_back({number<double>(p, "a"), number<double>(p, "b"), number<double>(p, "ratio"),
                       field(p, "disturbed") == true, text(p, "why")});
  c.estimate = estimate_from_json(field(j, "estimate"));
  c.prefill_estimate = estimate_from_json(field(object(j, "phases"), "prefill"));
  c.decode_estimate = estimate_from_json(field(object(j, "phases"), "decode"));
  c.b_ceilings = field(j, "b_ceilings");
  c.includes_disturbed = field(j, "includes_disturbed") == true;
  c.verdict = verdict_from_name(text(j, "verdict"), PairVerdict::kInconclusive);
  c.first_estimate = estimate_from_json(field(j, "first_round"));
  c.first_verdict = verdict_from_name(text(j, "first_verdict"), PairVerdict::kContinue);
  c.speed_variation = number<double>(j, "speed_variation");
  c.error = text(j, "error");
  c.wall_s = number<double>(j, "wall_s");
  return c;
}

json to_json(const DoctorReport& r) {
  json findings = json::array(), runs = json::array(), comparisons = json::array();
  for (const auto& f : r.findings) findings.push_back(to_json(f));
  for (const auto& c : r.runs) runs.push_back(to_json(c));
  for (const auto& c : r.comparisons) comparisons.push_back(to_json(c));
  return {{"schema_version", r.schema_version},
          {"kind", "doctor"},
          {"doctor",
           {{"model", r.model},
            {"config", r.config},
            {"tests", tests_json(r.n_prompt, r.n_gen, r.repetitions)},
            {"healthy", r.healthy},
            {"findings", findings},
            {"runs", runs},
            {"comparisons", comparisons},
            {"machine", {{"reference_kernel_best_ms", r.reference_kernel_best_ms}, {"speed_variation", r.speed_variation}}},
            {"budget_s", r.budget_s},
            {"emulated", r.emulated.empty() ? json(nullptr) : json(r.emulated)},
            {"wall_s", r.wall_s},
            {"primary", r.primary ? to_json(*r.primary) : json(nullptr)}}}};
}

DoctorReport doctor_report_from_json(const json& j) {
  const json& d = field(j, "doctor");
  if (!d.is_object()) throw_bad_input("a doctor result has a \"doctor\" object and this one has none: is it an 'edgeprobe doctor -o json' result?");
  DoctorReport r;
  r.schema_version = number<int>(j, "schema_version");
  r.model = text(d, "model");
  r.config = json_read::strings(d, "config");
  const json& tests = object(d, "tests");
  r.n_prompt = number<int>(tests, "n_prompt");
  r.n_gen = number<int>(tests, "n_gen");
  r.repetitions = number<int>(tests, "repetitions");
  r.healthy = field(d, "healthy") == true;
  for (const auto& f : list(d, "findings")) r.findings.push_back(finding_from_json(f));
  for (const auto& c : list(d, "runs")) r.runs.push_back(child_from_json(c));
  for (const auto& c : list(d, "comparisons")) r.comparisons.push_back(comparison_from_json(c));
  const json& machine = object(d, "machine");
  r.reference_kernel_best_ms = number<double>(machine, "reference_kernel_best_ms");
  r.speed_variation = number<double>(machine, "speed_variation");
  r.budget_s = number<double>(d, "budget_s");
  r.emulated = text(d, "emulated");
  r.wall_s = number<double>(d, "wall_s");
  // The primary run is a bench document of the version its doctor wrote.
  if (const json& p = field(d, "primary"); p.is_object()) r.primary = bench_report_from_json(upgrade_report(p));
  return r;
}

json to_json(const TuneReport& r) {
  json steps = json::array();
  for (const auto& s : r.steps) {
    json candidates = json::array();
    for (const auto& c : s.candidates)
      candidates.push_back({{"value", c.value}, {"rates", to_json(c.rates)}, {"turn_s", number_or_null(c.turn_s)}});
    steps.push_back({{"setting", s.setting}, {"candidates", candidates}, {"chosen", s.chosen}, {"error", s.error}});
  }
  auto rounds = [](const std::vector<Rates>& v) {
    json a = json::array();
    for (const auto& x : v) a.push_back(to_json(x));
    return a;
  };
  return {{"schema_version", r.schema_version},
          {"kind", "doctor"},
          {"tune",
           {{"model", r.model},
            // Not written by a search stored before them: unknown, not zero.
            {"tests", r.n_prompt + r.n_gen > 0 ? tests_json(r.n_prompt, r.n_gen, r.repetitions) : json(nullptr)},
            {"start", r.start},
            {"best", r.best},
            {"steps", steps},
            {"confirm", {{"start", rounds(r.start_rounds)}, {"best", rounds(r.best_rounds)}}},
            {"gain", number_or_null(r.gain)},
            {"edgeprobe_command", r.edgeprobe_command},
            {"llama_bench_command", r.llama_bench_command},
            {"wall_s", r.wall_s}}}};
}

TuneReport tune_report_from_json(const json& j) {
  const json& t = field(j, "tune");
  if (!t.is_object()) throw_bad_input("a doctor --tune result has a \"tune\" object and this one has none");
  TuneReport r;
  // A search stored before its document named a version was written at version 2.
  r.schema_version = j.contains("schema_version") ? number<int>(j, "schema_version") : 2;
  r.model = text(t, "model");
  const json& tests = object(t, "tests");
  r.n_prompt = number<int>(tests, "n_prompt");
  r.n_gen = number<int>(tests, "n_gen");
  r.repetitions = number<int>(tests, "repetitions");
  r.start = json_read::strings(t, "start");
  r.best = json_read::strings(t, "best");
  for (const auto& s : list(t, "steps")) {
    TuneStep step{text(s, "setting"), {}, text(s, "chosen"), text(s, "error")};
    for (const auto& c : list(s, "candidates"))
      step.candidates.push_back({text(c, "value"), rates_from_json(field(c, "rates")), optional_num(c, "turn_s")});
    r.steps.push_back(std::move(step));
  }
  const json& confirm = object(t, "confirm");
  for (const auto& x : list(confirm, "start")) r.start_rounds.push_back(rates_from_json(x));
  for (const auto& x : list(confirm, "best")) r.best_rounds.push_back(rates_from_json(x));
  r.gain = optional_num(t, "gain");
  r.edgeprobe_command = text(t, "edgeprobe_command");
  r.llama_bench_command = text(t, "llama_bench_command");
  r.wall_s = number<double>(t, "wall_s");
  return r;
}

json to_json(const DoctorResult& result) {
  return std::visit([](const auto& r) { return to_json(r); }, result);
}

DoctorResult doctor_result_from_json(const json& j) {
  if (field(j, "tune").is_object()) return tune_report_from_json(j);
  return doctor_report_from_json(j);
}

}  // namespace edgeprobe::result
