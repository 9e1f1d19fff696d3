#pragma once
// Posting a result document to a results hub (`edgeprobe serve`): one path for
// `edgeprobe submit` and for `--submit URL` on bench, session and doctor (docs/hub.md).
#include <nlohmann/json.hpp>
#include <string>

#include "store/store.h"

namespace CLI {
class App;
}

namespace edgeprobe::cli {

// Where to submit and with which write token (--token-file FILE, else $EDGEPROBE_HUB_TOKEN).
struct SubmitTarget {
  std::string url;  // "" = do not submit
  std::string token_file;
  bool wanted() const { return !url.empty(); }
};

// --submit URL and --token-file on a subcommand that makes a result.
void add_submit_flags(CLI::App* cmd, SubmitTarget& target);

// Throws Error(kBadInput) for a URL that is not http(s):// or no token, and
// Error(kEnvironment) when this build has no HTTP client: what can be known before a
// job measures anything.
void check_submit_target(const SubmitTarget& target);

// Posts `document` to URL/api/submit. Returns the line to print: "submitted: run N at
// URL/runs/N" or "already there: run N at ..." (with the hub's flags, if any). A refusal
// throws Error(kBadInput) with the hub's reason ("the hub refused WHAT (422): ..."), a hub
// that failed or cannot be reached Error(kEnvironment); `what` names the document.
std::string submit_document(const SubmitTarget& target, const nlohmann::json& document,
                            const std::string& what);

// For bench, session and doctor after their result is printed and stored, with the job's
// exit code: a job that did not finish cleanly is not sent (a line says so). Otherwise
// submits, prints the hub's line on stderr (stdout holds the result), and turns a failure
// into one line that says the result is kept and how to send it again. Returns the job's
// exit code, else 0 or the submission's.
int submit_finished_job(const SubmitTarget& target, int job_exit_code, const nlohmann::json& document,
                        int64_t stored_run, const store::Store* store);

}  // namespace edgeprobe::cli
