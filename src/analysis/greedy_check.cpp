#include "analysis/greedy_check.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"

namespace edgeprobe::analysis {

std::vector<result::GreedyCheck> reference_continuations(const result::BenchReport& reference,
                                                         const std::string& source) {
  std::vector<result::GreedyCheck> out;
  for (const auto& r : reference.results)
    if (r.verify && !r.verify->tokens.empty()) out.push_back(*r.verify);
  if (out.empty())
    throw_bad_input(
        "--verify-against {}: none of its tests has a greedy continuation; run the reference with --verify",
        source);
  return out;
}

std::string compare_continuation(result::GreedyCheck& check,
                                 const std::vector<result::GreedyCheck>& reference,
                                 const std::string& source) {
  const auto same_prompt =
      std::find_if(reference.begin(), reference.end(),
                   [&](const result::GreedyCheck& r) { return r.prompt == check.prompt; });
  if (same_prompt == reference.end())
    return fmt::format("not compared with {}: its prompt has other token ids (another tokenizer or prompt)",
                       source);
  const auto& ref = same_prompt->tokens;
  check.reference = source;
  check.compared = static_cast<int>(std::min(ref.size(), check.tokens.size()));
  check.first_divergence = -1;
  for (int i = 0; i < check.compared; ++i)
    if (ref[i] != check.tokens[i]) {
      check.first_divergence = i;
      break;
    }
  // A continuation that ended (end of generation) holds that token last, so one that ended
  // where the other went on differs at that position like any other token.
  return {};
}

std::string continuation_line(const result::GreedyCheck& check) {
  if (check.reference.empty())
    return fmt::format("greedy continuation recorded ({} tokens), not compared", check.tokens.size());
  if (check.first_divergence < 0)
    return fmt::format("{}/{} greedy tokens as the reference ({})", check.compared, check.compared,
                       check.reference);
  return fmt::format("diverges from the reference ({}) at token {} of {}", check.reference,
                     check.first_divergence + 1, check.compared);
}

}  // namespace edgeprobe::analysis
