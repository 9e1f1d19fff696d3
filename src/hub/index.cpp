#include "hub/index.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "result/result.h"

namespace edgeprobe::hub {

using nlohmann::json;

const std::vector<std::string> kFilterKeys = {"device", "chip",    "backend", "model",     "sha",  "quant",
                                              "commit", "version", "kind",    "submitter", "from", "to"};
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

void add_bench_figures(const result::BenchReport& bench, RunRow& row) {
  std::set<std::string> backends;
  double best_prefill = 0;
  for (const result::TestResult& r : bench.results) {
    if (r.error || r.repetitions.empty()) continue;
    backends.insert(backend_of(r));
    const result::TestSummary s = summarize(r);
    const auto& roof = r.roofline;
    if (r.config.n_prompt > 0) {
      keep_best(row.prefill,
                {r.config.name(), s.prefill_tokens_per_s.median,
                 roof ? efficiency(s.prefill_tokens_per_s.median, roof->prefill_ceiling_tokens_per_s)
                      : std::nullopt});
      if (row.prefill && row.prefill->tokens_per_s > best_prefill) {
        best_prefill = row.prefill->tokens_per_s;
        row.ttft_ms = s.ttft_ms.median;
      }
    }
    if (r.config.n_gen > 0)
      keep_best(row.decode,
                {r.config.name(), s.decode_tokens_per_s.median,
                 roof ? efficiency(s.decode_tokens_per_s.median, roof->decode_ceiling_tokens_per_s)
                      : std::nullopt});
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
  const result::Provenance p =
      result::provenance_from_json(run.document().value("provenance", json::object()));
  row.device_id = p.device.id;
  row.device_name = first_nonempty({&p.device.board, &p.device.soc, &p.device.cpu_model});
  row.chip = first_nonempty({&p.device.soc, &p.device.cpu_model});
  if (!p.models.empty()) {
    const result::ModelIdentity& m = p.models[0];
    row.model_name = m.name.empty() ? std::filesystem::path(m.path).filename().string() : m.name;
    row.model_sha = m.sha256;
    row.quant = m.dominant_type;
  }
  row.llama_commit = p.engine.commit;
  row.edgeprobe_version = p.edgeprobe_version;
  if (submission.is_object()) {
    row.submitter = submission.value("submitter", "");
    row.ceilings_check = submission.value("ceilings", "");
  }
  if (const result::BenchReport* bench = run.bench()) add_bench_figures(*bench, row);
  return row;
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

json figure_json(const std::optional<PhaseFigure>& f) {
  if (!f) return nullptr;
  return {{"test", f->test},
          {"tokens_per_s", f->tokens_per_s},
          {"efficiency", f->efficiency ? json(*f->efficiency) : json(nullptr)}};
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
          {"ttft_ms", r.ttft_ms ? json(*r.ttft_ms) : json(nullptr)}};
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
