#pragma once
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fidelity/score.h"

// The accuracy/efficiency frontier of one model's quantizations (MELT's Q3-against-Q4
// chart): for each quantization its size, its speed against the reference file's measured
// in the same rounds, and its fidelity against the reference; the points another beats on
// both axes are marked dominated. Plain data and arithmetic: the job measures, this judges.
namespace edgeprobe::fidelity {

struct FrontierPoint {
  std::string quant;  // "q4_k_m"; the reference's own row says "reference"
  std::string path;
  std::string sha256;
  uint64_t size_bytes = 0;
  int64_t peak_rss_bytes = -1;  // the bench process's peak while this quantization ran; -1 unknown
  // Per round, this quantization's speed over the reference file's in the same round
  // (the machine's speed swings between rounds; a ratio within one round does not).
  std::vector<double> prefill_ratio, decode_ratio;
  double prefill_tokens_per_s = 0, decode_tokens_per_s = 0;  // medians over the rounds
  Summary fidelity;  // against the reference (the reference's own row: empty)
  bool is_reference = false;
  // Set by mark_dominated: the quantization that beats this one, and how; `unresolved`
  // when it is closer but the rounds did not show whether it is as fast.
  std::string dominated_by, dominated_why;
  bool unresolved = false;
};

struct Frontier {
  std::string base;  // the model as the user named it
  nlohmann::json text;
  int n_ctx = 0, n_chunks = 0, n_threads = 0;
  int rounds = 0, n_prompt = 0, n_gen = 0;
  std::vector<FrontierPoint> points;  // the reference first, then as asked
  double seconds = 0;
};

// The median of per-round ratios a/b over the rounds both have (0 when none).
double median_paired_ratio(const std::vector<double>& a, const std::vector<double>& b);

// How two points' decode speeds compare over the rounds both ran, by a sign test (the
// rounds' speeds swing; which of the two was faster within a round does not): kFaster when
// a was faster in so many rounds that an even chance would give that few times in 20
// (one-sided p <= 0.05), kSlower alike, else kUnresolved (equal speeds, or too few rounds:
// 5 rounds are the fewest that can resolve).
enum class SpeedOrder { kFaster, kSlower, kUnresolved };
SpeedOrder compare_speed(const std::vector<double>& a_ratio, const std::vector<double>& b_ratio);

// A point is dominated when another is closer to the reference, by more than twice the two
// KLDs' combined standard error, and decodes faster (compare_speed). Closer with the speed
// unresolved marks it unresolved, naming the closer one: the rounds could not tell. The
// reference itself is not a candidate (it is the yardstick: KLD 0 by definition). Size is
// not an axis of the judgement (a dominated point may still be the one that fits); the
// report prints it beside.
void mark_dominated(std::vector<FrontierPoint>& points);

nlohmann::json to_json(const Frontier& frontier);
void write_frontier(const Frontier& frontier, const std::string& format, std::ostream& out);

}  // namespace edgeprobe::fidelity
