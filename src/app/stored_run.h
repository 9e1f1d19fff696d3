#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "core/error.h"
#include "core/text.h"
#include "result/document.h"
#include "store/store.h"

namespace edgeprobe::app {

// A stored run loaded back into the structs its job produced, so export, compare and
// reports read one shape whether a result comes from a file or from the store.
struct StoredRun {
  store::RunRecord record;
  // The result its subcommand printed; none for a doctor run stopped before its result.
  std::optional<result::Document> content;
  // That result as its `-o json` printed it (a run without one: its kind and provenance).
  nlohmann::json document() const;
  // The result when it is of that kind, else null.
  const result::BenchReport* bench() const { return content ? std::get_if<result::BenchReport>(&*content) : nullptr; }
  const result::SessionReport* session() const { return content ? std::get_if<result::SessionReport>(&*content) : nullptr; }
};
StoredRun load_stored_run(const store::Store& store, int64_t run);

// The plan a stored run of `kind` was started with, for --resume; throws kBadInput when
// the run is of another kind or already complete.
nlohmann::json resumable_plan(store::Store& store, int64_t run, const std::string& kind);

// A result document from a file (any version: v1 files are upgraded) or, for a run id,
// from the store at `db` ("" = the default store). For compare, export and report.
nlohmann::json load_result_document(const std::string& file_or_run_id, const std::string& db);
// The same, read into its structs (export); a run stored without a result is refused.
result::Document load_result(const std::string& file_or_run_id, const std::string& db);
// What a report or an error calls it: "run 3" for a run id, else the file's name.
std::string result_label(const std::string& file_or_run_id);

// Runs `use` (a renderer, a comparison) on result documents from outside: a field of a
// type edgeprobe never writes (a string where a number goes) surfaces there as a JSON
// type error, which is bad input naming `names`, not an internal error.
template <typename F>
auto with_result_documents(const std::string& names, F&& use) -> decltype(use()) {
  try {
    return use();
  } catch (const nlohmann::json::exception& e) {
    throw_bad_input("{}: a field holds a type edgeprobe never writes there ({}); is it an edgeprobe result?", names,
                    one_line(e.what(), 120));
  }
}

}  // namespace edgeprobe::app
