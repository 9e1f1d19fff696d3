#pragma once
// Doctor's result document (`doctor -o json`, a stored doctor run, a --baseline file): a
// diagnosis or, with --tune, a search. doctor/ produces these structs and every format,
// the store and explain read them; nothing walks a doctor document's JSON on its own.
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "result/result.h"

namespace edgeprobe::result {

// critical: every figure after it is void or badly wrong (another file, another
// precision); warning: a cause that costs speed now; info: context, nothing to fix.
enum class Severity { kInfo, kWarning, kCritical };
const char* severity_name(Severity severity);

// One diagnosis: what is wrong, the measured evidence, what fixing it should gain and the
// exact change that fixes it.
struct Finding {
  std::string id;        // stable: "kernel.isa_fallback", "threads.oversubscribed", ...
  Severity severity = Severity::kInfo;
  std::string title;     // one line
  std::vector<std::string> evidence;  // measured facts, one per line
  std::string affects;   // "decode", "prefill", "prefill+decode", "load", "memory", "results"
  // Factor the affected phase should speed up by once fixed (> 1), and how it was found:
  // "measured" (the tool ran the fixed configuration) or "estimated" (from telemetry).
  // speedup_basis is a sentence that starts with its basis, "measured: ...", "estimated: ..."
  // or "none: why" (speedup_basis_word); JSON has the word as speedup_basis and the
  // sentence as speedup_detail.
  std::optional<double> speedup;
  std::string speedup_basis;
  std::string fix;       // the exact flag, variable, build or device setting
  // The evidence, machine-readable: each check names its own figures (ids in docs/doctor.md).
  nlohmann::json data = nlohmann::json::object();
  bool operator==(const Finding&) const = default;
};

// The start of speedup_basis for a speed-up taken under emulation (qemu-user): the
// emulator's timing, not any device's.
constexpr const char* kEmulatedSpeedup = "from an emulated run, not any device's speed";
// "measured", "estimated" or "none" (past an emulated run's prefix); "" when unstated.
std::string speedup_basis_word(const Finding& finding);

// Median prefill and decode tokens/s of one configuration; nullopt where not measured.
struct Rates {
  std::optional<double> pp, tg;
  bool operator==(const Rates&) const = default;
};
// "prefill 41.2 t/s, decode 9.8 t/s"; "no rate" when neither was measured.
std::string rates_text(const Rates& rates);

// Interleaved pairs of children: the median of their ratios (A's seconds over B's: > 1 =
// B is faster) and a distribution-free interval (doctor/paired.h).
struct PairedEstimate {
  int n = 0;                 // pairs used
  double median = 0;         // median of the ratios
  double low = 0, high = 0;  // the interval, order statistics of the ratios
  double coverage = 0;       // its exact coverage (P(low <= true median <= high))
  bool operator==(const PairedEstimate&) const = default;
};

// Where a comparison stands after its pairs so far.
enum class PairVerdict {
  kContinue,      // measure another pair
  kFaster,        // the interval lies above 1: B is faster
  kSlower,        // the interval lies below 1: B is slower
  kSame,          // the interval is tight around 1: no difference worth a fix
  kInconclusive,  // out of pairs or time and none of the above
};
const char* verdict_name(PairVerdict verdict);

struct PairSample {
  double a = 0, b = 0, ratio = 0;  // ratio = a / b: > 1 when B is faster
  bool disturbed = false;
  std::string why;  // what moved between its two children
  bool operator==(const PairSample&) const = default;
};

// A against B as the document keeps it: the configuration as given (A) against a fix or
// an alternative (B), the pairs and their verdict. doctor::Comparison adds the children.
struct PairComparison {
  std::string what;              // "threads", "cpu variant", "mmap"
  std::string a_label, b_label;  // "-t 2", "-t 1"
  // The fixes both children already carry, by the `what` of the comparison that found them
  // ({"cpu variant"}: the thread pairs ran the better variant). Its factor is then the fix's
  // gain after those, which `explain` needs to split an interaction order-free.
  std::vector<std::string> after;
  std::string metric = "seconds per reference turn";
  std::vector<PairSample> pairs;
  std::optional<PairedEstimate> estimate;  // over the undisturbed pairs when there are enough
  // The same pairs per phase: B's tokens/s over A's (> 1 = B is faster); nullopt when the
  // children do not time that phase.
  std::optional<PairedEstimate> prefill_estimate, decode_estimate;
  // The first B child's ceilings per phase ({"prefill_ceiling_tokens_per_s", ...}, a
  // roofline's names): for a variant comparison, the device's ceilings with the better
  // variant (`explain` keeps a fallback out of the hardware factor with them). Null when
  // its bench had none.
  nlohmann::json b_ceilings;
  bool includes_disturbed = false;
  PairVerdict verdict = PairVerdict::kInconclusive;
  // A first round that disagreed with the reason for measuring, measured again.
  std::optional<PairedEstimate> first_estimate;
  PairVerdict first_verdict = PairVerdict::kContinue;
  double speed_variation = 0;  // of the reference kernel over this comparison's children
  std::string error;           // a child failed
  double wall_s = 0;
  bool operator==(const PairComparison&) const = default;
};

// One bench child of a diagnosis as the document keeps it: what it ran and what the
// machine did meanwhile (its result is in `primary` for the first; the others are in
// the comparisons).
struct DoctorChild {
  std::string label;                // "as configured", "best CPU variant", "-t 1,2"
  std::vector<std::string> config;  // its bench flags ("-t", "2")
  std::string command;              // reproducible, its plan piped in
  std::string error;                // why it failed; "" when fine
  double wall_s = 0, child_cpu_s = 0;
  std::optional<double> other_cpu_share, throttled_ms, cpu_pressure_share;
  std::vector<double> reference_kernel_ms;  // the reference kernel timed while it ran
  bool operator==(const DoctorChild&) const = default;
};

// What `doctor` found: the findings by impact and everything measured to find them.
struct DoctorReport {
  int schema_version = kSchemaVersion;
  std::string model;                // the file diagnosed
  std::vector<std::string> config;  // the configuration under diagnosis, as bench flags
  int n_prompt = 0, n_gen = 0, repetitions = 0;
  bool healthy = false;             // no finding above info
  std::vector<Finding> findings;    // ordered by impact
  std::vector<DoctorChild> runs;    // the configuration first, then the fixes run alone
  std::vector<PairComparison> comparisons;
  double reference_kernel_best_ms = 0;  // the machine's fastest moment during the diagnosis
  double speed_variation = 0;           // how far its speed moved, (max - min) / max
  double budget_s = 0;
  std::string emulated;             // why the timings are an emulator's; "" on hardware
  double wall_s = 0;
  // The configuration's run in full, so that the document can be a --baseline itself.
  std::optional<BenchReport> primary;
};

// `doctor --tune`: one value tried for one setting, measured briefly.
struct TuneCandidate {
  std::string value;
  Rates rates;
  std::optional<double> turn_s;
  bool operator==(const TuneCandidate&) const = default;
};
struct TuneStep {
  std::string setting;  // "threads", "cpu mask", "strict placement", "poll", "ubatch", "flash attention"
  std::vector<TuneCandidate> candidates;
  std::string chosen;   // the value kept (the current one unless another was >= 3 % faster)
  std::string error;    // the child failed: the setting is left as it was
  bool operator==(const TuneStep&) const = default;
};
struct TuneReport {
  int schema_version = kSchemaVersion;
  std::string model;
  // The reference turn each candidate ran; 0 in a search stored before they were written
  // (JSON: "tests" null).
  int n_prompt = 0, n_gen = 0, repetitions = 0;
  std::vector<std::string> start, best;  // bench flags: the configuration given, the best found
  std::vector<TuneStep> steps;
  // The two measured alternately at the doctor's full repetitions: the gain is theirs.
  std::vector<Rates> start_rounds, best_rounds;
  std::optional<double> gain;  // median over rounds of start turn seconds / best turn seconds
  std::string edgeprobe_command, llama_bench_command;  // the best configuration, to paste
  double wall_s = 0;
};

// A doctor document: a diagnosis or a search. Its JSON names kind "doctor" and holds its
// body under "doctor" or "tune", which says which.
using DoctorResult = std::variant<DoctorReport, TuneReport>;

nlohmann::json to_json(const Finding& finding);
nlohmann::json to_json(const Rates& rates);
nlohmann::json to_json(const PairedEstimate& estimate);
nlohmann::json to_json(const PairComparison& comparison);
nlohmann::json to_json(const DoctorReport& report);
nlohmann::json to_json(const TuneReport& report);
nlohmann::json to_json(const DoctorResult& result);

// The inverses. They read every doctor document edgeprobe has written: fields added since
// (a comparison's phases, the tune's tests) read as absent, a finding stored before its
// speed-up had one name (estimated_speedup) as the same finding. Like json_read, a field
// absent or of another type reads as empty; only the primary run's bench reader throws
// nlohmann::json::exception for a mistyped field. A document that is neither body is
// Error(kBadInput).
Finding finding_from_json(const nlohmann::json& j);
Rates rates_from_json(const nlohmann::json& j);
PairComparison comparison_from_json(const nlohmann::json& j);
DoctorReport doctor_report_from_json(const nlohmann::json& j);
TuneReport tune_report_from_json(const nlohmann::json& j);
DoctorResult doctor_result_from_json(const nlohmann::json& j);

}  // namespace edgeprobe::result
