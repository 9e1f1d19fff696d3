#include "core/progress.h"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ostream>

namespace edgeprobe {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

ProgressEstimator::ProgressEstimator(SecondsClock clock) : clock_(std::move(clock)), start_s_(clock_()) {}

void ProgressEstimator::units(size_t done, size_t total, const std::string& unit) {
  const double now = clock_();
  if (!started_ || done < first_done_) {
    started_ = true;
    first_s_ = last_unit_s_ = now;
    first_done_ = done;
  } else if (done > done_) {
    last_unit_s_ = now;
  }
  done_ = done;
  total_ = std::max(total, done);
  if (!unit.empty()) unit_ = unit;
}

ProgressSnapshot ProgressEstimator::snapshot() const {
  const double now = clock_();
  ProgressSnapshot s{done_, total_, unit_, step_, now - start_s_, std::nullopt, true};
  if (!started_) return s;
  if (done_ >= total_) {
    s.eta_s = 0;
    s.eta_is_guess = false;
    return s;
  }
  const size_t measured = done_ - first_done_;
  if (measured == 0) return s;
  const double per_unit = (last_unit_s_ - first_s_) / static_cast<double>(measured);
  // The unit in flight has already run for a while.
  s.eta_s = std::max(0.0, per_unit * static_cast<double>(total_ - done_) - (now - last_unit_s_));
  s.eta_is_guess = measured < kSettledUnits;
  return s;
}

std::string format_duration(double seconds) {
  const auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

namespace {

// A step's text comes from model paths and conversation ids: no byte of it may move the
// cursor or ring the bell.
std::string printable(const std::string& text) {
  std::string out = text;
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return out;
}

// Columns taken by UTF-8 text: one per code point (continuation bytes take none).
size_t columns_of(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(),
                                           [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// At most `width` columns, never cutting a code point in two; "..." marks a cut.
std::string fit(const std::string& text, size_t width) {
  if (columns_of(text) <= width) return text;
  if (width < 3) return std::string(width, '.');
  size_t cols = 0, i = 0;
  for (; i < text.size(); ++i) {
    const bool starts = (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
    if (starts && cols == width - 3) break;
    if (starts) ++cols;
  }
  return text.substr(0, i) + "...";
}

std::string time_left(const ProgressSnapshot& s) {
  if (!s.eta_s) return "estimating time left";
  if (!s.eta_is_guess) return format_duration(*s.eta_s) + " left";
  return "~" + format_duration(*s.eta_s) + " left (a guess)";
}

}  // namespace

std::string render_bar(const ProgressSnapshot& s, size_t width) {
  const std::string step = printable(s.step);
  if (s.total == 0) return fit(format_duration(s.elapsed_s) + "  " + step, width);
  std::string line;
  const size_t bar = width >= 70 ? 20 : width >= 40 ? 10 : 0;
  if (bar > 0) {
    const auto filled = std::min(bar, s.done * bar / s.total);
    line = "[" + std::string(filled, '#') + std::string(bar - filled, '-') + "] ";
  }
  line += fmt::format("{}/{} {}  {}  {}", s.done, s.total, s.unit, format_duration(s.elapsed_s), time_left(s));
  if (!step.empty()) line += "  " + step;
  return fit(line, width);
}

std::string render_plain(const ProgressSnapshot& s) {
  const std::string step = printable(s.step);
  if (s.total == 0) return "edgeprobe: " + step;
  std::string line = fmt::format("edgeprobe: {}/{} {}, {} elapsed, {}", s.done, s.total, s.unit,
                                 format_duration(s.elapsed_s), time_left(s));
  if (!step.empty()) line += ": " + step;
  return line;
}

ProgressMode progress_mode(bool enabled, int fd) {
  if (!enabled) return ProgressMode::kOff;
  return isatty(fd) ? ProgressMode::kTerminal : ProgressMode::kPlain;
}

size_t terminal_columns(int fd) {
  winsize ws{};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

ProgressDisplay::ProgressDisplay(std::ostream& out, ProgressOptions options, SecondsClock clock)
    : out_(out), options_(std::move(options)), estimator_(std::move(clock)) {}

ProgressDisplay::~ProgressDisplay() { clear(); }

void ProgressDisplay::step(const std::string& text) {
  estimator_.step(text);
  if (options_.mode == ProgressMode::kOff) return;
  draw(false);
}

void ProgressDisplay::warning(const std::string& text) {
  // A line of its own, whatever the rate and even with the display off (-q): a warning
  // says something about the figures, not about progress.
  clear();
  out_ << "edgeprobe: warning: " << printable(text) << "\n" << std::flush;
  if (options_.mode != ProgressMode::kOff) draw(true);
}

void ProgressDisplay::units(size_t done, size_t total, const std::string& unit) {
  estimator_.units(done, total, unit);
  draw(total > 0 && done >= total);
}

void ProgressDisplay::clear() {
  if (!drawn_) return;
  out_ << "\r\033[K" << std::flush;
  drawn_ = false;
}

void ProgressDisplay::draw(bool last) {
  if (options_.mode == ProgressMode::kOff) return;
  const double now = estimator_.now_s();
  const ProgressSnapshot s = estimator_.snapshot();
  if (options_.mode == ProgressMode::kTerminal) {
    // Drawn at once: the last unit (the finished bar is seen before the summary), setup
    // steps (few, and each may be followed by a long wait), and a bar erased for other
    // output. Otherwise at most once per min_redraw_s.
    const bool at_once = last || s.total == 0 || !drawn_;
    if (!at_once && now - last_draw_s_ < options_.min_redraw_s) return;
    out_ << "\r\033[K" << render_bar(s, std::max<size_t>(options_.columns(), 2) - 1) << std::flush;
    drawn_ = true;
  } else {
    // Setup steps (before any unit) are few and each is worth a line; then a line at
    // most every plain_every_s, and one at the end.
    if (last && said_last_) return;
    const bool setup = s.total == 0;
    if (!setup && !last && units_said_ && now - last_draw_s_ < options_.plain_every_s) return;
    out_ << render_plain(s) << "\n" << std::flush;
    units_said_ = !setup;
    said_last_ = last;
  }
  last_draw_s_ = now;
}

}  // namespace edgeprobe
