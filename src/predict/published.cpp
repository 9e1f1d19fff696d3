#include "predict/published.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace edgeprobe::predict::published {
namespace {

bool is_gpu(const std::string& backend) { return backend != "cpu"; }

// The t fastest cores of the clusters (by max_ghz; cores without a clock last) in compute
// units: GHz summed when every core used has a clock, else the count of cores.
struct Units {
  double value = 0;
  std::string unit;  // "ghz" or "core"; "" = no clusters
  int cores = 0;
};
Units units_of(const Figures& f, int threads, bool force_core = false) {
  Units u;
  std::vector<std::optional<double>> cores;
  for (const auto& c : f.clusters)
    for (int i = 0; i < c.count; ++i) cores.push_back(c.max_ghz);
  if (cores.empty()) return u;
  std::stable_sort(cores.begin(), cores.end(),
                   [](const auto& a, const auto& b) { return a.value_or(-1) > b.value_or(-1); });
  const size_t n = threads > 0 ? std::min(cores.size(), static_cast<size_t>(threads)) : cores.size();
  bool clocks = !force_core;
  double ghz = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!cores[i])
      clocks = false;
    else
      ghz += *cores[i];
  }
  u.cores = static_cast<int>(n);
  u.unit = clocks ? "ghz" : "core";
  u.value = clocks ? ghz : static_cast<double>(n);
  return u;
}

// Keys from the most specific to the widest.
std::vector<std::string> chain(const std::string& prefix, const std::string& backend,
                               const std::string& cls) {
  std::vector<std::string> out;
  if (!cls.empty()) out.push_back(fmt::format("{}/{}/{}", prefix, backend, cls));
  out.push_back(fmt::format("{}/{}", prefix, backend));
  if (is_gpu(backend)) out.push_back(fmt::format("{}/gpu", prefix));
  return out;
}
std::vector<std::string> residual_chain(const Query& q) {
  auto out = chain(q.phase, q.backend, q.figures.device_class);
  out.push_back(q.phase);
  return out;
}

Pool& pool_at(std::vector<Pool>& pools, const std::string& key) {
  for (auto& p : pools)
    if (p.key == key) return p;
  pools.push_back(Pool{key, {}, {}, {}});
  return pools.back();
}
void add(std::vector<Pool>& pools, const std::vector<std::string>& keys, double value, const std::string& id,
         const std::string& device) {
  for (const auto& k : keys) {
    auto& p = pool_at(pools, k);
    p.values.push_back(value);
    p.ids.push_back(id);
    p.devices.push_back(device);
  }
}

// The most specific pool with enough entries, else the largest one there is.
const Pool* choose(const Calibration& c, const std::vector<std::string>& keys) {
  const Pool* largest = nullptr;
  for (const auto& k : keys) {
    const Pool* p = c.find(k);
    if (!p || p->values.empty()) continue;
    if (p->values.size() >= kMinPoolEntries) return p;
    if (!largest || p->values.size() > largest->values.size()) largest = p;
  }
  return largest;
}

std::string describe(const Pool& p, const char* unit) {
  return fmt::format("{} ({} fit entr{} on {} device(s), median {:.3g} {})", p.key, p.values.size(),
                     p.values.size() == 1 ? "y" : "ies", p.distinct_devices(), p.median(), unit);
}

