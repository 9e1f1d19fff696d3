// The progress display: the estimate on a fake clock, the bar and plain renderers, and
// how often each mode draws.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <unistd.h>

#include "core/progress.h"
#include "support/run_process.h"

using namespace edgeprobe;

namespace {

struct FakeClock {
  double now = 100.0;
  SecondsClock fn() {
    return [this] { return now; };
  }
};

bool has_control_characters(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && c != '\n') || u == 0x7f;
  });
}

size_t code_points(const std::string& text) {
  return static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

}  // namespace

TEST(ProgressEstimator, NoEstimateBeforeTheFirstUnitThenAGuessThenSettled) {
  FakeClock clock;
  ProgressEstimator e(clock.fn());
  clock.now += 5;  // setup: probing, hashing
  EXPECT_FALSE(e.snapshot().eta_s);
  EXPECT_EQ(e.snapshot().total, 0u);
  e.units(0, 10, "repetitions");
  EXPECT_FALSE(e.snapshot().eta_s);
  clock.now += 2;
  e.units(1, 10, "repetitions");
  auto s = e.snapshot();
  ASSERT_TRUE(s.eta_s);
  EXPECT_DOUBLE_EQ(*s.eta_s, 18.0);  // 2 s a unit, 9 left; the setup is not a unit
  EXPECT_TRUE(s.eta_is_guess);
  EXPECT_DOUBLE_EQ(s.elapsed_s, 7.0);
  clock.now += 2;
  e.units(2, 10, "repetitions");
  clock.now += 4;
  e.units(3, 10, "repetitions");
  s = e.snapshot();
  EXPECT_DOUBLE_EQ(*s.eta_s, 7 * (8.0 / 3));
  EXPECT_FALSE(s.eta_is_guess);
  // The unit in flight has already used some of the time left.
  clock.now += 1;
  EXPECT_DOUBLE_EQ(*e.snapshot().eta_s, 7 * (8.0 / 3) - 1);
  clock.now += 100;  // a slow unit: never a negative estimate
  EXPECT_DOUBLE_EQ(*e.snapshot().eta_s, 0.0);
}

TEST(ProgressEstimator, AResumedRunsStoredUnitsDoNotCountInTheRate) {
  FakeClock clock;
  ProgressEstimator e(clock.fn());
  clock.now += 10;
  e.units(6, 10, "turns");  // done in an earlier run
  clock.now += 3;
  e.units(7, 10, "turns");
  EXPECT_DOUBLE_EQ(*e.snapshot().eta_s, 9.0);
  EXPECT_EQ(e.snapshot().done, 7u);
}

TEST(ProgressEstimator, AllDoneLeavesNothingAndIsNoGuess) {
  FakeClock clock;
  ProgressEstimator e(clock.fn());
  e.units(0, 2, "children");
  clock.now += 1;
  e.units(2, 2, "children");
  const auto s = e.snapshot();
  EXPECT_DOUBLE_EQ(*s.eta_s, 0.0);
  EXPECT_FALSE(s.eta_is_guess);
  EXPECT_EQ(s.unit, "children");
}

TEST(ProgressFormat, Durations) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(-3), "0s");
  EXPECT_EQ(format_duration(59.4), "59s");
  EXPECT_EQ(format_duration(65), "1m05s");
  EXPECT_EQ(format_duration(3725), "1h02m");
}

TEST(ProgressRender, BarShowsDoneTotalElapsedAndTimeLeftWithinTheWidth) {
  ProgressSnapshot s{3, 10, "repetitions", "test 1/2 pp512: repetition 4/5", 42, 98.0, false};
  const std::string wide = render_bar(s, 120);
  EXPECT_EQ(wide.rfind("[######--------------] 3/10 repetitions  42s  1m38s left  test 1/2", 0), 0u) << wide;
  s.eta_is_guess = true;
  EXPECT_NE(render_bar(s, 120).find("~1m38s left (a guess)"), std::string::npos);
  s.eta_s.reset();
  EXPECT_NE(render_bar(s, 120).find("estimating time left"), std::string::npos);
  s.step = std::string(300, 'x') + " 45.0 \xC2\xB0" "C";
  for (size_t width : {1u, 5u, 20u, 39u, 40u, 69u, 70u, 79u, 200u}) {
    const std::string line = render_bar(s, width);
    EXPECT_LE(code_points(line), width) << line;
    EXPECT_FALSE(has_control_characters(line));
  }
  EXPECT_EQ(render_bar(s, 50).rfind("[###-------] 3/10", 0), 0u);  // a narrower bar
  EXPECT_EQ(render_bar(s, 30).rfind("3/10", 0), 0u);               // no bar at all
  // A cut never splits a code point: "°" is two bytes.
  s.step = "\xC2\xB0\xC2\xB0\xC2\xB0\xC2\xB0";
  s.total = 0;
  const std::string cut = render_bar(s, 8);
  EXPECT_EQ(cut, "42s  ...");
}

