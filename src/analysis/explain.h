#pragma once
// `explain A B`: the gap between two runs of one model (two devices, or one device on two
// builds or days) as a product of causes, each with its evidence and its fix, and the
// speed B would reach after each fix. Pure functions over result documents (bench or
// doctor JSON), so tests feed them measured runs and fixtures alike. docs/explain.md has
// the model.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "analysis/compare.h"
#include "result/doctor.h"

namespace edgeprobe::analysis {

// The phases explain attributes, each on its own: a cause can cost one and not the other.
// Load is a rate too (loads per second, 1000 / the first load's ms), so that B/A reads the
// same way in every phase.
inline constexpr const char* kExplainPhases[] = {"prefill", "decode", "load"};

// The range of the unexplained factor within which an account closes: the run-to-run
// spread of two separate runs on one device (docs/explain.md).
inline constexpr double kCloseLow = 0.8, kCloseHigh = 1.25;

// One side as explain reads it: the bench report (a doctor result's primary run) and, for
// a doctor result, its findings.
struct ExplainSide {
  std::string label;  // as the user named it: a run id or a file
  std::string kind;   // "bench" or "doctor"
  nlohmann::json bench;
  std::vector<result::Finding> findings;
  std::string device_id, device_name;  // provenance.device: id, and "cpu (hostname)"
  std::string cpu_variant, best_variant;
  bool variant_fallback = false;  // provenance.isa_gap: this CPU could run a better variant
  std::string emulated;           // why the timings are an emulator's (qemu-user); "" on hardware
};

// Throws Error(kBadInput) for a document that is neither a bench nor a doctor result, or
// has no measured test.
ExplainSide explain_side(const nlohmann::json& document, const std::string& label);

// One factor of B/A. The product of every factor of a phase, the unexplained one included,
// is the measured B/A: it is an identity, not a fit.
struct ExplainFactor {
  std::string id;     // "hardware", a doctor finding ("kernel.isa_fallback", ...), "unexplained"
  std::string side;   // "A" or "B" for a cause on one device; "" for hardware and unexplained
  std::string title;  // one line
  double factor = 1;  // its share of B/A: < 1 makes B slower than A
  std::string basis;  // "measured", "estimated" or "residual" (unexplained)
  std::string detail; // how: the pairs, the telemetry, the ceilings
  std::vector<std::string> evidence;
  std::string fix;    // the exact change; "" for hardware and unexplained
  // Two causes on one side whose gains depend on each other (doctor measured one after the
  // other was fixed): each factor is its cost alone, an "interaction" factor holds the
  // overlap, and the seed's table applies each fix with the gain its order gives: fixed
  // before its partner, or after it.
  struct Interaction {
    std::string with;  // the partner's id
    double fixed_first = 1, fixed_second = 1;  // in B/A terms, like `factor`
  };
  std::optional<Interaction> interaction;
};

// The seed's table: B as measured, then after each of its fixes (largest first), then
// the hardware line (B's ceiling at A's efficiency).
struct FixStep {
  std::string label;
  double tokens_per_s = 0;
  std::string fix;  // "" for the first and the last row
};

struct PhaseExplanation {
  std::string phase;            // "prefill" or "decode"
  std::string test_a, test_b;   // whose medians are compared ("pp128", "tg32")
  int threads_a = 0, threads_b = 0;
  double a_tokens_per_s = 0, b_tokens_per_s = 0;  // medians of the repetitions (load: loads/s)
  double ratio = 0;             // b / a
  std::vector<ExplainFactor> factors;  // hardware, then the causes by impact, unexplained last
  double product = 0;           // of the factors; equals ratio
  std::vector<FixStep> steps;
  double hardware_line_tokens_per_s = 0;
  // Causes a run shows but has no factor for, each with the command that would measure it.
  std::vector<std::string> unmeasured;
  // Whether the factors account for the gap: the unexplained factor within [kCloseLow,
  // kCloseHigh]. Else `verdict` says by how much not and `closing_commands` what would
  // measure the rest; when the factors would carry B past its hardware line the table is
  // withheld (`steps` holds B as measured and the line only).
  bool closes = true;
  bool chain_withheld = false;
  std::string verdict;
  std::vector<std::string> closing_commands;
  std::vector<std::string> notes;  // how the hardware factor was read
};

struct Explanation {
  ExplainSide a, b;
  bool same_device = false;
  std::vector<SettingDifference> differences;  // what changed, A -> B
  std::vector<PhaseExplanation> phases;
  std::vector<std::string> notes;
};

struct ExplainOptions {
  bool same_shape = false;  // two files of one architecture, quantisation and size, not one file
};

// Throws Error(kBadInput) naming the problem: different models (and --same-shape when it
// would do), a side without prefill or decode ceilings (and the probe that measures them),
// no phase that both measured. Load without a storage ceiling on a side is left out, with
// a note.
Explanation explain(const ExplainSide& a, const ExplainSide& b, const ExplainOptions& options = {});

// explain -o json and the HTML report: one shape ("kind": "explain").
nlohmann::json to_json(const Explanation& explanation);

}  // namespace edgeprobe::analysis
