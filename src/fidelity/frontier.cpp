#include "fidelity/frontier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ostream>

#include "core/error.h"
#include "core/stats.h"

namespace edgeprobe::fidelity {
namespace {

double median(const std::vector<double>& v) { return stats::summarize(v).median; }

// The middle half of per-round ratios: how far the machine's noise moved them.
std::string ratio_range(std::vector<double> v) {
  if (v.size() < 4) return "";
  std::sort(v.begin(), v.end());
  const double q1 = v[v.size() / 4], q3 = v[(3 * v.size()) / 4];
  return fmt::format(" ({:.2f}–{:.2f})", q1, q3);
}

nlohmann::json estimate(const Estimate& e, double scale = 1) {
  return {{"value", e.value * scale}, {"err", e.err * scale}};
}

std::string mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

}  // namespace

double median_paired_ratio(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> r;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (a[i] > 0 && b[i] > 0) r.push_back(a[i] / b[i]);
  return median(r);
}

SpeedOrder compare_speed(const std::vector<double>& a, const std::vector<double>& b) {
  int n = 0, wins = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (!(a[i] > 0 && b[i] > 0) || a[i] == b[i]) continue;  // unmeasured or a tie: no sign
    ++n;
    wins += a[i] > b[i];
  }
  // P(X >= k) for X ~ Binomial(n, 1/2).
  auto tail = [n](int k) {
    double p = 0, c = 1;  // c = C(n, i)
    for (int i = 0; i <= n; ++i) {
      if (i >= k) p += c;
      c = c * (n - i) / (i + 1);
    }
    return p / std::pow(2.0, n);
  };
  if (n > 0 && tail(wins) <= 0.05) return SpeedOrder::kFaster;
  if (n > 0 && tail(n - wins) <= 0.05) return SpeedOrder::kSlower;
  return SpeedOrder::kUnresolved;
}

void mark_dominated(std::vector<FrontierPoint>& points) {
  for (auto& p : points) {
    p.dominated_by.clear();
    p.dominated_why.clear();
    p.unresolved = false;
  }
  for (auto& b : points) {
    if (b.is_reference) continue;
    const FrontierPoint* best = nullptr;  // a dominator, or else the closest unresolved one
    bool best_resolved = false;
    for (const auto& a : points) {
      if (&a == &b || a.is_reference) continue;
      const double gap = b.fidelity.kld.value - a.fidelity.kld.value;
      if (gap <= 2 * std::hypot(a.fidelity.kld.err, b.fidelity.kld.err)) continue;
      const SpeedOrder order = compare_speed(a.decode_ratio, b.decode_ratio);
      if (order == SpeedOrder::kSlower) continue;
      const bool resolved = order == SpeedOrder::kFaster;
      // A proven dominator beats an unresolved one; among equals the closest is named.
      if (best && (best_resolved > resolved ||
                   (best_resolved == resolved && best->fidelity.kld.value <= a.fidelity.kld.value)))
        continue;
      best = &a;
      best_resolved = resolved;
    }
    if (!best) continue;
    const auto& a = *best;
    b.dominated_by = a.quant;
    b.unresolved = !best_resolved;
    const std::string larger =
        a.size_bytes > b.size_bytes
            ? fmt::format(", though {:.0f} % larger",
                          100.0 * (static_cast<double>(a.size_bytes) / b.size_bytes - 1))
            : "";
    b.dominated_why = fmt::format(
                          "{} is closer to the reference (KLD {:.3g} against {:.3g}) and decodes {} "
                          "(x{:.2f}, the median of the rounds){}",
                          a.quant, a.fidelity.kld.value, b.fidelity.kld.value,
                          best_resolved ? "faster" : "at a speed the rounds did not separate from it",
                          median_paired_ratio(a.decode_ratio, b.decode_ratio), larger) +
                      (best_resolved ? "" : "; more --rounds may separate them");
  }
}

