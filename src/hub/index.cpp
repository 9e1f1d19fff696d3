#include "hub/index.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>
#include <unordered_map>

#include "result/doctor.h"
#include "result/result.h"

namespace edgeprobe::hub {

using nlohmann::json;

const std::vector<std::string> kFilterKeys = {"device", "chip",   "backend", "model", "sha",
                                              "quant",  "commit", "version", "kind",  "submitter",
                                              "flag",   "from",   "to"};
const std::vector<std::string> kSortKeys = {"id", "date", "device", "model", "quant", "prefill", "decode"};

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string first_nonempty(std::initializer_list<const std::string*> options) {
  for (const std::string* s : options)
    if (!s->empty()) return *s;
  return "";
}

// Which device ran a test's graphs: the GPU whose ceilings judged it, else the GPU that
// took layers, else the CPU.
std::string backend_of(const result::TestResult& r) {
  if (r.roofline && !r.roofline->device.empty()) return r.roofline->device;
  const auto& p = r.placement;
  if (p.layers_offloaded > 0 && !p.devices.empty()) return p.devices[0].substr(0, p.devices[0].find(' '));
  return "CPU";
}

// measured / ceiling, recomputed from the rates rather than read from the document.
std::optional<double> efficiency(double measured, double ceiling) {
  if (ceiling <= 0 || measured <= 0) return std::nullopt;
  return measured / ceiling;
}

void keep_best(std::optional<PhaseFigure>& best, PhaseFigure candidate) {
  if (candidate.tokens_per_s <= 0) return;
  if (!best || candidate.tokens_per_s > best->tokens_per_s) best = std::move(candidate);
}

// The median of the repetitions' measured energy per token in `phase`; none where the
// device measured no total energy (the telemetry's joules_per_token is then absent).
std::optional<double> joules_per_token(const result::TestResult& r, const char* phase) {
  std::vector<double> v;
  for (const auto& rep : r.repetitions) {
    const auto& t = rep.telemetry;
    if (t.is_object() && t.contains(phase) && t[phase].is_object() && t[phase].contains("joules_per_token") &&
        t[phase]["joules_per_token"].is_number())
      v.push_back(t[phase]["joules_per_token"].get<double>());
  }
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The worst greedy check of the run's tests against a reference; "" when none compared.
std::string fidelity_of(const result::BenchReport& bench) {
  std::string verified, diverged;
  for (const result::TestResult& r : bench.results) {
    if (!r.verify || r.verify->reference.empty() || r.verify->compared <= 0) continue;
    const auto& v = *r.verify;
    if (v.first_divergence >= 0) {
      if (diverged.empty())
        diverged = fmt::format("diverges from {} at token {} of {} ({})", v.reference, v.first_divergence,
                               v.compared, r.config.name());
    } else if (verified.empty()) {
      verified = fmt::format("greedy tokens as {}'s ({} compared)", v.reference, v.compared);
    }
  }
  return diverged.empty() ? verified : diverged;
}

void add_ceilings(const result::TestResult& r, RunRow& row) {
  if (!r.roofline) return;
  const auto& f = *r.roofline;
  if (f.bandwidth_gb_per_s <= 0 && f.decode_kernel_gb_per_s <= 0 && f.prefill_compute_gflop_per_s <= 0)
    return;
  const std::string backend = f.device.empty() ? "CPU" : f.device;
  for (const CeilingFigure& c : row.ceilings)
    if (c.backend == backend) return;  // the first test's: the device's ceilings do not change within a run
  row.ceilings.push_back({backend, f.bandwidth_gb_per_s, f.decode_kernel_gb_per_s,
                          f.prefill_compute_gflop_per_s,
                          f.decode_ceiling_suspect || f.prefill_ceiling_suspect});
}

void add_bench_figures(const result::BenchReport& bench, RunRow& row) {
  std::set<std::string> backends;
  double best_prefill = 0;
  row.fidelity = fidelity_of(bench);
  for (const result::TestResult& r : bench.results) {
    if (r.error || r.repetitions.empty()) continue;
    backends.insert(backend_of(r));
    add_ceilings(r, row);
    const result::TestSummary s = summarize(r);
    const auto& roof = r.roofline;
    if (r.config.n_prompt > 0) {
      keep_best(row.prefill,
                {r.config.name(), s.prefill_tokens_per_s.median,
                 roof ? efficiency(s.prefill_tokens_per_s.median, roof->prefill_ceiling_tokens_per_s)
                      : std::nullopt,
                 joules_per_token(r, "prefill")});
      if (row.prefill && row.prefill->tokens_per_s > best_prefill) {
        best_prefill = row.prefill->tokens_per_s;
        row.ttft_ms = s.ttft_ms.median;
      }
    }
    if (r.config.n_gen > 0)
      keep_best(
          row.decode,
          {r.config.name(), s.decode_tokens_per_s.median,
           roof ? efficiency(s.decode_tokens_per_s.median, roof->decode_ceiling_tokens_per_s) : std::nullopt,
           joules_per_token(r, "decode")});
  }
  for (const std::string& b : backends) row.backend += (row.backend.empty() ? "" : ",") + b;
}

}  // namespace

RunRow row_of(const app::StoredRun& run, const json& submission) {
  RunRow row;
  row.id = run.record.id;
  row.created_at = run.record.created_at;
  row.kind = run.record.kind;
  row.status = run.record.status;
  // A doctor document keeps its provenance inside its primary run; the store's record of
  // the run holds it at the top (doctor_job.cpp, and a submission records it so).
  json provenance = run.document().value("provenance", json::object());
  if ((!provenance.is_object() || provenance.empty()) && run.record.provenance.is_object())
    provenance = run.record.provenance;
  const result::Provenance p = result::provenance_from_json(provenance);
  row.device_id = p.device.id;
  row.device_name = first_nonempty({&p.device.board, &p.device.soc, &p.device.cpu_model});
  row.chip = first_nonempty({&p.device.soc, &p.device.cpu_model});
  if (!p.models.empty()) {
    const result::ModelIdentity& m = p.models[0];
    row.model_name = m.name.empty() ? std::filesystem::path(m.path).filename().string() : m.name;
    row.model_sha = m.sha256;
    row.quant = m.dominant_type;
    row.model_params = m.n_params;
  }
  row.llama_commit = p.engine.commit;
  row.edgeprobe_version = p.edgeprobe_version;
  if (submission.is_object()) {
    row.submitter = submission.value("submitter", "");
    row.ceilings_check = submission.value("ceilings", "");
  }
  if (const result::BenchReport* bench = run.bench()) add_bench_figures(*bench, row);
  if (run.content)
    if (const auto* doctor = std::get_if<result::DoctorResult>(&*run.content))
      if (const auto* report = std::get_if<result::DoctorReport>(doctor))
        for (const result::Finding& f : report->findings)
          row.findings.push_back({result::severity_name(f.severity), f.id, f.title});
  return row;
}

namespace {

bool is_hex_sha256(const std::string& s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
}

std::string params_text(uint64_t n) {
  if (n == 0) return "parameters unknown";
  return n >= 1000000000 ? fmt::format("{:.2f} B parameters", n / 1e9)
                         : fmt::format("{:.1f} M parameters", n / 1e6);
}

// The median of `sorted` without its element `skip`.
double median_without(const std::vector<double>& sorted, size_t skip) {
  const size_t m = sorted.size() - 1;
  auto at = [&](size_t i) { return sorted[i < skip ? i : i + 1]; };
  return m % 2 ? at(m / 2) : (at(m / 2 - 1) + at(m / 2)) / 2;
}

bool counts_for_class(const RunRow& r) {
  return r.kind == "bench" && r.status != "failed" && r.status != "running";
}

// A rate more than kOutlierFactor times above or below the median of at least
// kOutlierPeers other runs of the same test of the same model (by SHA, else by name and
// quantization) on the same chip.
void flag_outliers(const std::vector<RunRow>& rows, const std::vector<std::string>& sha_lc,
                   std::optional<PhaseFigure> RunRow::*phase, const char* code, const char* name,
                   std::vector<std::vector<Flag>>& flags) {
  std::unordered_map<std::string, std::vector<size_t>> classes;
  for (size_t i = 0; i < rows.size(); ++i) {
    const RunRow& r = rows[i];
    const auto& f = r.*phase;
    if (!counts_for_class(r) || !f || f->tokens_per_s <= 0) continue;
    const std::string& chip = r.chip.empty() ? r.device_name : r.chip;
    if (chip.empty()) continue;
    std::string key = chip;
    key += '\n';
    key += sha_lc[i].empty() ? r.model_name + "\n" + r.quant : sha_lc[i];
    key += '\n';
    key += f->test;
    classes[key].push_back(i);
  }
  std::vector<std::pair<double, size_t>> by_rate;
  std::vector<double> sorted;
  for (const auto& [key, members] : classes) {
    if (members.size() < kOutlierPeers + 1) continue;
    by_rate.clear();
    sorted.clear();
    for (size_t i : members) by_rate.emplace_back((rows[i].*phase)->tokens_per_s, i);
    std::sort(by_rate.begin(), by_rate.end());
    for (const auto& [rate, i] : by_rate) sorted.push_back(rate);
    for (size_t k = 0; k < by_rate.size(); ++k) {
      const double median = median_without(sorted, k), rate = by_rate[k].first;
      if (median <= 0 || (rate <= kOutlierFactor * median && rate * kOutlierFactor >= median)) continue;
      const RunRow& r = rows[by_rate[k].second];
      const double ratio = rate > median ? rate / median : median / rate;
      flags[by_rate[k].second].push_back(
          {code, fmt::format(
                     "outlier: {} {} {:.4g} tok/s is {:.1f}x {} the median {:.4g} tok/s of the {} other runs "
                     "of this model and test on {}",
                     name, (r.*phase)->test, rate, ratio, rate > median ? "above" : "below", median,
                     members.size() - 1, r.chip.empty() ? r.device_name : r.chip)});
    }
  }
}

}  // namespace

std::vector<std::vector<Flag>> compute_flags(const std::vector<RunRow>& rows) {
  std::vector<std::vector<Flag>> flags(rows.size());
  std::vector<std::string> sha_lc(rows.size()), identity(rows.size());
  // Which SHAs the hub holds for each name, quantization and size.
  std::unordered_map<std::string, std::map<std::string, size_t>> shas;
  for (size_t i = 0; i < rows.size(); ++i) {
    const RunRow& r = rows[i];
    if (!is_hex_sha256(r.model_sha)) continue;
    sha_lc[i] = lower(r.model_sha);
    if (r.model_name.empty()) continue;
    identity[i] = r.model_name + "\n" + r.quant + "\n" + std::to_string(r.model_params);
    ++shas[identity[i]][sha_lc[i]];
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const RunRow& r = rows[i];
    if (r.model_name.empty() || (r.kind != "bench" && r.kind != "session" && r.kind != "doctor")) continue;
    if (r.model_sha.empty()) {
      flags[i].push_back({"sha-absent",
                          "the model's SHA-256 was not computed (bench --no-hash): the model is known "
                          "by its name only"});
      continue;
    }
    if (sha_lc[i].empty()) {
      flags[i].push_back(
          {"sha-malformed", fmt::format("the model's SHA-256 '{}' is not 64 hex digits: the model is "
                                        "known by its name only",
                                        r.model_sha.substr(0, 80))});
      continue;
    }
    const auto& seen = shas[identity[i]];
    if (seen.size() < 2) continue;
    std::string others;
    for (const auto& [sha, n] : seen) {
      if (sha == sha_lc[i]) continue;
      others += fmt::format("{}{}… ({} run{})", others.empty() ? "" : ", ", sha.substr(0, 12), n,
                            n == 1 ? "" : "s");
    }
    flags[i].push_back(
        {"sha-conflict",
         fmt::format("{} {} ({}) is also in this hub as another file: {}; the name does not say which file "
                     "ran, compare runs by SHA",
                     r.model_name, r.quant, params_text(r.model_params), others)});
  }
  flag_outliers(rows, sha_lc, &RunRow::prefill, "outlier-prefill", "prefill", flags);
  flag_outliers(rows, sha_lc, &RunRow::decode, "outlier-decode", "decode", flags);
  return flags;
}

void flag_runs(std::vector<RunRow>& rows) {
  auto flags = compute_flags(rows);
  for (size_t i = 0; i < rows.size(); ++i) rows[i].flags = std::move(flags[i]);
}

namespace {

bool contains_ci(const std::string& hay, const std::string& needle) {
  return lower(hay).find(lower(needle)) != std::string::npos;
}
bool prefix_ci(const std::string& s, const std::string& prefix) {
  return lower(s).rfind(lower(prefix), 0) == 0;
}

bool matches(const RunRow& r, const std::string& key, const std::string& v) {
  if (v.empty()) return true;
  if (key == "device") return contains_ci(r.device_id, v) || contains_ci(r.device_name, v);
  if (key == "chip") return contains_ci(r.chip, v);
  if (key == "backend") return contains_ci(r.backend, v);
  if (key == "model") return contains_ci(r.model_name, v);
  if (key == "sha") return prefix_ci(r.model_sha, v);
  if (key == "quant") return lower(r.quant) == lower(v);
  if (key == "commit") return prefix_ci(r.llama_commit, v);
  if (key == "version") return contains_ci(r.edgeprobe_version, v);
  if (key == "kind") return r.kind == v;
  if (key == "submitter") return contains_ci(r.submitter, v);
  if (key == "flag")
    return std::any_of(r.flags.begin(), r.flags.end(), [&](const Flag& f) { return contains_ci(f.code, v); });
  if (key == "from") return r.created_at.substr(0, v.size()) >= v;
  if (key == "to") return r.created_at.substr(0, v.size()) <= v;
  return true;
}

double rate(const std::optional<PhaseFigure>& f) { return f ? f->tokens_per_s : -1; }

enum class SortKey { kId, kDate, kDevice, kModel, kQuant, kPrefill, kDecode };

SortKey sort_key(const std::string& key) {
  if (key == "date") return SortKey::kDate;
  if (key == "device") return SortKey::kDevice;
  if (key == "model") return SortKey::kModel;
  if (key == "quant") return SortKey::kQuant;
  if (key == "prefill") return SortKey::kPrefill;
  if (key == "decode") return SortKey::kDecode;
  return SortKey::kId;
}

// Strict weak order on the sort key, then the id, so pages never repeat or skip a run.
bool less_by(const RunRow& a, const RunRow& b, SortKey key) {
  auto tie = [&](const auto& x, const auto& y) { return x != y ? x < y : a.id < b.id; };
  switch (key) {
    case SortKey::kDate:
      return tie(a.created_at, b.created_at);
    case SortKey::kDevice:
      return tie(a.device_name, b.device_name);
    case SortKey::kModel:
      return tie(a.model_name, b.model_name);
    case SortKey::kQuant:
      return tie(a.quant, b.quant);
    case SortKey::kPrefill:
      return tie(rate(a.prefill), rate(b.prefill));
    case SortKey::kDecode:
      return tie(rate(a.decode), rate(b.decode));
    case SortKey::kId:
      break;
  }
  return a.id < b.id;
}

}  // namespace

RunPage query_runs(const std::vector<RunRow>& all, const RunQuery& q) {
  std::vector<const RunRow*> hits;
  for (const RunRow& r : all)
    if (std::all_of(q.filters.begin(), q.filters.end(),
                    [&](const auto& f) { return matches(r, f.first, f.second); }))
      hits.push_back(&r);
  RunPage page;
  page.total = hits.size();
  const size_t per = std::clamp<size_t>(q.per_page, 1, kMaxPerPage);
  const size_t first = (std::max<size_t>(q.page, 1) - 1) * per;
  // Only the runs up to the page's last are ordered: n log(page end), not n log n, for a
  // store of 10^5 runs whose first page is what people open.
  const SortKey key = sort_key(q.sort);
  const auto end = hits.begin() + static_cast<std::ptrdiff_t>(std::min(hits.size(), first + per));
  std::partial_sort(hits.begin(), end, hits.end(), [&](const RunRow* a, const RunRow* b) {
    return q.descending ? less_by(*b, *a, key) : less_by(*a, *b, key);
  });
  for (size_t i = first; i < hits.size() && i < first + per; ++i) page.rows.push_back(*hits[i]);
  return page;
}

namespace {

// The best run per device for one phase, fastest device first.
std::vector<Placing> rank(const std::vector<const RunRow*>& runs, std::optional<PhaseFigure> RunRow::*phase) {
  std::map<std::string, Placing> best;
  for (const RunRow* r : runs) {
    const auto& f = r->*phase;
    if (!f) continue;
    const std::string device = r->device_id.empty() ? "(unknown device)" : r->device_id;
    auto it = best.find(device);
    if (it == best.end() || f->tokens_per_s > it->second.figure.tokens_per_s) best[device] = {*r, *f};
  }
  std::vector<Placing> out;
  for (auto& [device, placing] : best) out.push_back(std::move(placing));
  std::sort(out.begin(), out.end(), [](const Placing& a, const Placing& b) {
    return a.figure.tokens_per_s != b.figure.tokens_per_s ? a.figure.tokens_per_s > b.figure.tokens_per_s
                                                          : a.run.id < b.run.id;
  });
  return out;
}

bool usable_bench(const RunRow& r) {
  return r.kind == "bench" && r.status != "failed" && r.status != "running";
}

}  // namespace

Leaderboard leaderboard(const std::vector<RunRow>& all, const std::string& model, const std::string& quant) {
  std::vector<const RunRow*> runs;
  for (const RunRow& r : all)
    if (usable_bench(r) && r.model_name == model && r.quant == quant) runs.push_back(&r);
  return {model, quant, rank(runs, &RunRow::prefill), rank(runs, &RunRow::decode)};
}

std::vector<BoardKey> leaderboards(const std::vector<RunRow>& all) {
  std::map<std::pair<std::string, std::string>, std::pair<std::set<std::string>, size_t>> groups;
  for (const RunRow& r : all) {
    if (!usable_bench(r) || r.model_name.empty() || (!r.prefill && !r.decode)) continue;
    auto& g = groups[{r.model_name, r.quant}];
    g.first.insert(r.device_id);
    ++g.second;
  }
  std::vector<BoardKey> out;
  for (const auto& [key, g] : groups) out.push_back({key.first, key.second, g.first.size(), g.second});
  return out;
}

namespace {

json optional_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json figure_json(const std::optional<PhaseFigure>& f) {
  if (!f) return nullptr;
  return {{"test", f->test},
          {"tokens_per_s", f->tokens_per_s},
          {"efficiency", optional_json(f->efficiency)},
          {"joules_per_token", optional_json(f->joules_per_token)}};
}

}  // namespace

json to_json(const RunRow& r) {
  return {{"id", r.id},
          {"created_at", r.created_at},
          {"kind", r.kind},
          {"status", r.status},
          {"device", {{"id", r.device_id}, {"name", r.device_name}, {"chip", r.chip}}},
          {"backend", r.backend},
          {"model", {{"name", r.model_name}, {"sha256", r.model_sha}, {"quant", r.quant}}},
          {"llama_cpp_commit", r.llama_commit},
          {"edgeprobe_version", r.edgeprobe_version},
          {"submitter", r.submitter.empty() ? json(nullptr) : json(r.submitter)},
          {"ceilings_check", r.ceilings_check.empty() ? json(nullptr) : json(r.ceilings_check)},
          {"prefill", figure_json(r.prefill)},
          {"decode", figure_json(r.decode)},
          {"ttft_ms", optional_json(r.ttft_ms)},
          {"fidelity", r.fidelity.empty() ? json(nullptr) : json(r.fidelity)},
          {"flags", [&] {
             json out = json::array();
             for (const Flag& f : r.flags) out.push_back({{"code", f.code}, {"reason", f.reason}});
             return out;
           }()}};
}

std::vector<DeviceKey> devices(const std::vector<RunRow>& all) {
  std::map<std::string, DeviceKey> by_id;
  for (const RunRow& r : all) {
    if (r.device_id.empty()) continue;
    DeviceKey& d = by_id[r.device_id];
    d.id = r.device_id;
    if (r.created_at >= d.last_run_at) {  // the newest run names it
      d.last_run_at = r.created_at;
      d.name = r.device_name;
      d.chip = r.chip;
    }
    ++d.runs;
  }
  std::vector<DeviceKey> out;
  for (auto& [id, d] : by_id) out.push_back(std::move(d));
  std::stable_sort(out.begin(), out.end(),
                   [](const DeviceKey& a, const DeviceKey& b) { return a.runs > b.runs; });
  return out;
}

DeviceView device_view(const std::vector<RunRow>& all, const std::string& device_id) {
  DeviceView view;
  view.device.id = device_id;
  for (const RunRow& r : all)
    if (!device_id.empty() && r.device_id == device_id) view.runs.push_back(r);
  std::sort(view.runs.begin(), view.runs.end(), [](const RunRow& a, const RunRow& b) {
    return a.created_at != b.created_at ? a.created_at < b.created_at : a.id < b.id;
  });
  view.device.runs = view.runs.size();
  if (!view.runs.empty()) {
    view.device.name = view.runs.back().device_name;
    view.device.chip = view.runs.back().chip;
    view.device.last_run_at = view.runs.back().created_at;
  }
  return view;
}

json to_json(const DeviceView& v) {
  json runs = json::array(), ceilings = json::array(), findings = json::array();
  for (const RunRow& r : v.runs) {
    runs.push_back(to_json(r));
    for (const CeilingFigure& c : r.ceilings)
      ceilings.push_back({{"run", r.id},
                          {"created_at", r.created_at},
                          {"backend", c.backend},
                          {"bandwidth_gb_per_s", c.bandwidth_gb_per_s},
                          {"decode_kernel_gb_per_s", c.decode_kernel_gb_per_s},
                          {"prefill_compute_gflop_per_s", c.prefill_compute_gflop_per_s},
                          {"suspect", c.suspect}});
    for (const FindingLine& f : r.findings)
      findings.push_back({{"run", r.id},
                          {"created_at", r.created_at},
                          {"severity", f.severity},
                          {"id", f.id},
                          {"title", f.title}});
  }
  return {{"device", {{"id", v.device.id}, {"name", v.device.name}, {"chip", v.device.chip}}},
          {"runs", runs},
          {"ceilings", ceilings},
          {"findings", findings}};
}

json to_json(const Leaderboard& b) {
  auto list = [](const std::vector<Placing>& ps) {
    json out = json::array();
    for (size_t i = 0; i < ps.size(); ++i)
      out.push_back({{"rank", i + 1}, {"run", to_json(ps[i].run)}, {"figure", figure_json(ps[i].figure)}});
    return out;
  };
  return {{"model", b.model}, {"quant", b.quant}, {"prefill", list(b.prefill)}, {"decode", list(b.decode)}};
}

}  // namespace edgeprobe::hub
