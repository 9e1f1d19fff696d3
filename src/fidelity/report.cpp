#include "fidelity/report.h"

#include <fmt/format.h>

#include <cmath>
#include <ostream>

#include "core/error.h"

namespace edgeprobe::fidelity {
namespace {

// Six decimals, or three significant digits in exponent form below 1e-4 (a CPU variant's
// KLD is 1e-9, not 0.000000).
std::string num(double v) {
  return std::fabs(v) < 1e-4 && v != 0 ? fmt::format("{:.3e}", v) : fmt::format("{:.6f}", v);
}

nlohmann::json estimate(const Estimate& e, double scale = 1) {
  return {{"value", e.value * scale}, {"err", e.err * scale}};
}

}  // namespace

nlohmann::json to_json(const Report& r) {
  nlohmann::json j = {{"kind", "fidelity"},
                      {"schema", kReportSchema},
                      {"model", r.model},
                      {"reference", r.reference},
                      {"text", r.text},
                      {"engine", r.engine},
                      {"settings",
                       {{"n_ctx", r.settings.n_ctx},
                        {"n_chunks", r.settings.n_chunks},
                        {"first_scored", r.settings.first()},
                        {"scored_per_chunk", r.settings.scored_per_chunk()},
                        {"threads", r.n_threads}}},
                      {"seconds", r.seconds},
                      {"timings",
                       {{"decode_model_s", r.timings.decode_model},
                        {"decode_reference_s", r.timings.decode_ref},
                        {"score_s", r.timings.score}}}};
  if (!r.saved_reference.empty()) {
    j["saved_reference"] = {{"path", r.saved_reference}, {"bytes", r.saved_bytes}, {"top_k", r.top_k}};
    return j;
  }
  const auto& s = r.summary;
  j["positions"] = s.positions;
  j["kld"] = {{"mean", s.kld.value}, {"err", s.kld.err}, {"median", s.kld_median},
              {"p99", s.kld_p99},    {"max", s.kld_max}, {"lower_bound", r.kld_lower_bound}};
  if (r.kld_lower_bound) {
    j["kld"]["reference_rest_mass_mean"] = r.rest_mass_mean;
    j["kld"]["samples"] = r.samples;
    if (r.samples > 0) j["kld"]["sampled_estimate"] = estimate(s.kld_sampled);
  }
  j["top1_agreement_percent"] = estimate(s.same_top, 100);
  j["delta_p_percent"] = estimate(s.delta_p, 100);
  j["ln_ppl_ratio"] = estimate(s.ln_ppl_ratio);
  j["ppl"] = estimate(s.ppl);
  j["ppl_reference"] = estimate(s.ppl_ref);
  if (const auto& c = r.quantization_check) {
    j["quantization_check"] = {
        {"quant", c->quant},
        {"path", c->path},
        {"kld", {{"mean", c->summary.kld.value}, {"err", c->summary.kld.err}}},
        {"top1_agreement_percent", estimate(c->summary.same_top, 100)},
        {"kld_ratio", c->summary.kld.value > 0 ? s.kld.value / c->summary.kld.value : 0.0},
        {"verdict", quantization_verdict(s, c->summary)}};
  }
  return j;
}

void write_report(const Report& r, const std::string& format, std::ostream& out) {
  if (format == "json") {
    out << to_json(r).dump(2) << "\n";
    return;
  }
  if (format != "md") throw_bad_input("fidelity writes md or json, not {}", format);
  out << "# Fidelity\n\n";
  out << fmt::format("- model: {} ({})\n", r.model.value("path", ""), r.model.value("description", ""));
  const std::string ref_kind = r.reference.value("kind", "model");
  if (r.saved_reference.empty())
    out << fmt::format("- reference: {} ({}{})\n", r.reference.value("path", ""),
                       ref_kind == "stored" ? "stored, top-" + std::to_string(r.top_k) + " of " : "",
                       r.reference.value("description", ""));
  out << fmt::format("- text: {} ({} tokens used)\n", r.text.value("path", ""),
                     r.text.value("tokens_used", 0));
  out << fmt::format("- {} chunks of {} tokens, positions {}..{} of each scored, {} threads, {:.1f} s\n",
                     r.settings.n_chunks, r.settings.n_ctx, r.settings.first(), r.settings.n_ctx - 2,
                     r.n_threads, r.seconds);
  if (!r.saved_reference.empty()) {
    out << fmt::format(
        "\nSaved the compact reference {}: {} bytes, top-{} and {} samples of the rest per position.\n",
        r.saved_reference, r.saved_bytes, r.top_k, r.samples);
    return;
  }
  const auto& s = r.summary;
  out << "\n| figure | value |\n|---|---|\n";
  out << fmt::format("| mean KLD(ref ‖ model){} | {} ± {} |\n", r.kld_lower_bound ? " (lower bound)" : "",
                     num(s.kld.value), num(s.kld.err));
  if (r.kld_lower_bound && r.samples > 0)
    out << fmt::format("| mean KLD, rest estimated from {} samples | {} ± {} |\n", r.samples,
                       num(s.kld_sampled.value), num(s.kld_sampled.err));
  out << fmt::format("| KLD median / p99 / max | {} / {} / {} |\n", num(s.kld_median), num(s.kld_p99),
                     num(s.kld_max));
  out << fmt::format("| top-1 agreement | {:.3f} ± {:.3f} % |\n", 100 * s.same_top.value,
                     100 * s.same_top.err);
  out << fmt::format("| mean Δp (next token) | {:.3f} ± {:.3f} % |\n", 100 * s.delta_p.value,
                     100 * s.delta_p.err);
  out << fmt::format("| ln(PPL/PPL_ref) | {} ± {} |\n", num(s.ln_ppl_ratio.value), num(s.ln_ppl_ratio.err));
  out << fmt::format("| PPL (model) | {:.4f} ± {:.4f} |\n", s.ppl.value, s.ppl.err);
  out << fmt::format("| PPL (reference) | {:.4f} ± {:.4f} |\n", s.ppl_ref.value, s.ppl_ref.err);
  out << fmt::format("| positions scored | {} |\n", s.positions);
  if (const auto& c = r.quantization_check) {
    const std::string verdict = quantization_verdict(s, c->summary);
    const std::string fresh =
        fmt::format("llama.cpp's own {} of the reference (KLD {} ± {}, top-1 {:.3f} %)", c->quant,
                    num(c->summary.kld.value), num(c->summary.kld.err), 100 * c->summary.same_top.value);
    const double ratio = c->summary.kld.value > 0 ? s.kld.value / c->summary.kld.value : 0;
    if (verdict == "further")
      out << fmt::format(
          "\n**Further from the reference than a correct {} of it:** x{:.2f} the KLD of {}. This file is not "
          "what "
          "quantizing the reference gives: corrupted, mis-converted, or made from another file. Fix: "
          "quantize "
          "the reference again, or download the file again and check its SHA-256.\n",
          c->quant, ratio, fresh);
    else if (verdict == "closer")
      out << fmt::format(
          "\nCloser to the reference than {}: x{:.2f} its KLD (an importance matrix or another "
          "recipe).\n",
          fresh, ratio);
    else
      out << fmt::format("\nAs close to the reference as {} (x{:.2f} its KLD, within the uncertainty).\n",
                         fresh, ratio);
  }
  if (r.kld_lower_bound)
    out << fmt::format(
        "\nThe reference is stored compactly (top-{} plus the rest mass as one bucket): the KLD is a lower "
        "bound of "
        "the full one (log-sum inequality), the looser the more mass lies outside the top {} (here {:.1f} % "
        "on "
        "average); top-1, Δp and the PPLs are exact. The sampled row estimates the rest's share without "
        "bias. "
        "docs/fidelity.md states both errors, measured.\n",
        r.top_k, r.top_k, 100 * r.rest_mass_mean);
}

}  // namespace edgeprobe::fidelity