// The point prediction, without its interval. *keys_used: the pools it took.
Answer point(const Calibration& c, const Query& q) {
  Answer a;
  const auto& f = q.figures;
  if (q.phase == "decode") {
    if (q.weight_bytes <= 0) {
      a.notes.push_back("decode unavailable: the bytes a token reads are unknown");
      return a;
    }
    if (f.bandwidth_gbs <= 0) {
      a.notes.push_back(
          "decode unavailable: no memory bandwidth figure for this device (give --bandwidth GB/s)");
      return a;
    }
    const Pool* bw = choose(c, chain("decode.bw", q.backend, f.device_class));
    if (!bw) {
      a.notes.push_back(
          fmt::format("decode unavailable: no fit entry of backend {} with a bandwidth figure", q.backend));
      return a;
    }
    double rate = bw->median() * f.bandwidth_gbs * 1e9;
    a.bound = "bandwidth";
    a.basis = fmt::format("decode: {:.0f} % of {:g} GB/s, the median share of {}", 100 * bw->median(),
                          f.bandwidth_gbs, describe(*bw, "of the bandwidth"));
    if (!is_gpu(q.backend)) {
      Units u = units_of(f, q.threads);
      const Pool* core = nullptr;
      if (!u.unit.empty()) {
        core = choose(c, chain(fmt::format("decode.core.{}", u.unit), "cpu", f.device_class));
        if (!core && u.unit == "ghz") {
          u = units_of(f, q.threads, true);
          core = choose(c, chain("decode.core.core", "cpu", f.device_class));
        }
      }
      if (!core) {
        a.notes.push_back(
            u.unit.empty()
                ? "no CPU clusters for this device: the thread count does not limit decode"
                : "no fit entry gives a per-core decode rate: the thread count does not limit decode");
      } else {
        // The cores' limit is in weights per second (dequantizing and multiplying each weight),
        // so a token's share of it is the model's parameters, not its bytes.
        const double limit = core->median() * 1e9 * u.value * q.weight_bytes / q.params;
        a.basis +=
            fmt::format("; at most {} core(s) x {:.3g} G weights/s per {} ({})", u.cores, core->median(),
                        u.unit == "ghz" ? "core.GHz" : "core", describe(*core, "G weights/s"));
        if (q.params > 0 && limit < rate) {
          rate = limit;
          a.bound = "cores";
        }
      }
    }
    a.value = rate / q.weight_bytes;
    return a;
  }
  // prefill
  if (q.params <= 0) {
    a.notes.push_back("prefill unavailable: the model's parameter count is unknown");
    return a;
  }
  const double flop = 2 * q.params;
  if (is_gpu(q.backend)) {
    if (f.gpu_cores <= 0) {
      a.notes.push_back("prefill unavailable: no GPU core count for this device");
      return a;
    }
    const Pool* p = choose(c, chain("prefill.gpu", q.backend, f.device_class));
    if (!p) {
      a.notes.push_back(
          fmt::format("prefill unavailable: no fit entry of backend {} with a GPU core count", q.backend));
      return a;
    }
    a.value = p->median() * 1e9 * f.gpu_cores / flop;
    a.basis = fmt::format("prefill: {} GPU cores x {:.3g} GFLOP/s per core, {}", f.gpu_cores, p->median(),
                          describe(*p, "GFLOP/s per GPU core"));
  } else {
    Units u = units_of(f, q.threads);
    if (u.unit.empty()) {
      a.notes.push_back("prefill unavailable: no CPU clusters for this device (give --cores)");
      return a;
    }
    const Pool* p = choose(c, chain(fmt::format("prefill.{}", u.unit), "cpu", f.device_class));
    if (!p && u.unit == "ghz") {
      u = units_of(f, q.threads, true);
      p = choose(c, chain("prefill.core", "cpu", f.device_class));
    }
    if (!p) {
      a.notes.push_back("prefill unavailable: no CPU fit entry to scale by");
      return a;
    }
    a.value = p->median() * 1e9 * u.value / flop;
    a.basis = fmt::format("prefill: {} core(s){} x {:.3g} GFLOP/s per {}, {}", u.cores,
                          u.unit == "ghz" ? fmt::format(" at {:.3g} GHz in all", u.value) : "", p->median(),
                          u.unit == "ghz" ? "core.GHz" : "core", describe(*p, "GFLOP/s"));
  }
  a.bound = "compute";
  return a;
}

double measured_share(const Query& q, double tokens_per_s) {
  return tokens_per_s * q.weight_bytes / (q.figures.bandwidth_gbs * 1e9);
}

}  // namespace

std::optional<double> bits_per_weight(std::string_view quant) {
  // What llama.cpp's quantizer plans for the llama-7b shape (model::planned_layout: weight
  // bytes x 8 / params, the output matrix and the mixed types' wider tensors included);
  // PublishedBitsPerWeight.MatchesTheQuantizersPlan holds the table to that plan. q4_k and
  // q5_k: llama-bench prints a Q4_K_M / Q5_K_M file as Q4_K / Q5_K.
  static const std::map<std::string, double, std::less<>> table = {
      {"f16", 16.0},    {"bf16", 16.0},   {"q8_0", 8.50},   {"q6_k", 6.56}, {"q5_k_m", 5.68}, {"q5_k", 5.68},
      {"q5_k_s", 5.52}, {"q5_0", 5.52},   {"q4_k_m", 4.84}, {"q4_k", 4.84}, {"q4_k_s", 4.58}, {"q4_0", 4.54},
      {"q3_k_l", 4.27}, {"q3_k_m", 3.91}, {"q3_k_s", 3.50}, {"q2_k", 3.01},
  };

  const auto it = table.find(quant);
  if (it == table.end()) return std::nullopt;
  return it->second;
}

