#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "analysis/explain.h"
#include "analysis/explain_internal.h"
#include "core/text.h"

// Whether an account closes, and B's table of fixes up to its hardware line.
namespace edgeprobe::analysis::explain_detail {

// The seed's table: B, then B after each of its fixes, then the hardware line: B's ceiling
// at A's efficiency with A's own causes fixed (A's rate times A's gains times the hardware
// factor), so that the last fix over the line is exactly the unexplained factor. A fix that
// interacts with another takes its gain in the table's order, so that the rows between are
// the speeds doctor's pairs measured where they measured them. No row passes the line: a
// chain that would, by no more than the account's tolerance, is held at it and says so; by
// more, the account is inconsistent and judge_account withholds the chain.
void fix_table(PhaseExplanation& p) {
  double a_fixed = p.a_tokens_per_s;
  for (const auto& f : p.factors)
    if (f.side == "A") a_fixed *= f.factor;
  p.hardware_line_tokens_per_s = a_fixed * p.factors.front().factor;
  double speed = p.b_tokens_per_s;
  p.steps.push_back({"B as measured", speed, ""});
  std::vector<std::string> fixed;
  bool held = false;
  for (const auto& f : p.factors) {
    if (f.side != "B" || f.id == "interaction") continue;  // the overlap is in the fixes' gains in order
    double factor = f.factor;
    if (f.interaction)
      factor = std::ranges::count(fixed, f.interaction->with) ? f.interaction->fixed_second
                                                              : f.interaction->fixed_first;
    speed /= factor;
    fixed.push_back(f.id);
    const bool over = speed > p.hardware_line_tokens_per_s;
    held = held || over;
    p.steps.push_back({"after fixing " + f.id, over ? p.hardware_line_tokens_per_s : speed, f.fix});
  }
  p.steps.push_back({"hardware line: B's ceiling at A's efficiency", p.hardware_line_tokens_per_s, ""});
  // B's own measurement may pass the line (the line is an estimate); no fix may carry it there.
  const double b_over = p.b_tokens_per_s / p.hardware_line_tokens_per_s;
  if (b_over > 1 && b_over <= kCloseHigh)
    p.notes.push_back(fmt::format(
        "B as measured is x{:.3f} above its hardware line, within the account's tolerance: B ran "
        "that much closer to its ceilings than A did to A's (the two runs' noise, or a cause on A "
        "its evidence does not show)",
        b_over));
  // Past the tolerance the table is withheld (judge_account), and says why there.
  if (held && speed <= p.hardware_line_tokens_per_s * kCloseHigh)
    p.notes.push_back(
        fmt::format("the fixes together would take B x{:.3f} past its hardware line, within the account's "
                    "tolerance: the rows past it are held at the line",
                    speed / p.hardware_line_tokens_per_s));
}

// Whether the factors account for the gap. An unexplained factor outside [kCloseLow,
// kCloseHigh] says by how much they do not, and which measurement would close it; above
// the range, B's fixes would carry it past its own hardware line, which cannot be: the
// chain is withheld and the factors that overlap or may be over-estimated are named.
void judge_account(PhaseExplanation& p, const ExplainSide& a, const ExplainSide& b, const PhaseSample& sa,
                   const PhaseSample& sb) {
  const double u = p.factors.back().factor;
  if (u >= kCloseLow && u <= kCloseHigh) return;
  p.closes = false;
  const std::string doctor_b = doctor_command(b, sb), doctor_a = doctor_command(a, sa);
  if (u < kCloseLow) {
    p.verdict = fmt::format(
        "the account does not close: B is x{:.2f} slower than its factors account for (unexplained "
        "x{:.3f}, outside {:.2f}-{:.2f}); something on B that its evidence does not show",
        1 / u, u, kCloseLow, kCloseHigh);
    p.closing_commands.push_back("on B's device: " + doctor_b);
    if (a.kind != "doctor") p.closing_commands.push_back("on A's device, for A's own causes: " + doctor_a);
    return;
  }
  // Too little left unexplained: B's slowdowns may be over-estimated, or A's own causes
  // (factors above 1, on A) under-estimated.
  std::vector<std::string> over_on_b, under_on_a, cpu_time;
  for (const auto& f : p.factors) {
    if (f.side.empty() || f.id == "interaction") continue;
    (f.side == "A" ? under_on_a : over_on_b)
        .push_back(fmt::format("{} on {} x{:.3f} ({})", f.id, f.side, f.factor, f.basis));
    if (f.side == "B" &&
        (f.id.starts_with("threads.") || f.id.starts_with("contention.") || f.id.starts_with("throttle.")))
      cpu_time.push_back(f.id);
  }
  const auto estimates_first = [](std::vector<std::string>& v) {
    std::stable_partition(v.begin(), v.end(),
                          [](const std::string& s) { return s.find("(estimated") != std::string::npos; });
    return fmt::format("{}", fmt::join(v, "; "));
  };
  std::string suspects;
  if (!over_on_b.empty()) suspects += "; over-estimated, estimates first: " + estimates_first(over_on_b);
  if (!under_on_a.empty()) suspects += "; or A's own under-estimated: " + estimates_first(under_on_a);
  p.verdict = fmt::format(
      "the account does not close: B measured x{:.2f} faster than its factors account for (unexplained "
      "x{:.3f}, outside {:.2f}-{:.2f}), so B after its fixes would pass its own hardware line, which cannot "
      "be{}{}",
      u, u, kCloseLow, kCloseHigh,
      suspects.empty() ? "; A may be slowed by a cause its evidence does not show" : suspects,
      cpu_time.size() > 1
          ? fmt::format("; {} all take CPU time from B's threads and may overlap", fmt::join(cpu_time, ", "))
          : "");
  p.chain_withheld = true;
  p.steps = {p.steps.front(), p.steps.back()};
  p.closing_commands.push_back("on B's device, to measure its causes in pairs: " + doctor_b);
  if (a.kind != "doctor") p.closing_commands.push_back("on A's device, for A's own causes: " + doctor_a);
}

}  // namespace edgeprobe::analysis::explain_detail
