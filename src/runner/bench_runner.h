#pragma once
#include <exception>
#include <functional>
#include <optional>
#include <vector>

#include "core/clock.h"
#include "core/events.h"
#include "core/stop_token.h"
#include "engine/engine.h"
#include "result/result.h"
#include "runner/load_runner.h"
#include "runner/speculative.h"

namespace edgeprobe::runner {

struct RunnerOptions {
  int repetitions = 5;
  double delay_s = 0;     // sleep before each test, to let the device cool
  bool warmup = true;     // one untimed full-length run of each test first
  uint64_t seed = 42;     // prompt tokens are drawn from this
  // "" = the token level (prefill and decode steps timed apart); "completions" or "chat":
  // every repetition is one completion request (runner/request_path.h), the only path of
  // an engine without the token level (an HTTP endpoint).
  std::string api;
  // After a test's repetitions, load on it (--concurrency, --request-rate): its summary
  // per level goes to TestResult::serving.
  LoadOptions load;
  // --verify: after a test's repetitions, the greedy continuation of kVerifyPrompt for this
  // many tokens (result::GreedyCheck); 0 = off. The token level only.
  int verify_tokens = 0;
  // --draft: after a test's repetitions (and --verify), pairs of plain and speculative
  // decoding of kSpecPrompts for the test's n_gen tokens (result::Speculative). The draft
  // loads once per target model. The token level only.
  SpecOptions spec;
};

// The prompt --verify continues: public-domain text (Genesis 1:1-3, King James Version)
// that every tokenizer reads, the same on every device so continuations compare.
inline constexpr const char* kVerifyPrompt =
    "In the beginning God created the heaven and the earth. And the earth was without form, and void; and "
    "darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters. And "
    "God said,";
inline constexpr int kVerifyTokens = 32;
// The prompts --draft continues, pair r the r-th (cyclically): kVerifyPrompt and three
// more public-domain passages (KJV: Psalm 23:1-3, John 1:1-4, Ecclesiastes 1:2-4), so the
// acceptance is measured on more than one text.
inline constexpr const char* kSpecPrompts[] = {
    kVerifyPrompt,
    "The LORD is my shepherd; I shall not want. He maketh me to lie down in green pastures: he leadeth me "
    "beside "
    "the still waters. He restoreth my soul: he leadeth me in the paths of righteousness for his name's "
    "sake.",
    "In the beginning was the Word, and the Word was with God, and the Word was God. The same was in the "
    "beginning "
    "with God. All things were made by him; and without him was not any thing made that was made. In him was "
    "life;",
    "Vanity of vanities, saith the Preacher, vanity of vanities; all is vanity. What profit hath a man of "
    "all his "
    "labour which he taketh under the sun? One generation passeth away, and another generation cometh:"};

// Called as the runner goes; the CLI prints progress and streams results from these,
// and telemetry summarises a test from its events.
struct RunnerCallbacks {
  std::function<void(const std::string&)> progress;
  std::function<void(const PhaseEvent&)> event;
  // Called after each timed repetition, before the next one starts, so it can be stored
  // at once (a kill loses at most the repetition in flight).
  std::function<void(size_t case_index, const workload::TestCase&, result::Repetition&)> repetition;
  // Repetitions an interrupted run already stored: returns it to reuse instead of running
  // it again (--resume).
  std::function<std::optional<result::Repetition>(size_t case_index, int repetition)> stored_repetition;
  // Called when a test is complete (or failed), before it is handed on.
  std::function<void(result::TestResult&, const std::vector<PhaseEvent>&)> enrich;
  std::function<void(const result::TestResult&)> result;
  // Asked to stop, the sweep ends after the repetition (or load level) in flight; the
  // tests not reached become "interrupted" rows.
  StopToken stop;
};

// Runs every test case in order on `engine`. A model loads once per group of consecutive
// cases that share it (expand() orders them so). A failure inside a case (a model that
// does not load, a decode that fails, a setting the engine cannot honour) becomes an
// error row and the sweep goes on. `model_index(path)` maps a case to its
// Provenance::models entry.
std::vector<result::TestResult> run_test_cases(engine::Engine& engine, const std::vector<workload::TestCase>& cases,
                                          const RunnerOptions& options, const RunClock& clock,
                                          const std::function<int(const std::string&)>& model_index,
                                          const RunnerCallbacks& callbacks);

// An exception as a result's error: Error keeps its kind, anything else is a bug.
result::ErrorInfo to_error_info(const std::exception& e);

}  // namespace edgeprobe::runner
