#pragma once
// --verify-against: a run's greedy continuations against a reference run's, token by
// token. The same file on another device, backend or CPU variant should continue the
// fixed prompt identically for a good while; one that diverges at once computes something
// else (docs/fidelity.md, "Verified runs").
#include <string>
#include <vector>

#include "result/result.h"

namespace edgeprobe::analysis {

// The reference's continuations a run may be compared with: every test of `reference`
// that has one. Throws kBadInput naming `source` when it has none (run it with --verify).
std::vector<result::GreedyCheck> reference_continuations(const result::BenchReport& reference,
                                                         const std::string& source);

// Compares `check` with the first reference continuation of the same prompt (token ids:
// the same tokenizer): sets reference, compared and first_divergence. A reference of
// another prompt or tokenizer leaves `check` uncompared and returns why; "" when compared.
std::string compare_continuation(result::GreedyCheck& check,
                                 const std::vector<result::GreedyCheck>& reference,
                                 const std::string& source);

// One line for a report: "32/32 greedy tokens as the reference (run 3)", "diverges from
// the reference (run 3) at token 5 of 32", or "recorded (32 tokens), not compared".
std::string continuation_line(const result::GreedyCheck& check);

}  // namespace edgeprobe::analysis
