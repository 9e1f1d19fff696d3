#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/progress.h"
#include "store/store.h"

namespace edgeprobe::lab {

// Reads a device's JSON Lines stream (docs/wire-format.md) and commits each unit to the
// central store the moment its line arrives: the run begins at the `provenance` event
// with the device's own identity, every repetition and turn is its own transaction, and
// `end` finishes the run. A resumed device's run continues the stored one; units it
// already holds are never recorded twice.
class StreamRecorder {
 public:
  // `lab` goes into provenance.extra.lab (lab run, device name, labels, transport).
  // resume_run: a stored run of this device to continue (0: begin a new one).
  StreamRecorder(store::Store& store, nlohmann::json lab, store::RunId resume_run = 0);

  // One line of the stream. A line that is not JSON, a gap in `seq` or a unit the store
  // refuses ends the recording with that problem (failed() says why); later lines are
  // ignored.
  void line(std::string_view text);
  // The stream stopped without `end` (connection lost, process killed): the run is
  // marked failed with `why`, keeping every unit committed so far.
  void finish_cut(const std::string& why);

  store::RunId run_id() const { return run_id_; }
  bool ended() const { return ended_; }         // `end` arrived
  int exit_code() const { return exit_code_; }  // end.exit_code, or 2/3 after `error`
  const std::string& failed() const {
    return failed_;
  }                                                // "" unless the stream broke or the job failed to start
  size_t committed() const { return committed_; }  // units committed by this recorder
  size_t skipped() const { return skipped_; }      // units the store already held
  const std::vector<std::string>& errors() const { return errors_; }  // end.errors
  const std::vector<std::string>& warnings() const { return warnings_; }
  ProgressSnapshot progress() const { return estimate_.snapshot(); }

 private:
  void event(const nlohmann::json& e);
  void begin(const nlohmann::json& provenance, const nlohmann::json& cases);
  void stop(const std::string& why);

  store::Store& store_;
  nlohmann::json lab_;
  store::RunId resume_run_ = 0, run_id_ = 0;
  store::CompletedUnits done_;
  std::string kind_;
  nlohmann::json plan_;
  int64_t next_seq_ = 0;
  size_t tests_seen_ = 0, committed_ = 0, skipped_ = 0;
  size_t units_ = 0, failed_units_ = 0;  // tests or turns the device reported, and those that failed
  bool ended_ = false, stopped_ = false;
  int exit_code_ = 0;
  std::string failed_;
  std::vector<std::string> errors_, warnings_;
  ProgressEstimator estimate_;
};

}  // namespace edgeprobe::lab