TEST(ProgressRender, PlainLinesCarryTheSameFactsAndNoControlCharacters) {
  ProgressSnapshot s{3, 10, "turns", "conversation \x1b[31mred\r\n", 42, 5.0, true};
  const std::string line = render_plain(s);
  EXPECT_EQ(line, "edgeprobe: 3/10 turns, 42s elapsed, ~5s left (a guess): conversation ?[31mred??");
  EXPECT_FALSE(has_control_characters(line));
  s.total = 0;
  s.step = "measuring the device's ceilings";
  EXPECT_EQ(render_plain(s), "edgeprobe: measuring the device's ceilings");
}

TEST(ProgressDisplay, TerminalRedrawsAtMostFiveTimesASecondAndAlwaysShowsTheEnd) {
  FakeClock clock;
  std::ostringstream out;
  ProgressOptions o;
  o.mode = ProgressMode::kTerminal;
  o.columns = [] { return size_t{80}; };
  ProgressDisplay d(out, o, clock.fn());
  d.units(0, 100, "repetitions");
  for (size_t i = 1; i <= 100; ++i) {
    clock.now += 0.01;  // 100 units in one second
    d.step("repetition " + std::to_string(i));
    d.units(i, 100, "repetitions");
  }
  const std::string text = out.str();
  const size_t draws = test_support::count_of(text, "\r\x1b[K");
  EXPECT_GE(draws, 5u);
  EXPECT_LE(draws, 8u);  // the first, about 5 in the second, and the last
  EXPECT_NE(text.find("[####################] 100/100 repetitions  1s  0s left  repetition 100"), std::string::npos)
      << text;
  EXPECT_EQ(text.find('\n'), std::string::npos);  // one line, rewritten
  d.clear();
  EXPECT_EQ(out.str().substr(out.str().size() - 4), "\r\x1b[K");
  // Once erased (a result row was printed), the next step draws at once.
  clock.now += 0.01;
  d.step("cooling down");
  EXPECT_NE(out.str().find("cooling down"), std::string::npos);
}

TEST(ProgressDisplay, TerminalDrawsEverySetupStep) {
  FakeClock clock;
  std::ostringstream out;
  ProgressOptions o;
  o.mode = ProgressMode::kTerminal;
  ProgressDisplay d(out, o, clock.fn());
  d.step("hashing the model");
  d.step("measuring the device's ceilings");  // at the same instant: still drawn
  EXPECT_NE(out.str().find("\r\x1b[K0s  measuring the device's ceilings"), std::string::npos) << out.str();
}

TEST(ProgressDisplay, PlainLinesComeAtAModestRateWithoutControlCharacters) {
  FakeClock clock;
  std::ostringstream out;
  ProgressOptions o;
  o.mode = ProgressMode::kPlain;
  ProgressDisplay d(out, o, clock.fn());
  d.step("loading the model");
  d.step("measuring the device's ceilings");
  d.units(0, 100, "repetitions");
  for (size_t i = 1; i <= 100; ++i) {
    clock.now += 0.2;  // 20 s in all
    d.step("repetition " + std::to_string(i));
    d.units(i, 100, "repetitions");
  }
  d.warning("a thermal zone went away");
  d.clear();
  const std::string text = out.str();
  EXPECT_FALSE(has_control_characters(text)) << text;
  const size_t lines = test_support::count_of(text, "\n");
  // 2 setup lines, the start, one every 5 s over 20 s, the end, the warning.
  EXPECT_GE(lines, 7u) << text;
  EXPECT_LE(lines, 9u) << text;
  EXPECT_NE(text.find("edgeprobe: loading the model\n"), std::string::npos);
  EXPECT_NE(text.find("edgeprobe: 0/100 repetitions, 0s elapsed, estimating time left"), std::string::npos) << text;
  EXPECT_NE(text.find("edgeprobe: 100/100 repetitions, 20s elapsed, 0s left: repetition 100\n"), std::string::npos);
  EXPECT_NE(text.find("edgeprobe: warning: a thermal zone went away\n"), std::string::npos);
}

TEST(ProgressDisplay, OffWritesNothing) {
  FakeClock clock;
  std::ostringstream out;
  ProgressOptions o;
  o.mode = ProgressMode::kOff;
  ProgressDisplay d(out, o, clock.fn());
  d.step("a step");
  d.units(1, 2, "turns");
  d.clear();
  EXPECT_EQ(out.str(), "");
  EXPECT_EQ(d.snapshot().done, 1u);  // the summary still knows how far it got
}

TEST(ProgressDisplay, AWarningIsPrintedEvenWithTheDisplayOff) {
  FakeClock clock;
  std::ostringstream out;
  ProgressOptions o;
  o.mode = ProgressMode::kOff;
  ProgressDisplay d(out, o, clock.fn());
  d.warning("timings under emulation\x1b[2J are not performance");
  EXPECT_EQ(out.str().rfind("edgeprobe: warning: timings under emulation", 0), 0u) << out.str();
  EXPECT_FALSE(has_control_characters(out.str())) << out.str();
}

TEST(ProgressDisplay, ModeFollowsTheFlagAndTheTerminal) {
  EXPECT_EQ(progress_mode(false, 2), ProgressMode::kOff);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  EXPECT_EQ(progress_mode(true, fds[1]), ProgressMode::kPlain);
  EXPECT_EQ(terminal_columns(fds[1]), 80u);
  close(fds[0]);
  close(fds[1]);
}
