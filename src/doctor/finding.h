#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace edgeprobe::doctor {

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
  nlohmann::json data = nlohmann::json::object();  // the evidence, machine-readable
};

// The start of speedup_basis for a speed-up taken under emulation (qemu-user): the
// emulator's timing, not any device's.
constexpr const char* kEmulatedSpeedup = "from an emulated run, not any device's speed";

// Critical first, then by estimated speed-up (largest first), then warnings without an
// estimate, then info; ties keep the order the checks ran in (software before hardware).
// A speed-up from an emulated run (data "emulated") does not rank.
void sort_by_impact(std::vector<Finding>& findings);

// "measured", "estimated" or "none" (past an emulated run's prefix); "" when unstated.
std::string speedup_basis_word(const Finding& finding);

// {"speedup": factor or null, "speedup_basis": word or null, "speedup_detail": sentence or
// null, ...}: one name for the factor whether it was measured or estimated.
nlohmann::json to_json(const Finding& finding);

}  // namespace edgeprobe::doctor