nlohmann::json to_json(const Frontier& f) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& p : f.points) {
    nlohmann::json j = {
        {"quant", p.quant},
        {"reference", p.is_reference},
        {"path", p.path},
        {"sha256", p.sha256},
        {"size_bytes", p.size_bytes},
        {"peak_rss_bytes", p.peak_rss_bytes},
        {"prefill_tokens_per_s", p.prefill_tokens_per_s},
        {"decode_tokens_per_s", p.decode_tokens_per_s},
        {"prefill_ratio_per_round", p.prefill_ratio},
        {"decode_ratio_per_round", p.decode_ratio},
        {"prefill_ratio", median(p.prefill_ratio)},
        {"decode_ratio", median(p.decode_ratio)},
        {"dominated_by", p.dominated_by.empty() ? nlohmann::json() : nlohmann::json(p.dominated_by)},
        {"dominated_why", p.dominated_why},
        {"dominance_unresolved", p.unresolved}};
    if (!p.is_reference) {
      const auto& s = p.fidelity;
      j["positions"] = s.positions;
      j["kld"] = {{"mean", s.kld.value}, {"err", s.kld.err}, {"p99", s.kld_p99}, {"max", s.kld_max}};
      j["top1_agreement_percent"] = estimate(s.same_top, 100);
      j["ln_ppl_ratio"] = estimate(s.ln_ppl_ratio);
      j["ppl"] = estimate(s.ppl);
    }
    points.push_back(std::move(j));
  }
  return {{"kind", "frontier"},
          {"schema", 1},
          {"base", f.base},
          {"text", f.text},
          {"settings",
           {{"n_ctx", f.n_ctx},
            {"n_chunks", f.n_chunks},
            {"threads", f.n_threads},
            {"rounds", f.rounds},
            {"n_prompt", f.n_prompt},
            {"n_gen", f.n_gen}}},
          {"points", points},
          {"seconds", f.seconds}};
}

void write_frontier(const Frontier& f, const std::string& format, std::ostream& out) {
  if (format == "json") {
    out << to_json(f).dump(2) << "\n";
    return;
  }
  if (format != "md") throw_bad_input("unknown output format '{}' for frontier; choose md or json", format);
  const FrontierPoint& ref = f.points.front();
  out << fmt::format("# Frontier of {}\n\n", f.base);
  out << fmt::format(
      "Fidelity against {} over {} chunks of {} tokens ({} positions); speed pp{}+tg{} on {} threads, "
      "{} rounds, each quantization against the reference in the same round (median of the rounds' "
      "ratios; in brackets the middle half of the rounds' decode ratios).\n\n",
      ref.path, f.n_chunks, f.n_ctx, f.points.size() > 1 ? f.points[1].fidelity.positions : 0, f.n_prompt,
      f.n_gen, f.n_threads, f.rounds);
  out << "| quantization | size | decode t/s | decode | prefill | mean KLD | top-1 | PPL | |\n";
  out << "|---|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (const auto& p : f.points) {
    const std::string fid =
        p.is_reference
            ? "| 0 (reference) | 100 % | " +
                  fmt::format("{:.2f}", f.points.size() > 1 ? f.points[1].fidelity.ppl_ref.value : 0.0)
            : fmt::format("| {:.3g} ± {:.1g} | {:.2f} ± {:.2f} % | {:.2f}", p.fidelity.kld.value,
                          p.fidelity.kld.err, 100 * p.fidelity.same_top.value, 100 * p.fidelity.same_top.err,
                          p.fidelity.ppl.value);
    out << fmt::format("| {} | {} | {:.1f} | x{:.2f}{} | x{:.2f} {} | {} |\n", p.quant, mib(p.size_bytes),
                       p.decode_tokens_per_s, median(p.decode_ratio),
                       p.is_reference ? "" : ratio_range(p.decode_ratio), median(p.prefill_ratio), fid,
                       p.is_reference ? ""
                                      : (p.dominated_by.empty() ? "on the front"
                                         : p.unresolved         ? "unresolved"
                                                                : "dominated"));
  }
  bool any = false;
  for (const auto& p : f.points)
    if (!p.dominated_by.empty()) {
      if (!any) out << "\n";
      any = true;
      out << fmt::format("- {} is {}: {}.\n", p.quant, p.unresolved ? "perhaps dominated" : "dominated",
                         p.dominated_why);
    }
  if (!any)
    out << "\nNo quantization is dominated: each is the fastest at its fidelity or the closest at its "
           "speed.\n";
}

}  // namespace edgeprobe::fidelity
