#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "core/progress.h"

namespace edgeprobe::app {

// Reads the JSON Lines stream of `edgeprobe run --plan` (docs/wire-format.md) one line at
// a time: StreamSink's counterpart, and the one reader its consumers share. It refuses a
// line that is not JSON, nests too deep or breaks the seq order; keeps what every reader
// needs (progress, warnings, the result's report, how the stream ended); and hands each
// event on to event(): the lab stores units from there (lab::StreamRecorder), doctor
// keeps its bench child's report (app/doctor_child.h).
class StreamReader {
 public:
  // `where` says where the job ran, in the message of an error event ("on the device").
  explicit StreamReader(std::string where) : where_(std::move(where)) {}
  virtual ~StreamReader() = default;
  StreamReader(const StreamReader&) = delete;
  StreamReader& operator=(const StreamReader&) = delete;

  // One line of the stream. A line that is not JSON, a gap in `seq`, an `error` event or
  // an event event() refuses ends the reading with that problem (failed() says why);
  // later lines are ignored.
  void line(std::string_view text);
  // The stream stopped without `end` (connection lost, process killed).
  void finish_cut(const std::string& why);

  bool ended() const { return ended_; }         // `end` arrived
  int exit_code() const { return exit_code_; }  // end.exit_code, or 2/3 after `error`
  // "" unless the stream broke or the job failed to start.
  const std::string& failed() const { return failed_; }
  // The error event's message as one line: the job's own words; "" without one.
  const std::string& error_message() const { return error_message_; }
  const std::vector<std::string>& errors() const { return errors_; }  // end.errors
  const std::vector<std::string>& warnings() const { return warnings_; }
  const std::string& kind() const { return kind_; }  // the start event's
  const nlohmann::json& report() const { return report_; }  // the result event's; null before it
  ProgressSnapshot progress() const { return estimate_.snapshot(); }

 protected:
  // Each event, after the reader's own bookkeeping; what it throws stops the reading.
  virtual void event(const nlohmann::json&) {}
  // The reading stopped for `why` (which becomes failed(); a reader may add to it).
  virtual void on_stop(std::string&) {}

 private:
  void stop(std::string why);

  std::string where_;
  int64_t next_seq_ = 0;
  bool ended_ = false, stopped_ = false;
  int exit_code_ = 0;
  std::string failed_, error_message_, kind_;
  std::vector<std::string> errors_, warnings_;
  nlohmann::json report_;
  ProgressEstimator estimate_;
};

}  // namespace edgeprobe::app