int Figures::total_cores() const {
  int n = 0;
  for (const auto& c : clusters) n += c.count;
  return n;
}

Figures figures_of(const catalogue::Device& d) {
  Figures f;
  f.device_class = d.device_class;
  if (d.bandwidth_gbs && d.bandwidth_gbs->value) {
    f.bandwidth_gbs = *d.bandwidth_gbs->value;
    f.bandwidth_basis = fmt::format("read: {}", d.bandwidth_gbs->source.locator);
  } else if (d.derived_bandwidth_gbs) {
    f.bandwidth_gbs = d.derived_bandwidth_gbs->value;
    f.bandwidth_basis = fmt::format("derived: {}", d.derived_bandwidth_gbs->formula);
  }
  if (d.cpu) f.clusters = d.cpu->clusters;
  if (d.gpu && d.gpu->cores) f.gpu_cores = *d.gpu->cores;
  if (d.size_gb && d.size_gb->value) f.memory_gb = *d.size_gb->value;
  return f;
}

double Pool::quantile(double q) const {
  if (values.empty()) return 0;
  std::vector<double> v = values;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
}
double Pool::median() const { return quantile(0.5); }
size_t Pool::distinct_devices() const { return std::set<std::string>(devices.begin(), devices.end()).size(); }

const Pool* Calibration::find(const std::string& key) const {
  for (const auto& p : pools)
    if (p.key == key) return &p;
  return nullptr;
}
const Pool* Calibration::find_residual(const std::string& key) const {
  for (const auto& p : residuals)
    if (p.key == key) return &p;
  return nullptr;
}

