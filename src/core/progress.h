#pragma once
#include <cstddef>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>

namespace edgeprobe {

// Seconds on a monotonic clock; tests hand in a fake one.
using SecondsClock = std::function<double()>;
double steady_seconds();

// What a long job has done so far, as the display shows it.
struct ProgressSnapshot {
  size_t done = 0;
  size_t total = 0;           // 0: no units reported yet
  std::string unit;           // plural noun: "repetitions", "turns", "children"
  std::string step;           // the job's latest words: "test 2/4 pp512: repetition 3/5"
  double elapsed_s = 0;       // since the estimator was made (the job's start)
  std::optional<double> eta_s;  // time left; unset until a unit was measured
  bool eta_is_guess = true;   // fewer than kSettledUnits measured so far
};

// Elapsed time and time left from the units done so far. The rate counts only the units
// done since the first report, so a resumed run's stored units (done in an earlier run)
// and the setup before the first unit (probing, hashing) do not skew it.
class ProgressEstimator {
 public:
  static constexpr size_t kSettledUnits = 3;
  explicit ProgressEstimator(SecondsClock clock = steady_seconds);
  void units(size_t done, size_t total, const std::string& unit);
  void step(const std::string& text) { step_ = text; }
  ProgressSnapshot snapshot() const;
  double now_s() const { return clock_(); }

 private:
  SecondsClock clock_;
  double start_s_;
  bool started_ = false;      // units were reported at least once
  double first_s_ = 0;        // when, and how many were done then
  size_t first_done_ = 0;
  double last_unit_s_ = 0;    // when `done` last grew
  size_t done_ = 0, total_ = 0;
  std::string unit_, step_;
};

// "7s", "3m05s", "2h14m".
std::string format_duration(double seconds);
// The bar line for a terminal, at most `width` columns, without control characters (the
// display adds the carriage return and erase): "[#####-----] 12/40 repetitions 42s ...".
std::string render_bar(const ProgressSnapshot& s, size_t width);
// One plain line for a pipe or log file, without control characters or newline.
std::string render_plain(const ProgressSnapshot& s);

enum class ProgressMode { kOff, kTerminal, kPlain };
// kOff when disabled, kTerminal when fd is a terminal, kPlain otherwise.
ProgressMode progress_mode(bool enabled, int fd);
// The terminal's width in columns; 80 when it cannot be told.
size_t terminal_columns(int fd);

struct ProgressOptions {
  ProgressMode mode = ProgressMode::kPlain;
  std::function<size_t()> columns = [] { return size_t{80}; };
  double min_redraw_s = 0.2;   // a terminal bar is redrawn at most 5 times a second
  double plain_every_s = 5.0;  // a plain line at most this often (and at the end)
};

// The one progress display of every long job: a bar rewritten in place on a terminal,
// plain lines at a modest rate otherwise, nothing when off. It draws only when the job
// calls it (between units, never from a thread of its own), so it cannot land inside a
// timed region.
class ProgressDisplay {
 public:
  ProgressDisplay(std::ostream& out, ProgressOptions options, SecondsClock clock = steady_seconds);
  ~ProgressDisplay();
  void step(const std::string& text);
  // Printed as its own line at once, also when the display is off.
  void warning(const std::string& text);
  void units(size_t done, size_t total, const std::string& unit);
  // Erases the bar so other output can follow (it comes back at the next draw).
  void clear();
  ProgressSnapshot snapshot() const { return estimator_.snapshot(); }
  ProgressMode mode() const { return options_.mode; }

 private:
  void draw(bool force);
  std::ostream& out_;
  ProgressOptions options_;
  ProgressEstimator estimator_;
  bool drawn_ = false;         // a bar is on the screen now
  double last_draw_s_ = 0;
  bool units_said_ = false;    // a plain line with units was written
  bool said_last_ = false;     // the line for done == total was written
};

}  // namespace edgeprobe
