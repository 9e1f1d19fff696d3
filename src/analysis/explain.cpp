#include "analysis/explain.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include "core/error.h"
#include "core/stats.h"
#include "core/text.h"
#include "analysis/contamination.h"
#include "analysis/explain_internal.h"
#include "result/migrate.h"

namespace edgeprobe::analysis {

using nlohmann::json;

namespace explain_detail {

std::vector<PhaseSample> phase_samples(const json& bench, const std::string& phase) {
  std::vector<PhaseSample> out;
  const json& results = at(bench, "/results");
  if (!results.is_array()) return out;
  const std::string key = phase + "_tokens_per_s";
  for (const json& r : results) {
    if (!r.is_object() || r.value("status", "ok") != "ok") continue;
    if (phase == "load") {
      const double cold_ms = number_at(r, "/load/cold_ms");
      if (cold_ms > 0) out.push_back({r.value("test", std::string("?")), 0, 1000 / cold_ms, &r});
      continue;
    }
    const bool has_phase = number_at(r, phase == "prefill" ? "/config/n_prompt" : "/config/n_gen") > 0;
    if (!has_phase) continue;
    std::vector<double> values;
    for (const json& rep : at(r, "/repetitions").is_array() ? at(r, "/repetitions") : json::array())
      if (rep.is_object() && rep.contains(key) && rep[key].is_number() && rep[key].get<double>() > 0)
        values.push_back(rep[key].get<double>());
    if (values.empty()) continue;
    out.push_back({r.value("test", std::string("?")), static_cast<int>(number_at(r, "/config/n_threads")),
                   stats::quantile(values, 0.5), &r});
  }
  return out;
}

}  // namespace explain_detail

namespace {

using namespace explain_detail;

// Findings whose factor is a cause of slowness that a change removes. Identity and
// measurement findings void or qualify a comparison, ceiling.* restates the efficiency
// that the unexplained factor already holds, memory and log findings name no speed.
bool is_cause(const std::string& id) {
  for (const char* prefix : {"kernel.isa_fallback", "precision.weights_expanded", "threads.", "power.", "throttle.",
                             "thermal.", "contention.", "load.", "gpu."})
    if (id.starts_with(prefix)) return true;
  return false;
}

// The same test on both sides when there is one (pp128 with pp128), else each side's first.
std::optional<std::pair<PhaseSample, PhaseSample>> matching_samples(const ExplainSide& a, const ExplainSide& b,
                                                                     const std::string& phase) {
  const auto sa = phase_samples(a.bench, phase), sb = phase_samples(b.bench, phase);
  if (sa.empty() || sb.empty()) return std::nullopt;
  for (const auto& x : sa)
    for (const auto& y : sb)
      if (x.test == y.test) return std::pair{x, y};
  return std::pair{sa.front(), sb.front()};
}

// One side's causes for a phase, as factors of B/A (a cause on B makes B/A smaller, one on
// A larger), and the causes it names without a factor.
void side_factors(const ExplainSide& side, const std::string& name, const std::string& phase,
                  std::vector<ExplainFactor>& factors, std::vector<std::string>& unmeasured) {
  for (const result::Finding& f : side.findings) {
    const std::string& id = f.id;
    // A cold page cache is "info" to doctor (expected on a first run) but a cause of a
    // slower first load all the same.
    if (!is_cause(id) || (f.severity == result::Severity::kInfo && id != "load.cold_cache")) continue;
    if (f.affects.find(phase) == std::string::npos) continue;
    ExplainFactor factor;
    factor.id = id;
    factor.side = name;
    factor.title = one_line(f.title, 200);
    for (const std::string& line : f.evidence) factor.evidence.push_back(one_line(line, 300));
    factor.fix = one_line(f.fix, 300);
    // The phase's own pairs where doctor measured the fix; else the finding's factor,
    // which is the whole reference turn's (or an estimate from telemetry).
    const json& phase_pairs = at(f.data, ("/measured/phases/" + phase).c_str());
    double speedup = 0;
    const bool has_speedup = f.speedup && *f.speedup > 0;
    if (has_speedup && phase_pairs.is_object() && number_at(phase_pairs, "/median_ratio") > 0) {
      speedup = number_at(phase_pairs, "/median_ratio");
      factor.basis = "measured";
      factor.detail = fmt::format("{}: median of {} interleaved pairs x{:.2f} [{:.2f}, {:.2f}] in {} tokens/s", name,
                                  static_cast<int>(number_at(phase_pairs, "/pairs")), speedup, number_at(phase_pairs, "/low"),
                                  number_at(phase_pairs, "/high"), phase);
    } else if (has_speedup) {
      speedup = *f.speedup;
      factor.basis = result::speedup_basis_word(f).empty() ? "estimated" : result::speedup_basis_word(f);
      factor.detail = fmt::format("{}: {}", name, one_line(f.speedup_basis.empty() ? factor.basis : f.speedup_basis, 300));
    } else {
      const std::string why = f.speedup_basis.empty() ? "no factor" : f.speedup_basis;
      unmeasured.push_back(fmt::format("{} {}: {} ({})", name, id, factor.title, one_line(why, 200)));
      continue;
    }
    if (speedup <= 1) {
      unmeasured.push_back(fmt::format("{} {}: {} (its fix measured no gain in {}: x{:.2f})", name, id, factor.title, phase, speedup));
      continue;
    }
    if (at(f.data, "/emulated").is_boolean() || !side.emulated.empty())
      factor.detail += " (from an emulated run, not any device's speed)";
    factor.factor = name == "B" ? 1 / speedup : speedup;
    factors.push_back(std::move(factor));
  }
}

// The cause `id` of one side among the factors (const or not), when it has one.
template <typename Factors>
auto* factor_on(Factors& factors, const std::string& side, const std::string& id) {
  decltype(&factors.front()) found = nullptr;
  for (auto& f : factors)
    if (!found && f.side == side && f.id == id) found = &f;
  return found;
}

// Doctor measures the variant with the threads as configured, and the threads with the
// better variant loaded, as the seed's table applies fixes. With more threads than CPUs
// the two interact: the threads wait for a CPU at every barrier, time that faster kernels
// do not shorten, so the variant gains less while oversubscribed than alone. Each fault's
// factor is its cost alone (its gain with the other fixed), and what they cost together
// beyond that is a factor of its own. Taking a token's time as kernel work plus that wait,
// with g_v the variant pairs' gain and g_t the thread pairs' (in units of the token with
// both fixed: 1 + wait = g_t, slow work + wait = g_v g_t), the variant alone gains the
// slow work W = g_v g_t - (g_t - 1), the threads alone g_t (their pairs), and the overlap
// is g_v / W; the three multiply to g_v g_t, what the two pairs measured.
// Returns the overlap's factor when the pairs were measured that way.
std::optional<ExplainFactor> split_variant_and_oversubscription(std::vector<ExplainFactor>& factors,
                                                                const ExplainSide& side, const std::string& name) {
  ExplainFactor* variant = factor_on(factors, name, "kernel.isa_fallback");
  ExplainFactor* threads = factor_on(factors, name, "threads.oversubscribed");
  if (!variant || !threads || variant->basis != "measured" || threads->basis != "measured") return std::nullopt;
  bool after_variant = false;
  for (const result::Finding& f : side.findings)
    if (f.id == threads->id)
      for (const json& what : at(f.data, "/measured/after").is_array() ? at(f.data, "/measured/after") : json::array())
        after_variant = after_variant || what == "cpu variant";
  if (!after_variant) return std::nullopt;
  const auto gain = [&](double factor) { return name == "B" ? 1 / factor : factor; };
  const auto as_factor = [&](double g) { return name == "B" ? 1 / g : g; };
  const double g_v = gain(variant->factor), g_t = gain(threads->factor);
  const double alone = g_v * g_t - (g_t - 1);
  variant->detail += fmt::format(
      "; that is with the threads oversubscribed: alone (threads fixed) x{:.2f}, from those pairs and the thread pairs, "
      "with the threads' wait for a CPU taken as time that faster kernels do not shorten",
      alone);
  threads->detail += "; measured with the better variant loaded: its cost alone";
  variant->interaction = ExplainFactor::Interaction{threads->id, as_factor(g_v), as_factor(alone)};
  threads->interaction = ExplainFactor::Interaction{variant->id, as_factor(g_v * g_t / alone), as_factor(g_t)};
  variant->factor = as_factor(alone);
  variant->basis = "measured and modelled";
  ExplainFactor overlap{"interaction", name, "", as_factor(g_v / alone), "modelled", "", {}, "", std::nullopt};
  overlap.title = "kernel.isa_fallback and threads.oversubscribed together cost less than each alone";
  overlap.detail = fmt::format(
      "{}: the variant gains x{:.2f} with the threads oversubscribed and x{:.2f} alone: the threads' wait at each barrier "
      "is a smaller share of a slow token. With this factor the two causes multiply to what their pairs measured together "
      "(x{:.2f}); it has no fix of its own",
      name, g_v, alone, g_v * g_t);
  overlap.evidence = {fmt::format("variant pairs (threads as configured) x{:.2f}; thread pairs (variant fixed) x{:.2f}", g_v, g_t)};
  return overlap;
}


// Load has a ceiling only where the probe read the model file: without one the phase is
// left out rather than the explanation refused.
struct MissingLoadCeiling {
  std::string label;
};

// The binding ceiling of one side for this phase, in tokens/s; 0 when the run has none.
struct Ceiling {
  double tokens_per_s = 0;
  std::string bound;   // "bandwidth", "kernel", "compute"
  int threads = 0;     // the probe's thread count (the device's)
  std::string device;  // "" the CPU's ceilings, else the GPU that held the model ("Vulkan0")
  std::string text;
};
Ceiling ceiling_of(const ExplainSide& side, const PhaseSample& sample, const std::string& phase) {
  Ceiling c;
  const json& roof = at(*sample.result, "/roofline");
  c.device = text_at(roof, "/ceiling_device");
  if (c.device.empty()) c.threads = static_cast<int>(number_at(side.bench, "/provenance/ceilings/threads"));
  if (phase == "decode") {
    c.tokens_per_s = number_at(roof, "/decode_ceiling_tokens_per_s");
    c.bound = text_at(roof, "/decode_bound");
  } else if (phase == "load") {
    const double ms = number_at(roof, "/load_ceiling_ms");
    c.tokens_per_s = ms > 0 ? 1000 / ms : 0;
    c.bound = "storage";
    c.text = fmt::format("{:.4g} ms to read the file ({})", ms, text_at(roof, "/load_ceiling_basis"));
    return c;
  } else {
    c.tokens_per_s = number_at(roof, "/prefill_ceiling_tokens_per_s");
    c.bound = "compute";
  }
  c.text = fmt::format("{:.4g} tok/s ({}-bound{}{})", c.tokens_per_s, c.bound.empty() ? "?" : c.bound,
                       c.threads > 0 ? fmt::format(", {} thread{}", c.threads, c.threads == 1 ? "" : "s") : "",
                       c.device.empty() ? "" : ", on " + c.device);
  return c;
}

// The ceiling doctor's best-variant children had for this phase (their bench probed the
// device with that variant): the device's ceiling without the fallback. 0 when none.
double best_variant_ceiling(const ExplainSide& side, const PhaseSample& sample, const std::string& phase) {
  for (const result::Finding& f : side.findings)
    if (f.id == "kernel.isa_fallback")
      if (const double c = number_at(f.data, ("/measured/b_ceilings/" + phase + "_ceiling_tokens_per_s").c_str()); c > 0) return c;
  // A plain bench run that fell back probed the device with the best variant too.
  return number_at(*sample.result, ("/roofline/best_variant/" + phase + "_ceiling_tokens_per_s").c_str());
}

// Ceilings from the kernels (prefill always, decode when the kernels bind) were measured
// with the variant that loaded: a side that fell back has its fallback in its ceiling.
bool ceiling_from_kernels(const Ceiling& c) { return c.bound != "bandwidth" && c.bound != "storage"; }

ExplainFactor hardware_factor(const ExplainSide& a, const ExplainSide& b, const PhaseSample& sa, const PhaseSample& sb,
                              const std::string& phase, const std::vector<ExplainFactor>& causes, bool same_device,
                              std::vector<std::string>& notes) {
  ExplainFactor hw{"hardware", "", "", 1, "measured", "", {}, "", std::nullopt};
  const Ceiling ca = ceiling_of(a, sa, phase), cb = ceiling_of(b, sb, phase);
  // A run on the device's GPU and one on its CPU ran on different hardware of one machine.
  same_device = same_device && ca.device == cb.device;
  // One device with as many usable CPUs on both sides is the same hardware: a ratio of
  // its ceilings from two probe runs would be the probe's noise, not hardware.
  const int cpus_a = static_cast<int>(number_at(a.bench, "/provenance/usable_cpus"));
  const int cpus_b = static_cast<int>(number_at(b.bench, "/provenance/usable_cpus"));
  if (same_device && cpus_a == cpus_b) {
    hw.title = "the same device on both sides";
    hw.basis = "same device";
    hw.detail = fmt::format("both ran on {} with {} usable CPU(s): the hardware is the same, so its factor is 1",
                            a.device_id.empty() ? "one device" : a.device_id, cpus_a > 0 ? std::to_string(cpus_a) : "as many");
    return hw;
  }
  if (ca.tokens_per_s <= 0 || cb.tokens_per_s <= 0) {
    const ExplainSide& missing = ca.tokens_per_s > 0 ? b : a;
    if (phase == "load") throw MissingLoadCeiling{missing.label};
    throw_bad_input("{} has no {} ceiling (a bench with --ceilings off, under emulation, or from before ceilings): run "
                    "'edgeprobe probe -m MODEL' on that device and bench it again, or give its doctor result",
                    one_line(missing.label), phase);
  }
  double ceil_a = ca.tokens_per_s, ceil_b = cb.tokens_per_s;
  // A side that fell back to a lower variant measured its kernel ceiling with that
  // variant. Its device's ceiling is that times the variant's measured factor, so the
  // fallback is counted once, as software, not also as hardware.
  auto lift = [&](const ExplainSide& side, const PhaseSample& sample, const std::string& name, const Ceiling& c, double& ceiling) {
    if (!side.variant_fallback || !ceiling_from_kernels(c) || !c.device.empty()) return;  // a GPU's are not the CPU variant's
    if (const double best = best_variant_ceiling(side, sample, phase); best > 0) {
      notes.push_back(fmt::format("{}'s {} ceiling is the best variant's ('{}', {:.4g} tok/s, probed with that variant on that "
                                  "device), not the one that loaded ('{}', {:.4g} tok/s): the fallback counts once, as software",
                                  name, phase, side.best_variant, best, side.cpu_variant, ceiling));
      ceiling = best;
    } else if (const ExplainFactor* v = factor_on(causes, name, "kernel.isa_fallback")) {
      const double speedup = name == "B" ? 1 / v->factor : v->factor;
      ceiling *= speedup;
      notes.push_back(fmt::format("{}'s {} ceiling was probed with the variant that loaded ('{}'); its device's ceiling is "
                                  "that x{:.2f} (the variant factor), so the fallback counts once, as software",
                                  name, phase, side.cpu_variant, speedup));
    } else {
      notes.push_back(fmt::format("{}'s {} ceiling was probed with the fallback variant '{}' and no run measured the better "
                                  "one ('{}'): the hardware factor holds the fallback's cost; 'edgeprobe doctor' on that "
                                  "device measures it apart",
                                  name, phase, side.cpu_variant, side.best_variant));
    }
  };
  lift(a, sa, "A", ca, ceil_a);
  lift(b, sb, "B", cb, ceil_b);
  // A run that beat its own ceiling by more than the probe's noise had its ceiling probed
  // while the machine was slower: the factor stands, with the reason to doubt it.
  for (const auto& [name, sample] : {std::pair{"A", &sa}, std::pair{"B", &sb}}) {
    const json& roof = at(*sample->result, "/roofline");
    if (at(roof, ("/" + phase + "_ceiling_suspect").c_str()) != true) continue;
    hw.basis = "measured, ceiling suspect";
    notes.push_back(fmt::format("{}'s {} ran at x{:.2f} its ceiling, so the ceiling was probed while that machine was slower: "
                                "the hardware factor is in doubt until it is measured again ({})",
                                name, phase, number_at(roof, ("/" + phase + "_over_ceiling").c_str()),
                                one_line(text_at(roof, "/remeasure_command"), 160)));
  }
  hw.factor = ceil_b / ceil_a;
  hw.title = fmt::format("the devices' {} ceilings for this model", phase);
  hw.detail = fmt::format("B's ceiling {} over A's {}: the gap if both ran at the same efficiency", cb.text, ca.text);
  hw.evidence = {fmt::format("A ({}): {}", one_line(a.device_name, 120), ca.text),
                 fmt::format("B ({}): {}", one_line(b.device_name, 120), cb.text)};
  return hw;
}

// `changed`: on one device, the settings that differ ("threads: 2 → 1; ..."), "" else.
PhaseExplanation explain_phase(const ExplainSide& a, const ExplainSide& b, const std::string& phase,
                               const PhaseSample& sa, const PhaseSample& sb, bool same_device, const std::string& changed) {
  PhaseExplanation p;
  p.phase = phase;
  p.test_a = sa.test;
  p.test_b = sb.test;
  p.threads_a = sa.threads;
  p.threads_b = sb.threads;
  p.a_tokens_per_s = sa.median;
  p.b_tokens_per_s = sb.median;
  p.ratio = sb.median / sa.median;

  std::vector<ExplainFactor> causes;
  side_factors(b, "B", phase, causes, p.unmeasured);
  side_factors(a, "A", phase, causes, p.unmeasured);
  std::vector<ExplainFactor> overlaps;
  for (const auto& [side, name] : {std::pair{&b, "B"}, std::pair{&a, "A"}})
    if (auto overlap = split_variant_and_oversubscription(causes, *side, name)) overlaps.push_back(std::move(*overlap));
  // What each run's own evidence estimates, where doctor measured nothing of it.
  evidence_factors(b, "B", phase, sb, causes, p.unmeasured);
  evidence_factors(a, "A", phase, sa, causes, p.unmeasured);
  // Largest effect first, whichever side it is on.
  std::stable_sort(causes.begin(), causes.end(), [](const ExplainFactor& x, const ExplainFactor& y) {
    return std::abs(std::log(x.factor)) > std::abs(std::log(y.factor));
  });

  p.factors.push_back(hardware_factor(a, b, sa, sb, phase, causes, same_device, p.notes));
  double product = p.factors.front().factor;
  for (auto& c : causes) {
    product *= c.factor;
    p.factors.push_back(std::move(c));
  }
  for (auto& o : overlaps) {
    product *= o.factor;
    p.factors.push_back(std::move(o));
  }
  ExplainFactor rest{"unexplained", "", "what the factors above do not account for", p.ratio / product, "residual", "", {}, "", std::nullopt};
  rest.detail = "measured B/A over the product of the other factors: differences in efficiency nothing here names "
                "(per-token work beyond the ceilings, noise between the two runs)";
  if (same_device)
    rest.detail += changed.empty() ? "; on one device with no setting that differs, this is the runs' noise"
                                   : "; on one device this is what changed between the runs: " + changed;
  p.factors.push_back(std::move(rest));
  p.product = 1;
  for (const auto& f : p.factors) p.product *= f.factor;

  // A median measured while the machine did something else is discounted: said next to the
  // factors, and first among what would close an account that does not.
  std::vector<std::string> contaminated;
  for (const auto& [side, sample, name] : {std::tuple{&a, &sa, "A"}, std::tuple{&b, &sb, "B"}})
    if (const auto flags = contamination(*sample->result, at(side->bench, "/provenance")); !flags.empty() && phase != "load") {
      p.notes.push_back(fmt::format("{}'s {} is contaminated ({}): its median is discounted, and so is every factor read from it",
                                    name, one_line(sample->test, 60), fmt::join(flags, "; ")));
      contaminated.push_back(fmt::format("run {}'s {} again on a quiet machine (it is contaminated)", name, one_line(sample->test, 60)));
    }
  fix_table(p);
  judge_account(p, a, b, sa, sb);
  if (!p.closes) p.closing_commands.insert(p.closing_commands.begin(), contaminated.begin(), contaminated.end());
  return p;
}

void check_same_model(const ExplainSide& a, const ExplainSide& b, const ExplainOptions& options) {
  const json& ma = at(a.bench, "/provenance/models/0");
  const json& mb = at(b.bench, "/provenance/models/0");
  if (!ma.is_object() || !mb.is_object())
    throw_bad_input("{} has no provenance.models: is it an edgeprobe bench or doctor result?", one_line((ma.is_object() ? b : a).label));
  const std::string sha_a = text_at(ma, "/sha256"), sha_b = text_at(mb, "/sha256");
  if (!options.same_shape) {
    if (sha_a.empty() || sha_b.empty())
      throw_bad_input("{} names no model SHA-256, so the two runs cannot be shown to share a file: pass --same-shape to "
                      "compare by architecture, quantisation and size",
                      one_line((sha_a.empty() ? a : b).label));
    if (sha_a != sha_b)
      throw_bad_input("A and B ran different model files (sha256 {}… vs {}…): explain compares one model; pass "
                      "--same-shape for two files of the same architecture, quantisation and size",
                      sha_a.substr(0, 12), sha_b.substr(0, 12));
    return;
  }
  for (const char* field : {"/architecture", "/quant", "/n_params"}) {
    const json &x = at(ma, field), &y = at(mb, field);
    if (x != y)
      throw_bad_input("A and B ran models of another shape ({} {} vs {}): --same-shape needs one architecture, "
                      "quantisation and size",
                      field + 1, one_line(x.dump(), 60), one_line(y.dump(), 60));
  }
}

json factor_json(const ExplainFactor& f) {
  return {{"id", f.id},         {"side", f.side.empty() ? json(nullptr) : json(f.side)},
          {"title", f.title},   {"factor", f.factor},
          {"basis", f.basis},   {"detail", f.detail},
          {"evidence", f.evidence}, {"fix", f.fix.empty() ? json(nullptr) : json(f.fix)},
          {"interaction", f.interaction ? json{{"with", f.interaction->with},
                                               {"fixed_first", f.interaction->fixed_first},
                                               {"fixed_second", f.interaction->fixed_second}}
                                        : json(nullptr)}};
}

json side_json(const ExplainSide& s) {
  return {{"label", s.label},
          {"kind", s.kind},
          {"device_id", s.device_id},
          {"device", s.device_name},
          {"cpu_variant", s.cpu_variant},
          {"best_variant", s.best_variant.empty() ? json(nullptr) : json(s.best_variant)},
          {"emulated", s.emulated.empty() ? json(nullptr) : json(s.emulated)}};
}

}  // namespace

ExplainSide explain_side(const json& document, const std::string& label) {
  ExplainSide s;
  s.label = label;
  s.kind = result::document_kind(document);
  if (s.kind == "doctor") {
    const result::DoctorResult doctor = result::doctor_result_from_json(document);
    const auto* report = std::get_if<result::DoctorReport>(&doctor);
    if (!report)
      throw_bad_input("{}: a doctor --tune result keeps no run of the model; explain takes a bench or doctor result",
                      one_line(label));
    s.bench = report->primary ? result::to_json(*report->primary) : json(nullptr);
    s.findings = report->findings;
    s.emulated = report->emulated;
  } else if (s.kind == "bench") {
    s.bench = document;
  } else {
    throw_bad_input("{}: explain takes a bench or doctor result, and this is {}", one_line(label),
                    s.kind.empty() ? "not an edgeprobe result" : "a " + s.kind + " result");
  }
  const json& prov = at(s.bench, "/provenance");
  if (!prov.is_object()) throw_bad_input("{}: the result has no provenance: is it an edgeprobe result?", one_line(label));
  s.device_id = text_at(prov, "/device/id");
  const std::string cpu = text_at(prov, "/device/cpu_model"), host = text_at(prov, "/device/hostname");
  s.device_name = host.empty() ? (cpu.empty() ? "unknown device" : cpu) : fmt::format("{} ({})", cpu.empty() ? "?" : cpu, host);
  s.cpu_variant = text_at(prov, "/engine/cpu_variant");
  s.best_variant = text_at(prov, "/isa_gap/best_variant");
  s.variant_fallback = at(prov, "/isa_gap/fallback") == true;
  if (s.emulated.empty() && at(prov, "/emulated") == true) {
    s.emulated = text_at(prov, "/cpu_features/emulation_sign");
    if (s.emulated.empty()) s.emulated = "emulated";
  }
  return s;
}

Explanation explain(const ExplainSide& a, const ExplainSide& b, const ExplainOptions& options) {
  check_same_model(a, b, options);
  Explanation e;
  e.a = a;
  e.b = b;
  e.same_device = !a.device_id.empty() && a.device_id == b.device_id;
  e.differences = setting_differences(a.bench, b.bench);
  std::string changed;
  for (const auto& d : e.differences) changed += (changed.empty() ? "" : "; ") + one_line(d.text(), 120);
  for (const char* phase : kExplainPhases) {
    const auto samples = matching_samples(a, b, phase);
    if (!samples) {
      e.notes.push_back(fmt::format("no {} to explain: {} has no {} test that completed", phase,
                                    phase_samples(a.bench, phase).empty() ? "A" : "B", phase));
      continue;
    }
    if (samples->first.test != samples->second.test && std::string(phase) != "load")
      e.notes.push_back(fmt::format("{}: A's {} against B's {} (no test of the same name on both sides)", phase,
                                    one_line(samples->first.test, 60), one_line(samples->second.test, 60)));
    try {
      e.phases.push_back(explain_phase(a, b, phase, samples->first, samples->second, e.same_device, changed));
    } catch (const MissingLoadCeiling& m) {
      e.notes.push_back(fmt::format("no load to explain: {} has no storage ceiling ('edgeprobe probe -m MODEL' on that "
                                    "device measures one)", one_line(m.label)));
    }
  }
  if (e.phases.empty())
    throw_bad_input("{} and {} share no measured phase: each needs a prefill or decode test that completed",
                    one_line(a.label), one_line(b.label));
  for (const ExplainSide* s : {&a, &b})
    if (!s->emulated.empty())
      e.notes.push_back(fmt::format("{} ran under emulation ({}): its timings are the emulator's, not any device's",
                                    s == &a ? "A" : "B", one_line(s->emulated, 120)));
  if (e.same_device)
    e.notes.push_back("A and B ran on the same device: the hardware is the same, and the gap is what changed between the runs");
  return e;
}

json to_json(const Explanation& e) {
  json phases = json::array();
  for (const auto& p : e.phases) {
    json factors = json::array(), steps = json::array();
    for (const auto& f : p.factors) factors.push_back(factor_json(f));
    for (const auto& s : p.steps)
      steps.push_back({{"label", s.label}, {"tokens_per_s", s.tokens_per_s}, {"fix", s.fix.empty() ? json(nullptr) : json(s.fix)}});
    phases.push_back({{"phase", p.phase},
                      {"test_a", p.test_a},
                      {"test_b", p.test_b},
                      {"threads_a", p.threads_a},
                      {"threads_b", p.threads_b},
                      {"a_tokens_per_s", p.a_tokens_per_s},
                      {"b_tokens_per_s", p.b_tokens_per_s},
                      {"ratio", p.ratio},
                      {"factors", factors},
                      {"product", p.product},
                      {"steps", steps},
                      {"hardware_line_tokens_per_s", p.hardware_line_tokens_per_s},
                      {"unmeasured", p.unmeasured},
                      {"closes", p.closes},
                      {"verdict", p.verdict.empty() ? json(nullptr) : json(p.verdict)},
                      {"chain_withheld", p.chain_withheld},
                      {"closing_commands", p.closing_commands},
                      {"notes", p.notes}});
  }
  json differences = json::array();
  for (const auto& d : e.differences)
    differences.push_back({{"label", d.label}, {"a", d.a}, {"b", d.b}, {"configuration", d.configuration}});
  return {{"kind", "explain"},
          {"schema_version", 1},
          {"a", side_json(e.a)},
          {"b", side_json(e.b)},
          {"same_device", e.same_device},
          {"differences", differences},
          {"phases", phases},
          {"notes", e.notes}};
}

}  // namespace edgeprobe::analysis
