#pragma once
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/stop_token.h"
#include "result/doctor.h"
#include "result/result.h"
#include "result/session.h"

namespace edgeprobe::store {
class Store;
enum class Status;
}

namespace edgeprobe::app {

struct EngineHandle;  // app/engine_factory.h
struct Environment;   // app/plan.h

// Where a running job says what it is doing and hands over each unit as it completes.
// The CLI prints tables through a reporter; `edgeprobe run` writes JSON Lines; a lab
// controller relays them. Every method has an empty default so a sink takes only what
// it needs.
class JobSink {
 public:
  virtual ~JobSink() = default;
  virtual void progress(const std::string& /*step*/) {}
  // Something the user must see even with -q (a ceiling that could not be measured,
  // timings taken under emulation); text without the "warning: " prefix.
  virtual void warning(const std::string& /*text*/) {}
  // How far the job is, in its own units ("repetitions", "turns", "children"): called
  // between units, never inside a timed region. `done` counts units a resumed run had
  // stored as done.
  virtual void units(size_t /*done*/, size_t /*total*/, const std::string& /*unit*/) {}
  // Bench: the plan and provenance before the first test, each test as it completes
  // (with every repetition), each repetition as soon as it is measured, and the report.
  virtual void bench_begin(const result::Provenance& /*provenance*/, const std::vector<workload::TestCase>& /*cases*/) {}
  virtual void bench_repetition(size_t /*case_index*/, const workload::TestCase& /*test*/,
                                const result::Repetition& /*repetition*/) {}
  virtual void bench_result(const result::TestResult& /*result*/) {}
  virtual void bench_end(const result::BenchReport& /*report*/) {}
  // Session: each turn as it completes and the report.
  virtual void session_begin(const result::Provenance& /*provenance*/, const nlohmann::json& /*plan*/) {}
  virtual void session_turn(size_t /*config_index*/, const result::Turn& /*turn*/) {}
  virtual void session_end(const result::SessionReport& /*report*/) {}
  // Doctor: one unit, the whole diagnosis (or tune result) at the end, with the
  // provenance of its primary bench child (null for tune) and the plan it is stored under.
  virtual void doctor_end(const nlohmann::json& /*provenance*/, const nlohmann::json& /*plan*/,
                          const result::DoctorResult& /*report*/) {}
};

// What a job runs with besides its plan.
struct JobContext {
  store::Store* store = nullptr;    // null: nothing is stored
  int64_t resume_run = 0;           // a stored run to continue (its plan was loaded by the caller)
  JobSink* sink = nullptr;          // null: silent
  std::string command_line;         // for provenance
  std::string trace_file;           // Chrome/Perfetto trace of the run; "" = none
  // A stop request ends the job after the unit in flight, with everything measured kept
  // and stored. The process's token by default, which Ctrl-C and SIGTERM set.
  StopToken stop = StopToken::process();
  // The engine the plan runs on. Unset: the plan's own (llama.cpp in process, or the
  // server behind --endpoint). A test sets the fake engine here, as hyperfine's debug
  // mode swaps its command executor for a mock one.
  std::function<EngineHandle(const Environment&)> engine = nullptr;
};

// How a job ended, for the caller's exit code and its last words.
struct JobOutcome {
  int64_t run_id = 0;        // 0 when not stored
  bool interrupted = false;  // stopped by the stop token: `--resume run_id` finishes it
  // Units that ended in an error row: distinct messages, in order, and the exit code
  // the worst one maps to (0 when none failed).
  std::vector<std::string> errors;
  int exit_code = 0;
  // Units counted as done that did not run (a conversation that ended early), and why.
  size_t skipped = 0;
  std::string skipped_why;
  // Tests measured while the machine did something else ("tg32: decode spread ..."): stored
  // and flagged all the same (analysis/contamination.h); the summary says so.
  std::vector<std::string> contaminated;
};

// The error text a finished run is stored with: "interrupted", how many units failed and
// the first failure, or "" for a complete run. `unit` is plural ("tests", "turns").
std::string finished_error(store::Status status, const JobOutcome& outcome, size_t failed, size_t units,
                           const std::string& unit);

// One warning through ctx.sink when a thread count is more than the CPUs this process may
// run on (workload::oversubscription_warning); the job goes on.
void warn_oversubscription(const std::vector<int>& thread_counts, const JobContext& ctx);

}  // namespace edgeprobe::app
