#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "result/result.h"
#include "result/session.h"
#include "store/store.h"

namespace edgeprobe::app {

// A stored run loaded back into the structs its job produced, so export, compare and
// reports read one shape whether a result comes from a file or from the store.
struct StoredRun {
  store::RunRecord record;
  std::optional<result::BenchReport> bench;
  std::optional<result::SessionReport> session;
  nlohmann::json doctor;  // doctor's JSON result (doctor::to_json) for a doctor run
  // The document its subcommand's `-o json` printed (bench, session or doctor result).
  nlohmann::json document() const;
};
StoredRun load_stored_run(const store::Store& store, int64_t run);

// The plan a stored run of `kind` was started with, for --resume; throws kBadInput when
// the run is of another kind or already complete.
nlohmann::json resumable_plan(store::Store& store, int64_t run, const std::string& kind);

// A result document from a file (any version: v1 files are upgraded) or, for a run id,
// from the store at `db` ("" = the default store). For compare, export and report.
nlohmann::json load_result_document(const std::string& file_or_run_id, const std::string& db);

}  // namespace edgeprobe::app