std::optional<Query> query_of(const catalogue::Catalogue& cat, const catalogue::Measurement& m,
                              std::string* why) {
  auto fail = [&](std::string reason) -> std::optional<Query> {
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  const auto it = cat.devices.find(m.device);
  if (it == cat.devices.end()) return fail("device not in the catalogue");
  // The catalogue marks a mixture of experts in its notes ("mixture of experts", "MoE").
  if (m.notes.find("mixture of experts") != std::string::npos || m.notes.find("MoE") != std::string::npos)
    return fail("mixture of experts: the bytes and FLOPs of the active experts are not in the catalogue");
  Query q;
  q.phase = m.phase;
  q.backend = m.backend;
  q.figures = figures_of(it->second);
  q.threads = m.threads.value_or(0);
  q.params = m.model.params_b * 1e9;
  if (m.model.file_gib) {
    q.weight_bytes = *m.model.file_gib * 1073741824.0;
  } else if (const auto bpw = bits_per_weight(m.quant)) {
    q.weight_bytes = q.params * *bpw / 8;
  } else {
    return fail(fmt::format("no file size and no bits per weight known for quant '{}'", m.quant));
  }
  return q;
}

Calibration fit_efficiencies(const catalogue::Catalogue& cat, const std::string& exclude) {
  Calibration c;
  for (const auto& m : cat.measurements) {
    if (m.split != "fit" || m.device == exclude) continue;
    ++c.fit_entries;
    std::string why;
    const auto q = query_of(cat, m, &why);
    if (!q) {
      c.skipped.push_back(fmt::format("{}: {}", m.id, why));
      continue;
    }
    const auto& f = q->figures;
    if (q->phase == "decode") {
      const double weights_per_s = m.tokens_per_s * q->params;
      const int total = f.total_cores();
      const bool cpu = !is_gpu(q->backend);
      if (cpu && total > 0 && q->threads > 0 && q->threads < total) {
        // Fewer threads than cores: the weights per second the cores used got through (per
        // core.GHz and per core). Weights, not bytes: at one thread Llama-2-7B q4_0 and q2_k
        // differ 1.5x in weights/s but 2.2-2.7x in bytes/s on the M2 Ultra and the Pi 5.
        const Units u = units_of(f, q->threads);
        if (u.unit == "ghz")
          add(c.pools, chain("decode.core.ghz", "cpu", f.device_class), weights_per_s / 1e9 / u.value, m.id,
              m.device);
        const Units n = units_of(f, q->threads, true);
        add(c.pools, chain("decode.core.core", "cpu", f.device_class), weights_per_s / 1e9 / n.value, m.id,
            m.device);
      } else if (f.bandwidth_gbs > 0) {
        add(c.pools, chain("decode.bw", q->backend, f.device_class), measured_share(*q, m.tokens_per_s), m.id,
            m.device);
      } else {
        c.skipped.push_back(fmt::format("{}: decode on a device without a bandwidth figure", m.id));
      }
    } else {
      const double gflop_per_s = m.tokens_per_s * 2 * q->params / 1e9;
      if (is_gpu(q->backend)) {
        if (f.gpu_cores > 0)
          add(c.pools, chain("prefill.gpu", q->backend, f.device_class), gflop_per_s / f.gpu_cores, m.id,
              m.device);
        else
          c.skipped.push_back(fmt::format("{}: GPU prefill on a device without a GPU core count", m.id));
      } else {
        const Units u = units_of(f, q->threads);
        if (u.unit.empty()) {
          c.skipped.push_back(fmt::format("{}: CPU prefill on a device without CPU clusters", m.id));
          continue;
        }
        if (u.unit == "ghz")
          add(c.pools, chain("prefill.ghz", "cpu", f.device_class), gflop_per_s / u.value, m.id, m.device);
        const Units n = units_of(f, q->threads, true);
        add(c.pools, chain("prefill.core", "cpu", f.device_class), gflop_per_s / n.value, m.id, m.device);
      }
    }
  }
  return c;
}

Calibration fit(const catalogue::Catalogue& cat, const std::string& exclude) {
  Calibration c = fit_efficiencies(cat, exclude);
  std::set<std::string> devices;
  for (const auto& m : cat.measurements)
    if (m.split == "fit" && m.device != exclude) devices.insert(m.device);
  for (const auto& d : devices) {
    const Calibration without = fit_efficiencies(cat, exclude.empty() ? d : exclude);
    // With exclude set as well, leave both out: refit without d among the rest.
    Calibration both;
    const Calibration* use = &without;
    if (!exclude.empty()) {
      catalogue::Catalogue rest = cat;
      std::erase_if(rest.measurements, [&](const auto& m) { return m.device == exclude; });
      both = fit_efficiencies(rest, d);
      use = &both;
    }
    for (const auto& m : cat.measurements) {
      if (m.split != "fit" || m.device != d) continue;
      const auto q = query_of(cat, m);
      if (!q) continue;
      const Answer a = point(*use, *q);
      if (a.value <= 0) continue;
      add(c.residuals, residual_chain(*q), m.tokens_per_s / a.value, m.id, m.device);
    }
  }
  return c;
}

Answer predict(const Calibration& c, const Query& q) {
  Answer a = point(c, q);
  if (a.value <= 0) return a;
  const auto keys = residual_chain(q);
  const Pool* first = c.find_residual(keys.front());
  const Pool* use = nullptr;
  for (const auto& k : keys) {
    const Pool* p = c.find_residual(k);
    if (p && p->values.size() >= kThinEntries) {
      use = p;
      break;
    }
  }
  if (!use) {  // no pool is wide enough: the widest there is
    for (auto it = keys.rbegin(); it != keys.rend() && !use; ++it) use = c.find_residual(*it);
  }
  const size_t first_n = first ? first->values.size() : 0;
  a.thin = first_n < kThinEntries;
  if (!use) {
    a.notes.push_back("no interval: no fit entry of this phase could be predicted with its device left out");
    a.low = a.high = a.value;
    a.thin = true;
    return a;
  }
  double low = std::min(1.0, use->quantile(0.1)), high = std::max(1.0, use->quantile(0.9));
  a.low = a.value * low;
  a.high = a.value * high;
  a.basis += fmt::format(
      "; interval: 10th-90th percentile of measured / predicted over {} fit entries of {} on {} device(s), "
      "each predicted with its own device left out of the fit",
      use->values.size(), use->key, use->distinct_devices());
  if (a.thin)
    a.notes.push_back(fmt::format(
        "thin evidence: {} fit entr{} of {} (fewer than {}); the interval is that of the wider pool {}",
        first_n, first_n == 1 ? "y" : "ies", keys.front(), kThinEntries, use->key));
  return a;
}

}  // namespace edgeprobe::predict::published
