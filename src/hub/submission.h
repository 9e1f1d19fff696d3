#pragma once
// What the hub checks of a submitted result document before it is shown, and how an
// accepted one is recorded: through the store seam, unit by unit, as the job that made it
// would have recorded it, so every page reads submitted and local runs alike.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "result/document.h"
#include "store/store.h"

namespace edgeprobe::hub {

// A submission the checks let through, read into its typed document.
struct Checked {
  result::Document document;
  std::string key;       // the same run submitted twice has the same key (run_key)
  std::string ceilings;  // "checked": every measured rate was within its ceiling; "unchecked": none carried
};

// The body as a result document: bounded JSON (depth and size, core/bounded_input.h),
// its schema version, kind and field types checked by the result readers every command
// uses, then the efficiency check. Throws Error(kBadInput) with the one-line reason.
Checked check_submission(std::string_view body);

// Rates above the device's own ceilings by more than the probe's own tolerance for a
// noisy ceiling (probe::kSuspectMargin) are impossible: refused, never shown.
// "" when the document is physically possible, else the reason.
std::string impossible_efficiency(const result::Document& document);

// Which run a document is: its device, the instant it started and its command line (a
// run cannot start twice on one device at the same instant); a document that says none of
// these is keyed by its whole content.
std::string run_key(const result::Document& document);

// Records an accepted document as a new run, the hub's facts ({"key", "submitter",
// "received_at", "ceilings"}) in the run's plan under "hub".
store::RunId record_submission(store::Store& store, const Checked& checked, const nlohmann::json& hub_facts);

// The hub's facts of a stored run (its plan's "hub" object), null for a run recorded
// locally.
nlohmann::json submission_facts(const store::RunRecord& record);

}  // namespace edgeprobe::hub
