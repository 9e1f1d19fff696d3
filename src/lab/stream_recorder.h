#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "app/stream_reader.h"
#include "store/store.h"

namespace edgeprobe::lab {

// Reads a device's JSON Lines stream (app::StreamReader) and commits each unit to the
// central store the moment its line arrives: the run begins at the `provenance` event
// with the device's own identity, every repetition and turn is its own transaction, and
// `end` finishes the run. A resumed device's run continues the stored one; units it
// already holds are never recorded twice.
class StreamRecorder : public app::StreamReader {
 public:
  // `lab` goes into provenance.extra.lab (lab run, device name, labels, transport).
  // resume_run: a stored run of this device to continue (0: begin a new one).
  // A line that is not JSON, a gap in `seq` or a unit the store refuses ends the recording
  // with that problem (failed() says why); finish_cut marks the run failed, keeping every
  // unit committed so far.
  StreamRecorder(store::Store& store, nlohmann::json lab, store::RunId resume_run = 0);

  store::RunId run_id() const { return run_id_; }
  size_t committed() const { return committed_; }  // units committed by this recorder
  size_t skipped() const { return skipped_; }      // units the store already held

 protected:
  void event(const nlohmann::json& e) override;
  void on_stop(std::string& why) override;

 private:
  void begin(const nlohmann::json& provenance, const nlohmann::json& cases);

  store::Store& store_;
  nlohmann::json lab_;
  store::RunId resume_run_ = 0, run_id_ = 0;
  store::CompletedUnits done_;
  nlohmann::json plan_;
  size_t tests_seen_ = 0, committed_ = 0, skipped_ = 0;
  size_t units_ = 0, failed_units_ = 0;  // tests or turns the device reported, and those that failed
};

}  // namespace edgeprobe::lab
